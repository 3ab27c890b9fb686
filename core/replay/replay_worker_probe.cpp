#include "zkdv/replay/replay_worker_probe.h"

#include "replay_worker_pool.h"
#include "worker_log.h"
#include "worker_process.h"

namespace zkdv {

worker::WorkerHello probeReplayWorker(double seconds, const std::string& workerPath)
{
    worker::WorkerProcess process(workerPath.empty() ? worker::findReplayWorker() : workerPath);
    worker::WorkerLog log;  // no path: what it prints is dropped with the log
    return worker::awaitHello(process, seconds, log);
    // ~WorkerProcess ends the worker, which waits for a job that never comes.
}

std::vector<std::string> replayDevicesOf(const worker::WorkerHello& hello)
{
    std::vector<std::string> devices{"cpu"};
    for (int i = 0; i < hello.cudaDevices; ++i)
        devices.push_back("cuda:" + std::to_string(i));
    return devices;
}

}  // namespace zkdv
