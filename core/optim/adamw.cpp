// Functional contract for torch.optim.AdamW (torch 1.13 single-tensor update).

#include <cmath>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class AdamWContract : public OptimizerContract {
public:
    std::string name() const override { return "AdamW"; }

    // torch 1.13's AdamW has neither `differentiable` nor `fused`.
    GroupOptions defaults() const override
    {
        return {{"lr", 1e-3},       {"betas", {0.9, 0.999}}, {"eps", 1e-8},       {"weight_decay", 1e-2},
                {"amsgrad", false}, {"maximize", false},     {"foreach", nullptr}, {"capturable", false}};
    }

    // torch creates the state at a parameter's first step with a gradient: a float32 0-d step
    // (torch.tensor(0.)), and zero moments shaped like the parameter.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions& group) const override
    {
        SlotState state;
        state.emplace("step", at::zeros({}, at::kFloat));
        state.emplace("exp_avg", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        state.emplace("exp_avg_sq", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        if (flagOption(group, "amsgrad"))
            state.emplace("max_exp_avg_sq", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        return state;
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        const double eps = numberOption(group, "eps");
        const double weightDecay = numberOption(group, "weight_decay");
        const bool amsgrad = flagOption(group, "amsgrad");
        const bool maximize = flagOption(group, "maximize");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            if (gradients[i].is_sparse())
                throw ContractError("AdamW does not support sparse gradients (torch raises too)");
            if (parameters[i].is_complex())
                throw ContractError("AdamW: complex parameters are not supported");
        }
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            SlotState& state = *states[i];
            at::Tensor& expAvg = requireSlot(state, name(), "exp_avg");
            at::Tensor& expAvgSq = requireSlot(state, name(), "exp_avg_sq");
            at::Tensor& stepTensor = requireSlot(state, name(), "step");

            stepTensor.add_(1);

            // Decoupled weight decay, applied even when weight_decay is 0 (a multiplication by 1).
            parameter.mul_(1 - lr * weightDecay);

            expAvg.mul_(beta1).add_(grad, 1 - beta1);
            expAvgSq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);

            const double step = stepTensor.item<double>();
            const double biasCorrection1 = 1 - std::pow(beta1, step);
            const double biasCorrection2 = 1 - std::pow(beta2, step);
            const double stepSize = lr / biasCorrection1;
            const double biasCorrection2Sqrt = std::sqrt(biasCorrection2);

            at::Tensor denom;
            if (amsgrad) {
                at::Tensor& maxExpAvgSq = requireSlot(state, name(), "max_exp_avg_sq");
                at::maximum_out(maxExpAvgSq, maxExpAvgSq, expAvgSq);
                denom = (maxExpAvgSq.sqrt() / biasCorrection2Sqrt).add_(eps);
            } else {
                denom = (expAvgSq.sqrt() / biasCorrection2Sqrt).add_(eps);
            }
            parameter.addcdiv_(expAvg, denom, -stepSize);
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        refuseOption(group, "capturable", true,
                     "capturable=True is torch's CUDA-graph mode (step kept on the device, bias corrections computed as tensors), "
                     "whose rounding differs from the single-tensor update the contract replays");
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        if (!(0.0 <= lr))
            throw ContractError("AdamW: invalid learning rate " + group["lr"].dump());
        if (!(0.0 <= numberOption(group, "eps")))
            throw ContractError("AdamW: invalid epsilon value " + group["eps"].dump());
        if (!(0.0 <= beta1 && beta1 < 1.0))
            throw ContractError("AdamW: invalid beta parameter at index 0: " + group["betas"][0].dump());
        if (!(0.0 <= beta2 && beta2 < 1.0))
            throw ContractError("AdamW: invalid beta parameter at index 1: " + group["betas"][1].dump());
        if (!(0.0 <= numberOption(group, "weight_decay")))
            throw ContractError("AdamW: invalid weight_decay value " + group["weight_decay"].dump());
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAdamWContract() { return std::make_shared<AdamWContract>(); }

}  // namespace zkdv::optim
