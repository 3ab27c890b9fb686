#pragma once
// How a tape of a case stands in its run: a run resumed from checkpoints spans tapes, each
// naming the one it continues (tape format 1.10, root member resumes), which the case checks
// against the tape it holds under that identity.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

class Database;

enum class TapeLinkStatus {
    StartsRun,        // the tape names no tape it continues
    Continues,        // it continues a tape of the case, and the link holds
    PreviousMissing,  // the tape it continues is not in the case
    Broken,           // the case holds that tape, but this one does not continue it
};
// "starts-run", "continues", "previous-missing", "broken" (docs/cli-json.md).
std::string_view tapeLinkStatusName(TapeLinkStatus status);

struct TapeLink {
    TapeLinkStatus status = TapeLinkStatus::StartsRun;
    std::int64_t previousTapeId = 0;  // Continues, Broken: the case's tape the root names
    std::string previousChainHead;    // the tape the root names (chain head, hex) and its size
    std::uint64_t previousSize = 0;
    std::string problem;              // Broken: the first reason the link fails
    // Other sealed tapes of the case that name the same tape to continue, when this one is
    // sealed too: the run forked (trained twice from one state; docs/case-schema.md).
    std::vector<std::int64_t> forkedWith;
    // One line in plain words ("continues tape 3 (the link holds)", …), naming a fork.
    std::string describe() const;
    // A link that lets the tape stand as part of its run: none named, or one that holds.
    bool holds() const { return status == TapeLinkStatus::StartsRun || status == TapeLinkStatus::Continues; }

private:
    std::string describeLink() const;
};

// The link of the case's tape `tapeId` (StartsRun for a tape the case does not hold).
TapeLink tapeLink(Database& db, std::int64_t tapeId);

// The tapes of the run `tapeId` belongs to, first to last, following the links that hold
// (a tape two tapes continue ends the walk forward: that run forked, which its links show).
std::vector<std::int64_t> runTapes(Database& db, std::int64_t tapeId);

}  // namespace zkdv
