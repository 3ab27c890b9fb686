// Functional contract for torch.optim.Adamax (torch 1.13 single-tensor update).

#include <cmath>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class AdamaxContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "Adamax"; }

    // torch 1.13's Adamax has no `differentiable`.
    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 2e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.0}, {"foreach", nullptr}, {"maximize", false}};
        if (torch2()) {  // options torch 2.x added
            options["differentiable"] = false;
            options["capturable"] = false;
        }
        return options;
    }

    // torch creates the state at a parameter's first step with a gradient: a float32 0-d step
    // (torch.tensor(0.)), the first moment and the infinity norm, zero and shaped like the parameter.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions&) const override
    {
        SlotState state;
        state.emplace("step", at::zeros({}, at::kFloat));
        state.emplace("exp_avg", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        state.emplace("exp_inf", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        return state;
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        const double eps = numberOption(group, "eps");
        const double weightDecay = numberOption(group, "weight_decay");
        const bool maximize = flagOption(group, "maximize");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            refuseSparse(name(), gradients[i]);
            refuseComplex(name(), parameters[i]);
        }
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            SlotState& state = *states[i];
            at::Tensor& expAvg = requireSlot(state, name(), "exp_avg");
            at::Tensor& expInf = requireSlot(state, name(), "exp_inf");
            at::Tensor& stepTensor = requireSlot(state, name(), "step");

            stepTensor.add_(1);
            const double step = stepTensor.item<double>();

            if (weightDecay != 0)
                grad = grad.add(parameter, weightDecay);

            // The exponentially weighted infinity norm: max(beta2 * exp_inf, |grad| + eps);
            // torch 2.x takes it with maximum(), 1.13 with amax() over both stacked.
            if (torch2()) {
                expAvg.lerp_(grad, 1 - beta1);
                at::maximum_out(expInf, expInf.mul_(beta2), grad.abs().add_(eps));
            } else {
                expAvg.mul_(beta1).add_(grad, 1 - beta1);
                at::Tensor normBuffer = at::cat({expInf.mul_(beta2).unsqueeze(0), grad.abs().add_(eps).unsqueeze_(0)}, 0);
                at::amax_out(expInf, normBuffer, {0}, false);
            }

            const double biasCorrection = 1 - std::pow(beta1, step);
            const double clr = lr / biasCorrection;
            parameter.addcdiv_(expAvg, expInf, -clr);
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        if (!(0.0 <= lr))
            throw ContractError("Adamax: invalid learning rate " + group["lr"].dump());
        if (!(0.0 <= numberOption(group, "eps")))
            throw ContractError("Adamax: invalid epsilon value " + group["eps"].dump());
        if (!(0.0 <= beta1 && beta1 < 1.0))
            throw ContractError("Adamax: invalid beta parameter at index 0: " + group["betas"][0].dump());
        if (!(0.0 <= beta2 && beta2 < 1.0))
            throw ContractError("Adamax: invalid beta parameter at index 1: " + group["betas"][1].dump());
        if (!(0.0 <= numberOption(group, "weight_decay")))
            throw ContractError("Adamax: invalid weight_decay value " + group["weight_decay"].dump());
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAdamaxContract(TorchRelease release) { return std::make_shared<AdamaxContract>(release); }

}  // namespace zkdv::optim
