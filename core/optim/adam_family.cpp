// The update torch runs for Adam and AdamW (single-tensor path; 2.x's foreach path computes
// the same values): 1.13's, and 2.x's, which moves the first moment with lerp_, takes the
// bias correction's square root as `** 0.5` and chooses weight decay by decoupled_weight_decay.

#include "adam_family.h"

#include <cmath>

#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

SlotState AdamFamilyContract::initialize(const at::Tensor& parameter, const GroupOptions& group) const
{
    SlotState state;
    state.emplace("step", at::zeros({}, at::kFloat));
    state.emplace("exp_avg", at::zeros_like(parameter, at::MemoryFormat::Preserve));
    state.emplace("exp_avg_sq", at::zeros_like(parameter, at::MemoryFormat::Preserve));
    if (flagOption(group, "amsgrad"))
        state.emplace("max_exp_avg_sq", at::zeros_like(parameter, at::MemoryFormat::Preserve));
    return state;
}

void AdamFamilyContract::update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                                const std::vector<SlotState*>& states, const GroupOptions& group) const
{
    const double lr = numberOption(group, "lr");
    const auto [beta1, beta2] = pairOption(group, "betas");
    const double eps = numberOption(group, "eps");
    const double weightDecay = numberOption(group, "weight_decay");
    const bool amsgrad = flagOption(group, "amsgrad");
    const bool maximize = flagOption(group, "maximize");
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        if (gradients[i].is_sparse())
            throw ContractError(name() + " does not support sparse gradients (torch raises too); consider SparseAdam instead");
        if (parameters[i].is_complex())
            throw ContractError(name() + ": complex parameters are not supported");
    }
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        at::Tensor parameter = parameters[i];
        at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
        SlotState& state = *states[i];
        at::Tensor& expAvg = requireSlot(state, name(), "exp_avg");
        at::Tensor& expAvgSq = requireSlot(state, name(), "exp_avg_sq");
        at::Tensor& stepTensor = requireSlot(state, name(), "step");

        stepTensor.add_(1);

        if (!torch2()) {
            applyWeightDecay(parameter, grad, lr, weightDecay);
        } else if (weightDecay != 0) {
            if (flagOption(group, "decoupled_weight_decay"))
                parameter.mul_(1 - lr * weightDecay);
            else
                grad = grad.add(parameter, weightDecay);
        }

        if (torch2())
            expAvg.lerp_(grad, 1 - beta1);
        else
            expAvg.mul_(beta1).add_(grad, 1 - beta1);
        expAvgSq.mul_(beta2).addcmul_(grad, grad.conj(), 1 - beta2);

        const double step = stepTensor.item<double>();
        const double biasCorrection1 = 1 - std::pow(beta1, step);
        const double biasCorrection2 = 1 - std::pow(beta2, step);
        const double stepSize = lr / biasCorrection1;
        // Python's `** 0.5` is C's pow(), which may round differently from sqrt().
        const double biasCorrection2Sqrt = torch2() ? std::pow(biasCorrection2, 0.5) : std::sqrt(biasCorrection2);

        at::Tensor denom;
        if (amsgrad) {
            at::Tensor& maxExpAvgSq = requireSlot(state, name(), "max_exp_avg_sq");
            at::maximum_out(maxExpAvgSq, maxExpAvgSq, expAvgSq);
            denom = maxExpAvgSq.sqrt();
        } else {
            denom = expAvgSq.sqrt();
        }
        // torch writes (sqrt(v) / c2).add_(eps), a second temporary; dividing the first in
        // place gives the same bits with half the allocations (docs/performance.md).
        denom.div_(biasCorrection2Sqrt).add_(eps);
        parameter.addcdiv_(expAvg, denom, -stepSize);
    }
}

void AdamFamilyContract::validateGroup(const GroupOptions& group) const
{
    const double lr = numberOption(group, "lr");
    const auto [beta1, beta2] = pairOption(group, "betas");
    if (!(0.0 <= lr))
        throw ContractError(name() + ": invalid learning rate " + group["lr"].dump());
    if (!(0.0 <= numberOption(group, "eps")))
        throw ContractError(name() + ": invalid epsilon value " + group["eps"].dump());
    if (!(0.0 <= beta1 && beta1 < 1.0))
        throw ContractError(name() + ": invalid beta parameter at index 0: " + group["betas"][0].dump());
    if (!(0.0 <= beta2 && beta2 < 1.0))
        throw ContractError(name() + ": invalid beta parameter at index 1: " + group["betas"][1].dump());
    if (!(0.0 <= numberOption(group, "weight_decay")))
        throw ContractError(name() + ": invalid weight_decay value " + group["weight_decay"].dump());
}

}  // namespace zkdv::optim
