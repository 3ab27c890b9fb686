// Functional contract for torch.optim.RMSprop (torch 1.13 single-tensor update).

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class RmspropContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "RMSprop"; }

    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1e-2}, {"alpha", 0.99}, {"eps", 1e-8}, {"weight_decay", 0}, {"momentum", 0}, {"centered", false},
                {"foreach", nullptr}, {"maximize", false}, {"differentiable", false}};
        if (torch2()) {  // options torch 2.x added
            options["capturable"] = false;
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

    // torch 1.13 keeps step as a Python int (recorded as a 0-d int64 tensor), 2.x as a float32 tensor; momentum_buffer only
    // with momentum > 0, grad_avg only when centered.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions& group) const override
    {
        refuseComplex(name(), parameter);
        SlotState state{{"step", torch2() ? at::zeros({}, at::kFloat) : at::scalar_tensor(0, at::kLong)},
                        {"square_avg", at::zeros_like(parameter)}};
        if (numberOption(group, "momentum") > 0)
            state.emplace("momentum_buffer", at::zeros_like(parameter));
        if (flagOption(group, "centered"))
            state.emplace("grad_avg", at::zeros_like(parameter));
        return state;
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const double alpha = numberOption(group, "alpha");
        const double eps = numberOption(group, "eps");
        const double weightDecay = numberOption(group, "weight_decay");
        const double momentum = numberOption(group, "momentum");
        const bool centered = flagOption(group, "centered");
        const bool maximize = flagOption(group, "maximize");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            refuseComplex(name(), parameter);
            refuseSparse(name(), gradients[i]);
            SlotState& state = *states[i];
            at::Tensor& squareAvg = state.at("square_avg");
            state.at("step").add_(1);
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            if (weightDecay != 0)
                grad = grad.add(parameter, weightDecay);
            squareAvg.mul_(alpha).addcmul_(grad, grad, 1 - alpha);
            at::Tensor avg;
            if (centered) {
                at::Tensor& gradAvg = state.at("grad_avg");
                if (torch2())
                    gradAvg.lerp_(grad, 1 - alpha);
                else
                    gradAvg.mul_(alpha).add_(grad, 1 - alpha);
                avg = squareAvg.addcmul(gradAvg, gradAvg, -1).sqrt_();
            } else {
                avg = squareAvg.sqrt();
            }
            avg = avg.add_(eps);
            if (momentum > 0) {
                at::Tensor& buffer = state.at("momentum_buffer");
                buffer.mul_(momentum).addcdiv_(grad, avg);
                parameter.add_(buffer, -lr);
            } else {
                parameter.addcdiv_(grad, avg, -lr);
            }
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        for (const char* option : {"lr", "eps", "momentum", "weight_decay", "alpha"})
            if (!(0.0 <= numberOption(group, option)))
                throw ContractError(std::string("RMSprop: invalid ") + option + " value " + group[option].dump());
    }

private:
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeRmspropContract(TorchRelease release) { return std::make_shared<RmspropContract>(release); }

}  // namespace zkdv::optim
