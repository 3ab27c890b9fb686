// Functional contract for torch.optim.NAdam (torch 1.13 single-tensor update).

#include <cmath>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class NAdamContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "NAdam"; }

    // torch 1.13's NAdam has neither `maximize` nor `differentiable`.
    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 2e-3},          {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"weight_decay", 0.0},
                {"momentum_decay", 4e-3}, {"foreach", nullptr}};
        if (torch2()) {  // options torch 2.x added
            options["decoupled_weight_decay"] = false;
            options["maximize"] = false;
            options["capturable"] = false;
            options["differentiable"] = false;
        }
        return options;
    }

    // torch creates the state at a parameter's first step with a gradient: float32 0-d step
    // and mu_product (torch.tensor(0.), torch.tensor(1.)), and zero moments shaped like the
    // parameter.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions&) const override
    {
        SlotState state;
        state.emplace("step", at::zeros({}, at::kFloat));
        state.emplace("mu_product", at::ones({}, at::kFloat));
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
        const double momentumDecay = numberOption(group, "momentum_decay");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            refuseSparse(name(), gradients[i]);
            refuseComplex(name(), parameters[i]);
        }
        if (flagOption(group, "foreach")) {
            multiTensorUpdate(parameters, gradients, states, group, lr, beta1, beta2, eps, weightDecay, momentumDecay);
            return;
        }
        const bool maximize = flagOption(group, "maximize");
        const bool decoupled = flagOption(group, "decoupled_weight_decay");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            SlotState& state = *states[i];
            at::Tensor& expAvg = requireSlot(state, "NAdam", "exp_avg");
            at::Tensor& expAvgSq = requireSlot(state, "NAdam", "exp_avg_sq");
            at::Tensor& muProduct = requireSlot(state, "NAdam", "mu_product");
            at::Tensor& stepTensor = requireSlot(state, "NAdam", "step");

            stepTensor.add_(1);
            const double step = stepTensor.item<double>();
            const double biasCorrection2 = 1 - std::pow(beta2, step);

            if (weightDecay != 0) {
                if (decoupled)
                    parameter.mul_(1 - lr * weightDecay);
                else
                    grad = grad.add(parameter, weightDecay);
            }

            // The momentum cache mu_t and mu_{t+1}; mu_product stays a float32 tensor as in torch.
            const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * momentumDecay));
            const double muNext = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * momentumDecay));
            muProduct.mul_(mu);

            if (torch2()) {
                // torch 2.x: the first moment by lerp_, the next product as a Python float.
                expAvg.lerp_(grad, 1 - beta1);
                expAvgSq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
                at::Tensor denom = expAvgSq.div(biasCorrection2).sqrt();
                const double product = muProduct.item<double>();
                const double productNext = product * muNext;
                denom.add_(eps);
                parameter.addcdiv_(grad, denom, -lr * (1. - mu) / (1. - product));
                parameter.addcdiv_(expAvg, denom, (-lr * muNext) / (1. - productNext));
                continue;
            }
            // torch 1.13 multiplies mu in a second time (its mu_product_next = mu_product * mu * mu_next).
            const at::Tensor muProductNext = muProduct * mu * muNext;
            expAvg.mul_(beta1).add_(grad, 1 - beta1);
            expAvgSq.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
            at::Tensor denom = expAvgSq.div(biasCorrection2).sqrt().add_(eps);
            parameter.addcdiv_(grad, denom, -lr * (1. - mu) / (1. - muProduct.item<double>()));
            parameter.addcdiv_(expAvg, denom, -lr * muNext / (1. - muProductNext.item<double>()));
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        if (!(0.0 <= lr))
            throw ContractError("NAdam: invalid learning rate " + group["lr"].dump());
        if (!(0.0 <= numberOption(group, "eps")))
            throw ContractError("NAdam: invalid epsilon value " + group["eps"].dump());
        if (!(0.0 <= beta1 && beta1 < 1.0))
            throw ContractError("NAdam: invalid beta parameter at index 0: " + group["betas"][0].dump());
        if (!(0.0 <= beta2 && beta2 < 1.0))
            throw ContractError("NAdam: invalid beta parameter at index 1: " + group["betas"][1].dump());
        if (!(0.0 <= numberOption(group, "weight_decay")))
            throw ContractError("NAdam: invalid weight_decay value " + group["weight_decay"].dump());
        if (!(0.0 <= numberOption(group, "momentum_decay")))
            throw ContractError("NAdam: invalid momentum_decay value " + group["momentum_decay"].dump());
    }

private:
    // torch 1.13's _multi_tensor_nadam, tensor by tensor (its CPU foreach ops are per-tensor
    // loops). It differs from the single-tensor path: the denominator is
    // sqrt(exp_avg_sq) / sqrt(bias_correction2) + eps, and the second step size uses the Python
    // double mu_product * mu_next (the single-tensor path multiplies mu in once more, in float32).
    // Torch adds the weight decay into .grad in place here; the contract leaves the gradient
    // untouched (same values).
    void multiTensorUpdate(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                           const std::vector<SlotState*>& states, const GroupOptions& group, double lr, double beta1, double beta2,
                           double eps, double weightDecay, double momentumDecay) const
    {
        const bool maximize = flagOption(group, "maximize");
        const bool decoupled = flagOption(group, "decoupled_weight_decay");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            SlotState& state = *states[i];
            at::Tensor& expAvg = requireSlot(state, "NAdam", "exp_avg");
            at::Tensor& expAvgSq = requireSlot(state, "NAdam", "exp_avg_sq");
            at::Tensor& muProduct = requireSlot(state, "NAdam", "mu_product");
            at::Tensor& stepTensor = requireSlot(state, "NAdam", "step");

            stepTensor.add_(1);
            const double step = stepTensor.item<double>();
            const double biasCorrection2 = 1 - std::pow(beta2, step);
            const double mu = beta1 * (1. - 0.5 * std::pow(0.96, step * momentumDecay));
            const double muNext = beta1 * (1. - 0.5 * std::pow(0.96, (step + 1) * momentumDecay));

            muProduct.mul_(mu);

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

            at::Tensor expAvgSqSqrt = expAvgSq.sqrt();
            // torch 2.x takes the square root as Python's `** 0.5` (C's pow), 1.13 as math.sqrt.
            expAvgSqSqrt.div_(torch2() ? std::pow(biasCorrection2, 0.5) : std::sqrt(biasCorrection2));
            at::Tensor denom = expAvgSqSqrt.add(eps);

            const double stepSizeGrad = (lr * (1. - mu) / (1. - muProduct.item<double>())) * -1;
            const double stepSizeExpAvg = (lr * muNext / (1. - muProduct.item<double>() * muNext)) * -1;
            parameter.addcdiv_(grad, denom, stepSizeGrad);
            parameter.addcdiv_(expAvg, denom, stepSizeExpAvg);
        }
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeNAdamContract(TorchRelease release) { return std::make_shared<NAdamContract>(release); }

}  // namespace zkdv::optim
