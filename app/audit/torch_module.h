#pragma once
// The command that needs libtorch (demo) lives in a module, zkdv-audit-torch, that is
// loaded only when it runs (replay runs libtorch only in its worker processes): linking libtorch into the executable would cost every
// command its static initialisation, most of a second, even `--help`.

namespace zkdv::cli {

// True for the commands the module runs.
bool isTorchCommand(const char* command);

// Loads the module and runs `command` in it. Returns its exit code, or 2 after saying on
// stderr where the module was looked for and why it could not be loaded.
int runTorchCommand(const char* command, int argc, char** argv);

// True when this zkdv-audit was configured without libtorch (ZKDV_WITH_TORCH=OFF): it has
// no module and no replay worker.
bool builtWithoutTorch();
// Says on stderr that `command` needs libtorch, which this build does not have; returns 2.
int refuseWithoutTorch(const char* command);

}  // namespace zkdv::cli
