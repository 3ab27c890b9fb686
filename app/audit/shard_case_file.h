#pragma once
// The case file `zkdv-audit replay --shard I/N --into FILE` writes: a copy of the auditor's
// tape (zkdv/store/shard_case.h) built as FILE.partial and named FILE only once the shard's
// run is stored, so a shard killed on its node never leaves a FILE that looks finished.

#include <string>

namespace zkdv {
struct ReplayRequest;
}

namespace zkdv::cli {

class ShardCase {
public:
    // Reads `casePath` only. Picks the request's tape (the case's only one when it names
    // none) and sends the workers' log to FILE.replay.log. Throws UsageError when `into`
    // exists or the tape is ambiguous, Error when the copy cannot be written.
    ShardCase(const std::string& casePath, const std::string& into, ReplayRequest& request);
    ~ShardCase();
    ShardCase(const ShardCase&) = delete;
    ShardCase& operator=(const ShardCase&) = delete;

    const std::string& partialPath() const { return partial_; }
    // Names the finished case FILE; call with no connection open on it.
    void keep();

private:
    std::string into_;
    std::string partial_;
    bool kept_ = false;
};

}  // namespace zkdv::cli
