#pragma once
#include "zkdv/util/error.h"
