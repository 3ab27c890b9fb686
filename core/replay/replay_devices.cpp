#include "zkdv/replay/replay_devices.h"

#include <cstdlib>

#include "zkdv/tensor/torch_build.h"
#include "zkdv/util/error.h"

namespace zkdv {

std::vector<std::string> replayDevices()
{
    std::vector<std::string> devices{"cpu"};
    const int count = cudaDeviceCount();
    for (int i = 0; i < count; ++i)
        devices.push_back("cuda:" + std::to_string(i));
    return devices;
}

std::string checkReplayDevice(const std::string& device)
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
    const int count = cudaDeviceCount();
    if (count == 0)
        throw Error("device " + device + " is not available: this libtorch (" + libtorchVersion() + ") " +
                    (cudaVersion().empty() ? "was built without CUDA" : "sees no CUDA device") + "; use --device cpu");
    const int n = std::atoi(index.c_str());
    if (n >= count)
        throw Error("device " + device + " is not present: " + std::to_string(count) + " CUDA device(s), cuda:0 to cuda:" +
                    std::to_string(count - 1));
    return "cuda:" + std::to_string(n);
}

}  // namespace zkdv
