#pragma once
// The single-tensor update Adam and AdamW share; they differ only in how weight decay enters
// the step (added to the gradient, or decoupled onto the parameter).

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

class AdamFamilyContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    // torch creates the state at a parameter's first step with a gradient: a float32 0-d step
    // (torch.tensor(0.)), and zero moments shaped like the parameter.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions& group) const override;
    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override;

protected:
    // torch 1.13's weight decay, applied before the moments are updated; may replace
    // `gradient`. (torch 2.x has one rule for both, chosen by decoupled_weight_decay.)
    virtual void applyWeightDecay(at::Tensor& parameter, at::Tensor& gradient, double lr, double weightDecay) const = 0;
    void validateGroup(const GroupOptions& group) const override;
};

}  // namespace zkdv::optim
