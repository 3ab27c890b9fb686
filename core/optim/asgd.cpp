// Functional contract for torch.optim.ASGD (torch 1.13 single-tensor update).

#include <algorithm>
#include <cmath>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class AsgdContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "ASGD"; }

    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1e-2}, {"lambd", 1e-4}, {"alpha", 0.75}, {"t0", 1e6}, {"weight_decay", 0}, {"foreach", nullptr}, {"maximize", false}};
        if (torch2()) {  // options torch 2.x added
            options["differentiable"] = false;
            options["capturable"] = false;
        }
        return options;
    }

    // step and mu are float32 0-d tensors; eta is torch.tensor(lr): float32 for a float lr,
    // int64 for an integer lr, as torch infers it.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions& group) const override
    {
        refuseComplex(name(), parameter);
        const double lr = numberOption(group, "lr");
        return {{"step", at::scalar_tensor(0.0, at::kFloat)},
                {"eta", at::scalar_tensor(lr, group["lr"].is_number_integer() ? at::kLong : at::kFloat)},
                {"mu", at::scalar_tensor(1.0, at::kFloat)},
                {"ax", at::zeros_like(parameter)}};
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const double lambd = numberOption(group, "lambd");
        const double alpha = numberOption(group, "alpha");
        const double t0 = numberOption(group, "t0");
        const double weightDecay = numberOption(group, "weight_decay");
        const bool maximize = flagOption(group, "maximize");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            refuseComplex(name(), parameters[i]);
            refuseSparse(name(), gradients[i]);
        }
        if (flagOption(group, "foreach")) {
            multiTensorUpdate(parameters, gradients, states, lr, lambd, alpha, t0, weightDecay, maximize);
            return;
        }
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            SlotState& state = *states[i];
            at::Tensor& mu = state.at("mu");
            at::Tensor& ax = state.at("ax");
            at::Tensor& eta = state.at("eta");
            at::Tensor& stepTensor = state.at("step");
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            // update step
            stepTensor.add_(1);
            const double step = stepTensor.item<double>();
            if (weightDecay != 0)
                grad = grad.add(parameter, weightDecay);
            // decay term
            parameter.mul_(1 - lambd * eta.item<double>());
            // update parameter
            parameter.add_(grad, -eta.item<double>());
            // averaging
            if (mu.item<double>() != 1)
                ax.add_(parameter.sub(ax).mul(mu));
            else
                ax.copy_(parameter);
            const double newEta = lr / std::pow((1 + lambd * lr * step), alpha);
            eta.copy_(at::scalar_tensor(newEta, at::kFloat));
            const double newMu = 1 / std::max(1.0, step - t0);
            mu.copy_(at::scalar_tensor(newMu, at::kFloat));
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        for (const char* option : {"lr", "weight_decay"})
            if (!(0.0 <= numberOption(group, option)))
                throw ContractError(std::string("ASGD: invalid ") + option + " value " + group[option].dump());
        for (const char* option : {"lambd", "alpha", "t0"})
            numberOption(group, option);
    }

private:
    // torch 1.13's _multi_tensor_asgd, tensor by tensor (its CPU foreach ops are per-tensor
    // loops). It differs from the single-tensor path: every parameter of the group decays and
    // steps with the eta of the group's first parameter with a gradient, read before any update.
    // torch 2.x's _multi_tensor_asgd, tensor by tensor: each parameter's own eta; the decay
    // folded into one addcmul_; the new eta computed in float32 tensor arithmetic from the
    // step tensor (Python's `lr / t` is t.reciprocal() * lr).
    static void multiTensorUpdate2(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                                   const std::vector<SlotState*>& states, double lr, double lambd, double alpha, double t0,
                                   double weightDecay, bool maximize)
    {
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            SlotState& state = *states[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            at::Tensor& step = state.at("step");
            step.add_(1);
            at::Tensor intermediate = weightDecay != 0 ? grad.add(parameter, weightDecay) : grad;
            intermediate = intermediate.add(parameter, lambd);
            parameter.addcmul_(intermediate, state.at("eta"), -1);
            at::Tensor& ax = state.at("ax");
            ax.addcmul_(parameter.sub(ax), state.at("mu"));
            state.at("eta").copy_(step.mul(lambd * lr).add(1).pow(alpha).reciprocal().mul(lr));
            state.at("mu").copy_(at::scalar_tensor(1 / std::max(1.0, step.item<double>() - t0), at::kFloat));
        }
    }

    void multiTensorUpdate(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                           const std::vector<SlotState*>& states, double lr, double lambd, double alpha, double t0, double weightDecay,
                           bool maximize) const
    {
        if (torch2()) {
            multiTensorUpdate2(parameters, gradients, states, lr, lambd, alpha, t0, weightDecay, maximize);
            return;
        }
        std::vector<at::Tensor> grads;
        for (const at::Tensor& gradient : gradients)
            grads.push_back(maximize ? gradient.neg() : gradient);
        // update step
        for (SlotState* state : states)
            state->at("step").add_(1);
        if (weightDecay != 0)
            for (std::size_t i = 0; i < parameters.size(); ++i)
                grads[i] = grads[i].add(parameters[i], weightDecay);
        const double eta = states[0]->at("eta").item<double>();
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            // decay term
            parameter.mul_(1 - lambd * eta);
            // update parameter
            parameter.add_(grads[i], -eta);
        }
        // averaging
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor& mu = states[i]->at("mu");
            at::Tensor& ax = states[i]->at("ax");
            if (mu.item<double>() != 1)
                ax.add_(parameters[i].sub(ax).mul(mu));
            else
                ax.copy_(parameters[i]);
        }
        // update eta and mu
        for (SlotState* state : states) {
            const double step = state->at("step").item<double>();
            state->at("eta").copy_(at::scalar_tensor(lr / std::pow((1 + lambd * lr * step), alpha), at::kFloat));
            state->at("mu").copy_(at::scalar_tensor(1 / std::max(1.0, step - t0), at::kFloat));
        }
    }

};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAsgdContract(TorchRelease release) { return std::make_shared<AsgdContract>(release); }

}  // namespace zkdv::optim
