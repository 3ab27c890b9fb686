// Functional contract for torch.optim.Adadelta (torch 1.13 single-tensor update).

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class AdadeltaContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "Adadelta"; }

    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1.0}, {"rho", 0.9}, {"eps", 1e-6}, {"weight_decay", 0}, {"foreach", nullptr}, {"maximize", false}};
        if (torch2()) {  // options torch 2.x added
            options["capturable"] = false;
            options["differentiable"] = false;
        }
        return options;
    }

    // torch 1.13 keeps step as a Python int; 2.x as a float32 0-d tensor.
    std::set<std::string> numberSlots() const override
    {
        if (torch2())
            return {};
        return {"step"};
    }

    // torch keeps step as a Python int (recorded as a 0-d int64 tensor).
    SlotState initialize(const at::Tensor& parameter, const GroupOptions&) const override
    {
        refuseComplex(name(), parameter);
        return {{"step", torch2() ? at::zeros({}, at::kFloat) : at::scalar_tensor(0, at::kLong)}, {"square_avg", at::zeros_like(parameter)}, {"acc_delta", at::zeros_like(parameter)}};
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const double rho = numberOption(group, "rho");
        const double eps = numberOption(group, "eps");
        const double weightDecay = numberOption(group, "weight_decay");
        const bool maximize = flagOption(group, "maximize");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            refuseComplex(name(), parameter);
            refuseSparse(name(), gradients[i]);
            SlotState& state = *states[i];
            at::Tensor& squareAvg = state.at("square_avg");
            at::Tensor& accDelta = state.at("acc_delta");
            state.at("step").add_(1);
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            if (weightDecay != 0)
                grad = grad.add(parameter, weightDecay);
            squareAvg.mul_(rho).addcmul_(grad, grad, 1 - rho);
            at::Tensor std = squareAvg.add(eps).sqrt_();
            at::Tensor delta = accDelta.add(eps).sqrt_().div_(std).mul_(grad);
            accDelta.mul_(rho).addcmul_(delta, delta, 1 - rho);
            parameter.add_(delta, -lr);
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        const double rho = numberOption(group, "rho");
        if (!(0.0 <= rho && rho <= 1.0))
            throw ContractError("Adadelta: invalid rho value " + group["rho"].dump());
        for (const char* option : {"lr", "eps", "weight_decay"})
            if (!(0.0 <= numberOption(group, option)))
                throw ContractError(std::string("Adadelta: invalid ") + option + " value " + group[option].dump());
    }

private:
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAdadeltaContract(TorchRelease release) { return std::make_shared<AdadeltaContract>(release); }

}  // namespace zkdv::optim
