#pragma once
// Whether one tape continues another (a run resumed from a checkpoint, spec section 3.4): the
// one check the recorder applies before it writes a resumed root and an audit case applies to
// the tapes it holds.

#include <cstdint>
#include <optional>
#include <string>

#include "zkdv/tape/root_record.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

// What a tape's end says, as a scan of it finds it.
struct TapeEnd {
    RootRecord root;
    Digest chainHead{};
    std::uint64_t size = 0;
    std::uint64_t transactions = 0;
    bool sealed = false;
    std::optional<Digest> finalStateDigest;  // the state after its last transaction
    // Its last transaction's scheduler epoch and GradScaler step, where its root declares them.
    std::optional<std::uint64_t> lastScheduleEpoch;
    std::optional<GradScalerStep> lastGradScalerStep;
};

// The first reason `next` (whose root names a tape it resumes) does not continue `previous`,
// or an empty string: `previous` is the tape `next` names (chain head and size), sealed, with
// its final state the one `next` starts from; the run's transactions count on from it; and
// `next` trains the same layout with the same optimizer, groups, static options, program,
// scheduler (going on from the epoch `previous` ended at) and GradScaler (going on from the
// state its rule gives after `previous`'s last step).
std::string resumeLinkProblem(const TapeEnd& previous, const RootRecord& next);

}  // namespace zkdv
