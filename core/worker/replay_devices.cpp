#include "zkdv/worker/replay_devices.h"

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
    return checkReplayDevice(device, cudaDeviceCount(), libtorchVersion(), cudaVersion());
}

}  // namespace zkdv
