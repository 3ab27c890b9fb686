#include "zkdv/audit/replay_outcome.h"

#include <algorithm>

namespace zkdv {

std::string TensorComparison::label() const
{
    if (tensor == slot || tensor.empty())
        return slot;
    return tensor + " " + slot;
}

const TensorComparison* TransactionOutcome::worst() const
{
    const TensorComparison* worst = nullptr;
    auto badness = [](const TensorComparison& c) {
        // A verdict outranks a metric: a digest mismatch (no metrics) still is the worst.
        return std::make_pair(static_cast<int>(c.verdict), c.metrics.finiteMismatch() ? 1e300 : c.metrics.maxUlp);
    };
    for (const TensorComparison& comparison : comparisons)
        if (!worst || badness(comparison) > badness(*worst))
            worst = &comparison;
    return worst;
}

void keepFirstFailure(std::vector<TransactionOutcome>& failures, const TransactionOutcome& outcome)
{
    if (passes(outcome.verdict))
        return;
    if (failures.size() == kFirstFailureCount && failures.back().index < outcome.index)
        return;
    auto at = std::upper_bound(failures.begin(), failures.end(), outcome.index,
                               [](std::uint64_t index, const TransactionOutcome& kept) { return index < kept.index; });
    failures.insert(at, outcome);
    if (failures.size() > kFirstFailureCount)
        failures.pop_back();
}

}  // namespace zkdv
