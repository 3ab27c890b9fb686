#include "zkdv/tensor/torch_build.h"

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <torch/csrc/api/include/torch/cuda.h>
#include <torch/csrc/api/include/torch/version.h>

namespace zkdv {

std::string libtorchVersion()
{
    return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH);
}

bool cudaAvailable() { return at::hasCUDA() && cudaDeviceCount() > 0; }

int cudaDeviceCount() { return at::hasCUDA() ? static_cast<int>(torch::cuda::device_count()) : 0; }

int defaultIntraOpThreads()
{
    // Read once, before any replay worker changes its own thread's setting.
    static const int threads = at::get_num_threads();
    return threads;
}

int currentIntraOpThreads() { return at::get_num_threads(); }

std::string cudaVersion()
{
    if (!at::hasCUDA())
        return "";
    const long version = at::detail::getCUDAHooks().versionCUDART();
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
}

}  // namespace zkdv
