#include "zkdv/b/b.h"
#include "zkdv/a/a.h"
