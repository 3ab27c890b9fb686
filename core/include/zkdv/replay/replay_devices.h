#pragma once
// The devices a replay can run on here, and what this build of libtorch is.

#include <string>
#include <vector>

namespace zkdv {

// "cpu", then "cuda:0", "cuda:1", … for the CUDA devices libtorch sees.
std::vector<std::string> replayDevices();
// Throws Error (an input error) unless `device` is "cpu" or a present "cuda:N" ("cuda" means "cuda:0");
// returns the canonical name.
std::string checkReplayDevice(const std::string& device);
// The same check against a libtorch described by its CUDA device count and versions (a
// replay worker's hello), for callers that do not load libtorch themselves.
std::string checkReplayDevice(const std::string& device, int cudaDevices, const std::string& libtorch, const std::string& cuda);

}  // namespace zkdv
