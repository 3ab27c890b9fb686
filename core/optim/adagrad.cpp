// Functional contract for torch.optim.Adagrad (torch 1.13 single-tensor update).

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

// torch's _make_sparse: a COO tensor of grad's size, or an empty one when there is nothing to add.
at::Tensor makeSparse(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& values)
{
    if (indices.numel() == 0 || values.numel() == 0)
        return at::empty_like(grad);
    return at::sparse_coo_tensor(indices, values, grad.sizes());
}

class AdagradContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "Adagrad"; }

    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1e-2}, {"lr_decay", 0}, {"weight_decay", 0}, {"initial_accumulator_value", 0}, {"eps", 1e-10},
                {"foreach", nullptr}, {"maximize", false}};
        if (torch2()) {  // options torch 2.x added
            options["differentiable"] = false;
            options["fused"] = nullptr;
        }
        return options;
    }

    // torch's constructor creates every parameter's state: a float32 step of 0 and a sum filled
    // with initial_accumulator_value.
    bool initializesEagerly() const override { return true; }

    SlotState initialize(const at::Tensor& parameter, const GroupOptions& group) const override
    {
        refuseComplex(name(), parameter);
        return {{"step", at::scalar_tensor(0.0, at::kFloat)},
                {"sum", at::full_like(parameter, numberOption(group, "initial_accumulator_value"))}};
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const double lrDecay = numberOption(group, "lr_decay");
        const double weightDecay = numberOption(group, "weight_decay");
        const double eps = numberOption(group, "eps");
        const bool maximize = flagOption(group, "maximize");
        bool hasSparseGrad = false;
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            refuseComplex(name(), parameters[i]);
            if (gradients[i].layout() != at::kStrided && !gradients[i].is_sparse())
                throw ContractError("Adagrad: only dense and sparse COO gradients are supported");
            hasSparseGrad = hasSparseGrad || gradients[i].is_sparse();
        }
        // foreach=true takes torch's multi-tensor path, whose learning rate arithmetic differs;
        // with a sparse gradient in the group it falls back to the single-tensor path.
        if (flagOption(group, "foreach") && !hasSparseGrad) {
            if (torch2())
                multiTensorUpdate2(parameters, gradients, states, lr, lrDecay, weightDecay, eps, maximize);
            else
                multiTensorUpdate(parameters, gradients, states, lr, lrDecay, weightDecay, eps, maximize);
            return;
        }
        if (flagOption(group, "foreach") && maximize)
            throw ContractError("Adagrad: foreach=true with maximize=true fails in torch 1.13 for sparse gradients (_foreach_neg has no sparse kernel)");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            SlotState& state = *states[i];
            at::Tensor& sum = state.at("sum");
            at::Tensor& stepTensor = state.at("step");
            // update step
            stepTensor.add_(1);
            const double step = stepTensor.item<double>();
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            if (weightDecay != 0) {
                if (grad.is_sparse())
                    throw ContractError("Adagrad: weight_decay option is not compatible with sparse gradients");
                grad = grad.add(parameter, weightDecay);
            }
            const double clr = lr / (1 + (step - 1) * lrDecay);
            if (grad.is_sparse()) {
                grad = grad.coalesce();  // the update is non-linear so indices must be unique
                at::Tensor indices = grad._indices();
                at::Tensor values = grad._values();
                sum.add_(makeSparse(grad, indices, values.pow(2)));
                at::Tensor std = sum.sparse_mask(grad);
                at::Tensor stdValues = std._values().sqrt_().add_(eps);
                parameter.add_(makeSparse(grad, indices, values / stdValues), -clr);
            } else {
                sum.addcmul_(grad, grad, 1);
                at::Tensor std = sum.sqrt().add_(eps);
                parameter.addcdiv_(grad, std, -clr);
            }
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        for (const char* option : {"lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps"})
            if (!(0.0 <= numberOption(group, option)))
                throw ContractError(std::string("Adagrad: invalid ") + option + " value " + group[option].dump());
    }

private:
    // torch 2.x's _multi_tensor_adagrad, tensor by tensor: -clr is a Python float again, and
    // the gradient is scaled by it before the division.
    static void multiTensorUpdate2(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                                   const std::vector<SlotState*>& states, double lr, double lrDecay, double weightDecay, double eps,
                                   bool maximize)
    {
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            SlotState& state = *states[i];
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            at::Tensor& step = state.at("step");
            step.add_(1);
            if (weightDecay != 0)
                grad = grad.add(parameter, weightDecay);
            const double minusClr = -lr / (1 + (step.item<double>() - 1) * lrDecay);
            at::Tensor& sum = state.at("sum");
            sum.addcmul_(grad, grad, 1);
            at::Tensor std = sum.sqrt();
            std.add_(eps);
            parameter.addcdiv_(grad.mul(minusClr), std);
        }
    }

    // torch 1.13's _multi_tensor_adagrad, tensor by tensor (its CPU foreach ops are per-tensor
    // loops): the step count stays a float32 tensor, so -clr is computed in float32 tensor
    // arithmetic (Python's `-lr / t` is t.reciprocal() * -lr). torch adds weight decay into
    // .grad in place; here it is added out of place, with the same values.
    static void multiTensorUpdate(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                                  const std::vector<SlotState*>& states, double lr, double lrDecay, double weightDecay, double eps,
                                  bool maximize)
    {
        std::vector<at::Tensor> grads;
        for (const at::Tensor& gradient : gradients)
            grads.push_back(maximize ? gradient.neg() : gradient);
        for (SlotState* state : states)
            state->at("step").add_(1);
        if (weightDecay != 0)
            for (std::size_t i = 0; i < parameters.size(); ++i)
                grads[i] = grads[i].add(parameters[i], weightDecay);
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            SlotState& state = *states[i];
            at::Tensor& sum = state.at("sum");
            at::Tensor minusClr = state.at("step").sub(1).mul(lrDecay).add(1).reciprocal().mul(-lr);
            sum.addcmul_(grads[i], grads[i], 1);
            at::Tensor std = sum.sqrt().add(eps);
            at::Tensor toAdd = grads[i].mul(minusClr).div(std);
            parameter.add_(toAdd);
        }
    }

};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAdagradContract(TorchRelease release) { return std::make_shared<AdagradContract>(release); }

}  // namespace zkdv::optim
