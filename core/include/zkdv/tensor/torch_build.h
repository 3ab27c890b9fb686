#pragma once
// What this build of libtorch is and can reach, without exposing torch types (the
// workstation's About box and the replay environment record include this header).

#include <string>

#include "zkdv/tape/numeric_environment.h"

namespace zkdv {

std::string libtorchVersion();   // "1.13.0"
bool cudaAvailable();            // libtorch built with CUDA and at least one device present
int cudaDeviceCount();
int defaultIntraOpThreads();     // libtorch's intra-op threads on this machine, as the process started
int currentIntraOpThreads();     // the calling thread's intra-op threads now
std::string cudaVersion();       // the CUDA runtime libtorch was built with, "" without CUDA
// This process's numerical environment, at the calling thread's intra-op threads (the root's
// `numerics`, and a replay's own).
NumericEnvironment numericEnvironment();

}  // namespace zkdv
