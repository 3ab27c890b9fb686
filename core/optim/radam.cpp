// Functional contract for torch.optim.RAdam (torch 1.13 single-tensor update).

#include <cmath>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class RAdamContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "RAdam"; }

    // torch 1.13's RAdam has neither `maximize` nor `differentiable`.
    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.0}, {"foreach", nullptr}};
        if (torch2()) {  // options torch 2.x added
            options["decoupled_weight_decay"] = false;
            options["maximize"] = false;
            options["capturable"] = false;
            options["differentiable"] = false;
        }
        return options;
    }

    // torch creates the state at a parameter's first step with a gradient: a float32 0-d step
    // (torch.tensor(0.)), and zero moments shaped like the parameter.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions&) const override
    {
        SlotState state;
        state.emplace("step", at::zeros({}, at::kFloat));
        state.emplace("exp_avg", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        state.emplace("exp_avg_sq", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        return state;
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        const double eps = numberOption(group, "eps");
        const double weightDecay = numberOption(group, "weight_decay");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            refuseSparse(name(), gradients[i]);
            refuseComplex(name(), parameters[i]);
        }
        if (flagOption(group, "foreach")) {
            multiTensorUpdate(parameters, gradients, states, group, lr, beta1, beta2, eps, weightDecay);
            return;
        }
        const bool maximize = flagOption(group, "maximize");
        const bool decoupled = flagOption(group, "decoupled_weight_decay");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            SlotState& state = *states[i];
            at::Tensor& expAvg = requireSlot(state, "RAdam", "exp_avg");
            at::Tensor& expAvgSq = requireSlot(state, "RAdam", "exp_avg_sq");
            at::Tensor& stepTensor = requireSlot(state, "RAdam", "step");

            stepTensor.add_(1);
            const double step = stepTensor.item<double>();
            const double biasCorrection1 = 1 - std::pow(beta1, step);
            const double biasCorrection2 = 1 - std::pow(beta2, step);

            if (weightDecay != 0) {
                if (decoupled)
                    parameter.mul_(1 - lr * weightDecay);
                else
                    grad = grad.add(parameter, weightDecay);
            }

            if (torch2())
                expAvg.lerp_(grad, 1 - beta1);
            else
                expAvg.mul_(beta1).add_(grad, 1 - beta1);
            expAvgSq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
            const at::Tensor biasCorrectedExpAvg = expAvg / biasCorrection1;

            // The maximum and the current length of the approximated simple moving average.
            const double rhoInf = 2 / (1 - beta2) - 1;
            const double rhoT = rhoInf - 2 * step * std::pow(beta2, step) / biasCorrection2;
            if (rhoT > 5.) {
                // torch 2.x takes square roots as Python's `** 0.5` (C's pow), 1.13 as math.sqrt.
                auto squareRoot = [&](double x) { return torch2() ? std::pow(x, 0.5) : std::sqrt(x); };
                const double rect = squareRoot((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT));
                // Python's `float / tensor` is Tensor.__rtruediv__: tensor.reciprocal() * float.
                const at::Tensor adaptiveLr = expAvgSq.sqrt().add_(eps).reciprocal() * squareRoot(biasCorrection2);
                parameter.add_(biasCorrectedExpAvg * lr * adaptiveLr * rect, -1.0);
            } else {
                parameter.add_(biasCorrectedExpAvg * lr, -1.0);
            }
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        if (!(0.0 <= lr))
            throw ContractError("RAdam: invalid learning rate " + group["lr"].dump());
        if (!(0.0 <= numberOption(group, "eps")))
            throw ContractError("RAdam: invalid epsilon value " + group["eps"].dump());
        if (!(0.0 <= beta1 && beta1 < 1.0))
            throw ContractError("RAdam: invalid beta parameter at index 0: " + group["betas"][0].dump());
        if (!(0.0 <= beta2 && beta2 < 1.0))
            throw ContractError("RAdam: invalid beta parameter at index 1: " + group["betas"][1].dump());
        if (!(0.0 <= numberOption(group, "weight_decay")))
            throw ContractError("RAdam: invalid weight_decay value " + group["weight_decay"].dump());
    }

private:
    // torch 1.13's _multi_tensor_radam, tensor by tensor (its CPU foreach ops are per-tensor
    // loops). It differs from the single-tensor path: the rectification is folded into the step
    // size, the denominator sqrt(exp_avg_sq) / sqrt(bias_correction2) has no eps, and both
    // branches always run, the inactive one with a step size of -0.0 (the unrectified one
    // divides by ones). Torch adds the weight decay into .grad in place here; the contract
    // leaves the gradient untouched (same values).
    void multiTensorUpdate(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                           const std::vector<SlotState*>& states, const GroupOptions& group, double lr, double beta1, double beta2,
                           double eps, double weightDecay) const
    {
        const double rhoInf = 2 / (1 - beta2) - 1;
        const bool maximize = flagOption(group, "maximize");
        const bool decoupled = flagOption(group, "decoupled_weight_decay");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            SlotState& state = *states[i];
            at::Tensor& expAvg = requireSlot(state, "RAdam", "exp_avg");
            at::Tensor& expAvgSq = requireSlot(state, "RAdam", "exp_avg_sq");
            at::Tensor& stepTensor = requireSlot(state, "RAdam", "step");

            stepTensor.add_(1);
            const double step = stepTensor.item<double>();
            const double rhoT = rhoInf - 2 * step * std::pow(beta2, step) / (1 - std::pow(beta2, step));
            const double biasCorrection1 = 1 - std::pow(beta1, step);
            const double biasCorrection2 = 1 - std::pow(beta2, step);

            if (weightDecay != 0) {
                if (decoupled)
                    parameter.mul_(1 - lr * weightDecay);
                else
                    grad = grad.add(parameter, weightDecay);
            }

            if (torch2()) {
                expAvg.lerp_(grad, 1 - beta1);
            } else {
                expAvg.mul_(beta1);
                expAvg.add_(grad, 1 - beta1);
            }
            expAvgSq.mul_(beta2);
            expAvgSq.addcmul_(grad, grad, 1 - beta2);

            auto squareRoot = [&](double x) { return torch2() ? std::pow(x, 0.5) : std::sqrt(x); };
            const double rect = rhoT > 5 ? squareRoot((rhoT - 4) * (rhoT - 2) * rhoInf / ((rhoInf - 4) * (rhoInf - 2) * rhoT)) : 0;
            const double unrectified = rect > 0 ? 0 : 1.;

            if (torch2()) {
                // One fused step: param += exp_avg * (1 / ((sqrt(v) + eps) / c2) + u), where c2
                // carries the rectified step size and u the unrectified one (-0 when rectified).
                const double unrectifiedStepSize = (lr * unrectified / biasCorrection1) * -1;
                const double rectifiedScale = squareRoot(biasCorrection2) * (lr * rect / biasCorrection1) * -1;
                at::Tensor buffer = expAvgSq.sqrt();
                buffer.add_(eps);
                buffer.div_(rectifiedScale);
                buffer.reciprocal_();
                buffer.add_(unrectifiedStepSize);
                parameter.addcmul_(expAvg, buffer);
                continue;
            }
            // torch 1.13 has no eps in this path.
            const at::Tensor denom = expAvgSq.sqrt().div(std::sqrt(biasCorrection2));
            parameter.addcdiv_(expAvg, denom, (lr * rect / biasCorrection1) * -1);
            const at::Tensor ones = at::ones_like(expAvg, at::MemoryFormat::Preserve);
            parameter.addcdiv_(expAvg, ones, (lr * unrectified / biasCorrection1) * -1);
        }
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeRAdamContract(TorchRelease release) { return std::make_shared<RAdamContract>(release); }

}  // namespace zkdv::optim
