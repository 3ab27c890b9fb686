#pragma once
// Progress on stderr: a self-updating line on a terminal, a few plain lines otherwise.

#include <chrono>
#include <string>

#include "zkdv/util/progress.h"

namespace zkdv::cli {

class TerminalProgress : public ProgressSink {
public:
    explicit TerminalProgress(bool enabled = true);
    ~TerminalProgress() override;
    void report(std::uint64_t done, std::uint64_t total, std::string_view phase) override;
    // Ends the current line, if one is open.
    void finish();

private:
    bool enabled_;
    bool terminal_;
    bool lineOpen_ = false;
    int lastDecile_ = -1;
    std::string lastPhase_;
    std::chrono::steady_clock::time_point lastPrint_{};
};

}  // namespace zkdv::cli
