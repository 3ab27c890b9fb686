#pragma once
// What a replay found: per transaction, its verdict and every comparison it made.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/audit/divergence.h"
#include "zkdv/audit/verdict.h"

namespace zkdv {

// One comparison of a replayed value with the tape's. `tensor` names a parameter, buffer
// or "loss"; `slot` says which value of it: "loss", "delta", "update/l2", "update/max_abs",
// "snapshot/param", "snapshot/buffer", "state/<slot>" (an optimizer-state slot at the next
// snapshot, e.g. "state/exp_avg"), "state-digest".
struct TensorComparison {
    std::string tensor;
    std::string slot;
    Verdict verdict = Verdict::Exact;
    DivergenceMetrics metrics;
    std::string note;  // why, when the metrics alone do not say (a missing slot, a digest)

    std::string label() const;  // "fc.weight state/exp_avg", "loss"
};

struct TransactionOutcome {
    std::uint64_t index = 0;
    std::uint64_t segment = 0;
    bool selected = true;        // false: replayed only as the prefix of a selected one
    Verdict verdict = Verdict::Exact;
    std::string detail;          // human-readable: what diverged, or why unverifiable
    std::uint64_t replayNs = 0;  // wall time of this transaction's replay
    std::vector<TensorComparison> comparisons;

    // The comparison with the largest ULP distance (nullptr when there is none).
    const TensorComparison* worst() const;
};

// How many failing transactions a replay's summary names.
constexpr std::size_t kFirstFailureCount = 20;
// Keeps in `failures` the kFirstFailureCount lowest-indexed outcomes that do not pass, in
// index order, whatever order they are offered in (workers finish segments in any order).
void keepFirstFailure(std::vector<TransactionOutcome>& failures, const TransactionOutcome& outcome);

}  // namespace zkdv
