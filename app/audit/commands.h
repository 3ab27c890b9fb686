#pragma once
// The subcommands the zkdv-audit executable runs itself. Each parses its own arguments from
// argv[2..] and returns the process exit code (exit_codes.h). demo needs libtorch and runs
// in a module loaded on demand (torch_module.h); replay runs libtorch only in its worker
// processes.

#include "exit_codes.h"

namespace zkdv::cli {

int runVerify(int argc, char** argv);
int runInfo(int argc, char** argv);
int runIngest(int argc, char** argv);
int runReport(int argc, char** argv);
int runReplay(int argc, char** argv);
int runCalibrate(int argc, char** argv);
int runPlan(int argc, char** argv);
int runMerge(int argc, char** argv);
int runSlurmScript(int argc, char** argv);
int runKubernetesJob(int argc, char** argv);
int runKeygen(int argc, char** argv);
int runSign(int argc, char** argv);
int runVerifyAttestation(int argc, char** argv);
int runDataset(int argc, char** argv);
int runMatchWeights(int argc, char** argv);
int runExplain(int argc, char** argv);

}  // namespace zkdv::cli
