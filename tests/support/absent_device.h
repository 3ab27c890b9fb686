#pragma once
// A device name a replay must refuse on this machine, whatever GPUs it has.

#include <string>

namespace zkdv::test {

// "cuda:N" for N the number of CUDA devices libtorch sees here: one past the last present.
std::string absentCudaDevice();

}  // namespace zkdv::test
