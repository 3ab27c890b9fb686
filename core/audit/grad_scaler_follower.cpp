#include "zkdv/audit/grad_scaler_follower.h"

#include <nlohmann/json.hpp>

#include "zkdv/audit/divergence.h"
#include "zkdv/tape/transaction_record.h"

namespace zkdv {

GradScalerFollower::GradScalerFollower(GradScalerDeclaration declaration)
    : declaration_(declaration), expected_(declaration.initial)
{
}

void GradScalerFollower::startAtRoot()
{
    expected_ = declaration_.initial;
    after_.reset();
}

void GradScalerFollower::startAfter(const TransactionRecord& previous)
{
    if (!previous.gradScaler) {
        startAtRoot();
        return;
    }
    after_ = previous.index;
    expected_ = nextGradScalerState(previous.gradScaler->state, declaration_.rule, previous.gradScaler->skipped);
}

TensorComparison GradScalerFollower::judge(const GradScalerState& recorded) const
{
    TensorComparison comparison;
    comparison.tensor = "grad_scaler/scale";
    comparison.slot = "rule";
    comparison.metrics = compareScalars(recorded.scale, expected_.scale);
    if (recorded == expected_)
        return comparison;
    comparison.verdict = Verdict::Diverged;
    comparison.note = "grad_scaler scale " + gradScaleText(recorded.scale) + " and growth_tracker " + std::to_string(recorded.growthTracker) +
                      " are recorded, but the GradScaler's rule (growth_factor " + nlohmann::json(declaration_.rule.growthFactor).dump() +
                      ", backoff_factor " + nlohmann::json(declaration_.rule.backoffFactor).dump() + ", growth_interval " +
                      std::to_string(declaration_.rule.growthInterval) + ") gives scale " + gradScaleText(expected_.scale) + " and growth_tracker " +
                      std::to_string(expected_.growthTracker) +
                      (after_ ? " after transaction " + std::to_string(*after_) : std::string(" from the root's grad_scaler"));
    return comparison;
}

void GradScalerFollower::advance(const GradScalerStep& step)
{
    expected_ = nextGradScalerState(step.state, declaration_.rule, step.skipped);
    after_ = after_ ? *after_ + 1 : 0;
}

TensorComparison GradScalerFollower::follow(const TransactionRecord& transaction)
{
    TensorComparison comparison = judge(transaction.gradScaler->state);
    // The next transaction follows from what this one recorded: a departure is reported once.
    advance(*transaction.gradScaler);
    after_ = transaction.index;
    return comparison;
}

}  // namespace zkdv
