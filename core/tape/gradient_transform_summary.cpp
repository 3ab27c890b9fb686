#include "zkdv/tape/gradient_transform_summary.h"

#include "zkdv/tape/transaction_record.h"

namespace zkdv {

void GradientTransformSummary::onTransaction(const TransactionRecord& record, const RecordLocation&)
{
    if (record.gradScaler && record.gradScaler->skipped)
        ++skipped_;
    std::string transforms;
    for (const GradientTransform& transform : record.gradientTransforms)
        transforms += (transforms.empty() ? "" : ", then ") + transform.describe();
    for (GradientTransformUse& use : uses_)
        if (use.transforms == transforms) {
            ++use.transactions;
            use.last = record.index;
            return;
        }
    if (uses_.size() == kMaxUses) {
        ++others_;
        return;
    }
    uses_.push_back({transforms, 1, record.index, record.index});
}

std::string GradientTransformSummary::text(std::uint64_t transactionCount) const
{
    if (uses_.empty() || (uses_.size() == 1 && uses_.front().transforms.empty()))
        return "as the backward left them (no gradient transform recorded)";
    std::string text;
    for (const GradientTransformUse& use : uses_) {
        text += text.empty() ? "" : "; ";
        text += use.transforms.empty() ? std::string("none") : use.transforms;
        text += " in " + std::to_string(use.transactions) + " of " + std::to_string(transactionCount) + " transactions (" +
                std::to_string(use.first) + (use.first == use.last ? "" : "–" + std::to_string(use.last)) + ")";
    }
    if (others_)
        text += "; " + std::to_string(others_) + " transactions with other transforms";
    if (skipped_)
        text += "; " + std::to_string(skipped_) + " optimizer step" + (skipped_ == 1 ? "" : "s") +
                " skipped by the GradScaler (an inf or NaN in the unscaled gradients)";
    return text;
}

}  // namespace zkdv
