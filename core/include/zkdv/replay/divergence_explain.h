#pragma once
// Where a divergence starts (zkdv-audit explain, the workstation's Explain Divergence): one
// transaction replayed twice, on two differently configured sides (another device, thread
// count or kernel settings), every operator of the step traced with its outputs, and the
// first operator whose outputs differ beyond rounding named (docs/replay.md, "Explain (where
// a divergence starts)"). The program runs only in replay workers; nothing is stored in the
// case. Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "zkdv/audit/operator_trace.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/audit/verdict.h"
#include "zkdv/replay/kernel_profile.h"
#include "zkdv/replay/replay_limits.h"
#include "zkdv/util/error.h"
#include "zkdv/util/progress.h"

namespace zkdv {

class CaseStore;

// A side that does not parse; the message names the side and what is wrong with it.
class ExplainSideError : public Error {
public:
    using Error::Error;
};

// How one side replays. Grammar (docs/replay.md):
//   SIDE     := DEVICE ( "@" MODIFIER )*
//   DEVICE   := "cpu" | "cuda" | "cuda:" N
//   MODIFIER := "threads=" N       (1..1024; cpu only: libtorch's intra-op threads)
//             | "kernels=" K       (recorded | host; cpu only: kernel_profile.h)
// "cpu" alone replays as zkdv-audit replay does (the tape's thread count, the recorded kernels).
struct ExplainSide {
    std::string device = "cpu";
    int intraOpThreads = 0;  // 0: as a replay
    std::optional<KernelChoice> kernels;  // unset: recorded, as a replay

    static ExplainSide parse(const std::string& text);  // throws ExplainSideError
    // Both sides of "--devices A,B"; throws ExplainSideError unless there are exactly two.
    static std::pair<ExplainSide, ExplainSide> parsePair(const std::string& text);
    std::string toString() const;  // canonical: "cpu@threads=2@kernels=host"
};

// How the two sides' outputs of one operator compare.
enum class NodeAgreement {
    Same,        // every output bit for bit
    Rounding,    // not bit for bit, every output within the tolerance (maxUlp or relative L2)
    Unmeasured,  // the outputs differ, but only their digests came back (past the value cap)
    Beyond,      // an output beyond the tolerance, a NaN/Inf mismatch, an integer that differs,
                 // or outputs of another count, dtype or shape
};
std::string_view nodeAgreementName(NodeAgreement agreement);  // "same", "rounding", "unmeasured", "beyond"

// One operator call both sides made, as side A made it.
struct ExplainedNode {
    std::uint64_t node = 0;  // position in side A's trace (call order)
    std::uint64_t finished = 0;
    std::uint32_t depth = 0;
    std::string op;
    std::string phase;                // forward, backward, optimizer, stage
    std::vector<std::string> inside;  // the calls it is inside, outermost first
    std::vector<std::int64_t> shape;  // of its first output ([] when none)
    std::size_t outputs = 0;
    NodeAgreement agreement = NodeAgreement::Same;
    // The largest over its outputs (0 when same).
    double maxAbs = 0.0;
    double relativeL2 = 0.0;
    double maxUlp = 0.0;
    std::string note;  // why, when the metrics alone do not say
};

struct DivergenceExplanation {
    std::int64_t tapeId = 0;
    std::uint64_t index = 0;
    ExplainSide sides[2];
    std::string devices[2];      // resolved ("cpu", "cuda:0")
    int intraOpThreads[2] = {0, 0};
    Verdict verdicts[2] = {Verdict::Exact, Verdict::Exact};  // each side against the tape
    std::string details[2];
    std::string omitted[2];      // what of a side's trace did not come back
    Tolerance tolerance = Tolerance::defaults();
    std::string granularity;     // "operator" (every dispatched call) or "stage" (loss, gradients, updates)
    std::vector<ExplainedNode> nodes;  // every compared call, in call order
    std::uint64_t traced[2] = {0, 0};  // calls each side traced
    std::uint64_t same = 0, rounding = 0, unmeasured = 0, beyond = 0;
    std::optional<std::size_t> first;  // into nodes: the first call to finish beyond rounding
    std::optional<std::size_t> firstDifference;  // into nodes: the first to finish not bit for bit
    std::string parted;  // where the sides stop calling the same operators ("" when they never do)

    bool diverged() const { return first.has_value() || !parted.empty(); }
};

// Compares two traces of the same transaction (pure: the worker-free half, for tests).
DivergenceExplanation compareOperatorTraces(const std::vector<TracedOperator>& a, const std::vector<TracedOperator>& b,
                                            const Tolerance& tolerance);

// The rows a table shows (indices into nodes): the calls made by the step itself (depth 0)
// and the chain of calls down to the named one, up to `after` step-level calls past it;
// without a named call, the calls that are not bit for bit (at most `after` x 4).
std::vector<std::size_t> explanationRows(const DivergenceExplanation& explanation, std::size_t after = 5);

struct ExplainRequest {
    std::int64_t tapeId = 0;
    std::uint64_t index = 0;
    ExplainSide sides[2];
    Tolerance tolerance = Tolerance::defaults();
    ReplayLimits limits;
    std::string workerPath;            // "": found beside the executable
    ProgressSink* progress = nullptr;  // may cancel (OperationCancelled)
};

// Replays the transaction's segment on both sides, one after the other, tracing the
// transaction. Throws ReplayError when it cannot (no such transaction, no program, tape
// unreadable, a device absent, a worker failed) and OperationCancelled.
DivergenceExplanation explainDivergence(CaseStore& store, const ExplainRequest& request);

}  // namespace zkdv
