#pragma once
// The inside of a replay worker process (zkdv-replay-worker): the only place a trainer's
// program is loaded and run. docs/replay.md, "Containment", describes the protocol.

namespace zkdv {

// Exit statuses of the worker besides 0 (the parent closed the channel).
constexpr int kReplayWorkerExitProtocol = 3;  // the channel broke or a message did not parse
constexpr int kReplayWorkerExitMemory = 4;    // an allocation was refused under the memory limit

// Serves the parent on `channelFd` (a stream socket): reads the job, loads the program,
// replays each segment sent and answers with outcomes, until the parent closes the channel.
// Returns the exit status.
int runReplayWorker(int channelFd);

// Serves as a replay's fork server on `controlFd` (core/replay/fork_server.h) until the
// replay closes it: each worker it forks runs runReplayWorker on fd 3 and ends with what the
// program printed flushed. Returns the exit status.
int runReplayForkServer(int controlFd);

}  // namespace zkdv
