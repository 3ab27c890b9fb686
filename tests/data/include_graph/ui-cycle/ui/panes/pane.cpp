#include "panes/pane.h"
#include "window.h"
#include "zkdv/recorder/recorder.h"
