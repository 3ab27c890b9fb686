#pragma once
// What the replays on this machine would run on, asked of a replay worker (its hello: the
// libtorch release, the CUDA devices it sees) so that a program that lists devices or prints
// versions, such as the workstation, need not link or load libtorch itself.

#include <string>
#include <vector>

#include "zkdv/replay/worker_protocol.h"

namespace zkdv {

// Starts the replay worker (`workerPath`, or the one found beside the executable), reads its
// hello and ends it. Throws Error naming the worker when it is missing or says nothing within
// `seconds`.
worker::WorkerHello probeReplayWorker(double seconds = 60, const std::string& workerPath = {});

// "cpu", then "cuda:0", "cuda:1", … for the CUDA devices the worker sees.
std::vector<std::string> replayDevicesOf(const worker::WorkerHello& hello);

}  // namespace zkdv
