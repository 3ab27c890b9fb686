#pragma once
// The exit codes every zkdv-audit command returns, whichever half of the tool runs it.

namespace zkdv::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCheckFailed = 1;  // a tape is damaged, a transaction diverged
inline constexpr int kExitUsage = 2;        // usage error, unreadable input, absent device or module

}  // namespace zkdv::cli
