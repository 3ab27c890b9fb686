#include <cstdlib>

#include "zkdv/replay/replay_device_check.h"
#include "zkdv/util/error.h"

namespace zkdv {

std::string checkReplayDevice(const std::string& device, int cudaDevices, const std::string& libtorch, const std::string& cuda)
{
    if (device == "cpu")
        return device;
    std::string index;
    if (device == "cuda")
        index = "0";
    else if (device.rfind("cuda:", 0) == 0)
        index = device.substr(5);
    else
        throw Error("unknown device '" + device + "'; use cpu or cuda:N");
    if (index.empty() || index.size() > 3 || index.find_first_not_of("0123456789") != std::string::npos)
        throw Error("unknown device '" + device + "'; use cpu or cuda:N");
    if (cudaDevices == 0)
        throw Error("device " + device + " is not available: this libtorch (" + libtorch + ") " +
                    (cuda.empty() ? "was built without CUDA" : "sees no CUDA device") + "; use --device cpu");
    const int n = std::atoi(index.c_str());
    if (n >= cudaDevices)
        throw Error("device " + device + " is not present: " + std::to_string(cudaDevices) + " CUDA device(s), cuda:0 to cuda:" +
                    std::to_string(cudaDevices - 1));
    return "cuda:" + std::to_string(n);
}

}  // namespace zkdv
