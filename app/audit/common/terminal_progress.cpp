#include "terminal_progress.h"

#include <unistd.h>

#include <cstdio>

namespace zkdv::cli {

TerminalProgress::TerminalProgress(bool enabled) : enabled_(enabled), terminal_(isatty(STDERR_FILENO) == 1) {}

TerminalProgress::~TerminalProgress() { finish(); }

void TerminalProgress::report(std::uint64_t done, std::uint64_t total, std::string_view phase)
{
    if (!enabled_ || total == 0)
        return;
    const int percent = static_cast<int>(done * 100 / total);
    if (terminal_) {
        auto now = std::chrono::steady_clock::now();
        if (done < total && now - lastPrint_ < std::chrono::milliseconds(100))
            return;
        lastPrint_ = now;
        std::fprintf(stderr, "\r%.*s %3d%%", static_cast<int>(phase.size()), phase.data(), percent);
        lineOpen_ = true;
        if (done >= total)
            finish();
        return;
    }
    // Logs and CI get one line per tenth of the work rather than a flood.
    if (phase != lastPhase_) {
        lastPhase_ = std::string(phase);
        lastDecile_ = -1;
    }
    const int decile = percent / 10;
    if (decile != lastDecile_) {
        lastDecile_ = decile;
        std::fprintf(stderr, "%.*s %d%%\n", static_cast<int>(phase.size()), phase.data(), percent);
    }
}

void TerminalProgress::finish()
{
    if (lineOpen_) {
        std::fputc('\n', stderr);
        lineOpen_ = false;
    }
}

}  // namespace zkdv::cli
