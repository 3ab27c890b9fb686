#pragma once
// One transaction replayed on demand, its recorded and replayed deltas compared element by
// element: the workstation's "Compare elements" (the case stores only each comparison's
// metrics, never the replayed values). Runs the program only in a replay worker process, as
// every replay does, and stores nothing in the case. Audit-side: no torch.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/replay/kernel_profile.h"
#include "zkdv/replay/replay_limits.h"
#include "zkdv/util/progress.h"

namespace zkdv {

class CaseStore;

// One element where the two values differ most.
struct WorstElement {
    std::uint64_t flatIndex = 0;          // row-major
    std::vector<std::int64_t> position;   // the same as an index per dimension
    double recorded = 0.0;
    double replayed = 0.0;
    double absDifference = 0.0;           // |replayed - recorded|; +inf where exactly one is NaN
    double ulp = 0.0;                     // the ULP distance in the tensor's dtype (docs/replay.md)
};

// A compared delta, values widened to double (exact for every floating dtype).
struct ElementTensor {
    std::string tensor;
    std::string slot;   // "delta"
    std::string dtype;  // "F32"
    std::vector<std::int64_t> shape;
    std::vector<double> recorded;
    std::vector<double> replayed;  // empty when the replay's dtype or shape differs (comparison.note says how)
    TensorComparison comparison;   // this replay's metrics of the tensor
    std::vector<WorstElement> worst;  // largest |difference| first, at most kWorstElements; none when equal
};

struct ElementComparison {
    std::int64_t tapeId = 0;
    std::uint64_t index = 0;
    std::string device;
    Verdict verdict = Verdict::Exact;  // of this replay of the transaction
    std::string detail;
    std::vector<ElementTensor> deltas;  // model-layout order
    std::string omitted;                // tensors whose values were too large to bring back ("" when none)
};

constexpr std::size_t kWorstElements = 20;

struct ElementComparisonRequest {
    std::int64_t tapeId = 0;
    std::uint64_t index = 0;
    std::string device = "cpu";
    KernelChoice kernels = KernelChoice::Recorded;  // as a replay's (kernel_profile.h)
    ReplayLimits limits;
    std::string workerPath;  // "": found beside the executable
    ProgressSink* progress = nullptr;  // may cancel (OperationCancelled)
};

// Replays the transaction's segment up to it in a worker and returns its deltas, recorded
// and replayed. Throws ReplayError when it cannot (no such transaction, no recorded deltas,
// no program, tape unreadable, device absent, the worker failed) and OperationCancelled.
ElementComparison compareTransactionElements(CaseStore& store, const ElementComparisonRequest& request);

// The `count` elements of `recorded` vs `replayed` (both `dtype`, contiguous little-endian)
// that differ most, largest |difference| first, with their ULP distance; elements that are
// equal bit for bit are never listed.
std::vector<WorstElement> worstElements(DType dtype, const std::vector<std::int64_t>& shape, const std::vector<std::uint8_t>& recorded,
                                        const std::vector<std::uint8_t>& replayed, std::size_t count = kWorstElements);

}  // namespace zkdv
