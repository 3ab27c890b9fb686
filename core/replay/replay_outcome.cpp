#include "zkdv/replay/replay_outcome.h"

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

}  // namespace zkdv
