#pragma once
// A folder that includes b, which includes it back: include_graph.cmake must refuse it.
#include "zkdv/b/b.h"
