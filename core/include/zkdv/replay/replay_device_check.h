#pragma once
// Whether a replay can run on a named device, judged from what a replay worker's libtorch
// says it sees (its hello), so the caller need not load libtorch itself.

#include <string>

namespace zkdv {

// Throws Error (an input error) unless `device` is "cpu" or a "cuda:N" present among
// `cudaDevices` ("cuda" means "cuda:0"); returns the canonical name.
std::string checkReplayDevice(const std::string& device, int cudaDevices, const std::string& libtorch, const std::string& cuda);

}  // namespace zkdv
