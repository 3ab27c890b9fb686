#include "window.h"
#include "panes/pane.h"
