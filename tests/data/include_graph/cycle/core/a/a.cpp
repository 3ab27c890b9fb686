#include "zkdv/a/a.h"
