#pragma once
// The subcommands of zkdv-audit. Each parses its own arguments from argv[2..] and returns
// the process exit code: 0 ok, 1 a check failed, 2 usage error or unreadable input.

namespace zkdv::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;
inline constexpr int kExitUsage = 2;

int runVerify(int argc, char** argv);
int runInfo(int argc, char** argv);
int runIngest(int argc, char** argv);
int runDemo(int argc, char** argv);
int runReplay(int argc, char** argv);
int runReport(int argc, char** argv);

}  // namespace zkdv::cli
