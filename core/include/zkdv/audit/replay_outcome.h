#pragma once
// What a replay found: per transaction, its verdict and every comparison it made.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "zkdv/audit/divergence.h"
#include "zkdv/audit/operator_trace.h"
#include "zkdv/audit/unverifiable_cause.h"
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
    // The cross-environment regime (docs/replay.md, "Regimes"): the norm of the difference in
    // units of u × S, as judged against the envelope; 0 for a floating-point value bit for
    // bit there; NaN when no envelope judged it (the same environment, an integer or counter,
    // a dtype/shape/NaN mismatch, or it passed its own bounds first).
    double envelopeRatio = std::numeric_limits<double>::quiet_NaN();
    // Cross-environment: a value a noise gradient reaches (docs/replay.md, "Noise gradients"),
    // whose mismatch no envelope decides; a calibration leaves it out.
    bool roundingNoise = false;

    std::string label() const;  // "fc.weight state/exp_avg", "loss"
};

// A compared tensor's two values, element by element, sent back only for the transactions a
// segment asks for (ReplaySegment::capture: the workstation's element comparison). Bytes
// are contiguous little-endian in `dtype`; `replayed` is empty when the replay's dtype or
// shape differs from the tape's (the comparison's note says how).
struct ComparedValues {
    std::string tensor;
    std::string slot;  // "delta"
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<std::uint8_t> recorded;
    std::vector<std::uint8_t> replayed;
};

// At most this many bytes of values travel back with one outcome (the protocol's frames are
// bounded); the tensors past it are left out and `valuesOmitted` says so.
constexpr std::uint64_t kMaxComparedValueBytes = 96u << 20;

struct TransactionOutcome {
    std::uint64_t index = 0;
    std::uint64_t segment = 0;
    bool selected = true;        // false: replayed only as the prefix of a selected one
    Verdict verdict = Verdict::Exact;
    // Whose failure an unverifiable transaction is (None for any other verdict).
    UnverifiableCause cause = UnverifiableCause::None;
    std::string detail;          // human-readable: what diverged, or why unverifiable
    std::uint64_t replayNs = 0;  // wall time of this transaction's replay
    std::vector<TensorComparison> comparisons;
    // Only when the segment asked for them (ReplaySegment::capture); never stored in a case.
    std::vector<ComparedValues> values;
    std::string valuesOmitted;  // why some tensors' values are not in `values` ("" when none is missing)
    // Only when the segment asked for them (ReplaySegment::trace): every operator of the step
    // with its outputs, in call order; never stored in a case.
    std::vector<TracedOperator> operators;
    std::string operatorsOmitted;  // what of the trace did not come back ("" when nothing)

    // The comparison with the largest ULP distance (nullptr when there is none).
    const TensorComparison* worst() const;
};

// How many failing transactions a replay's summary names.
constexpr std::size_t kFirstFailureCount = 20;
// Keeps in `failures` the kFirstFailureCount lowest-indexed outcomes that do not pass, in
// index order, whatever order they are offered in (workers finish segments in any order).
void keepFirstFailure(std::vector<TransactionOutcome>& failures, const TransactionOutcome& outcome);

}  // namespace zkdv
