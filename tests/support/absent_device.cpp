#include "absent_device.h"

#include "zkdv/worker/replay_devices.h"

namespace zkdv::test {

std::string absentCudaDevice()
{
    // replayDevices(): "cpu", then one "cuda:i" per device.
    return "cuda:" + std::to_string(replayDevices().size() - 1);
}

}  // namespace zkdv::test
