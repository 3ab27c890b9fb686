#pragma once
// Follows torch.amp.GradScaler's scale through the transactions a replay reads (spec 5.6):
// each transaction's recorded state against what the root's rule gives after the transaction
// before it (its state and whether it skipped), as scaler.update() moves the scale after every
// step. The recorder follows the same rule and refuses a step whose scale departs from it.

#include <optional>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/tape/grad_scaler.h"

namespace zkdv {

struct TransactionRecord;

class GradScalerFollower {
public:
    explicit GradScalerFollower(GradScalerDeclaration declaration);

    // Where the scale stands for transaction 0 (the root's state), or after `previous`, the
    // transaction before the first one replayed.
    void startAtRoot();
    void startAfter(const TransactionRecord& previous);

    // The comparison "grad_scaler/scale", slot "rule": exact when `recorded` is the state the
    // rule gives, diverged naming both otherwise.
    TensorComparison judge(const GradScalerState& recorded) const;
    // Then stands after a step that used `step.state` and skipped or not.
    void advance(const GradScalerStep& step);
    // Both, for a transaction record that holds a grad_scaler (the reader made sure of it).
    TensorComparison follow(const TransactionRecord& transaction);

    const GradScalerState& expected() const { return expected_; }
    const GradScalerRule& rule() const { return declaration_.rule; }

private:
    GradScalerDeclaration declaration_;
    GradScalerState expected_;
    std::optional<std::uint64_t> after_;  // the transaction the expected state follows; none: the root
};

}  // namespace zkdv
