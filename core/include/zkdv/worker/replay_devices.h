#pragma once
// The devices a replay can run on here, and what this build of libtorch is.

#include <string>
#include <vector>

#include "zkdv/replay/replay_device_check.h"

namespace zkdv {

// "cpu", then "cuda:0", "cuda:1", … for the CUDA devices libtorch sees.
std::vector<std::string> replayDevices();
// checkReplayDevice (zkdv/replay/replay_device_check.h) against the libtorch of this process.
std::string checkReplayDevice(const std::string& device);

}  // namespace zkdv
