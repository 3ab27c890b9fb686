// Functional contract for torch.optim.SGD (torch 1.13 single-tensor update).

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class SgdContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "SGD"; }

    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", nullptr}, {"momentum", 0.0}, {"dampening", 0.0}, {"weight_decay", 0.0}, {"nesterov", false},
                {"maximize", false}, {"foreach", nullptr}, {"differentiable", false}};
        if (torch2()) {  // options torch 2.x added, and lr no longer required
            options["lr"] = 1e-3;
            options["fused"] = nullptr;
        }
        return options;
    }

    // The momentum buffer appears at the first step, as a copy of that step's direction.
    SlotState initialize(const at::Tensor&, const GroupOptions&) const override { return {}; }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const double momentum = numberOption(group, "momentum");
        const double dampening = numberOption(group, "dampening");
        const double weightDecay = numberOption(group, "weight_decay");
        const bool nesterov = flagOption(group, "nesterov");
        const bool maximize = flagOption(group, "maximize");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            at::Tensor direction = maximize ? gradients[i].neg() : gradients[i];
            if (weightDecay != 0)
                direction = direction.add(parameter, weightDecay);
            if (momentum != 0) {
                SlotState& state = *states[i];
                auto buffer = state.find("momentum_buffer");
                if (buffer == state.end()) {
                    buffer = state.emplace("momentum_buffer", direction.clone().detach()).first;
                } else {
                    buffer->second.mul_(momentum).add_(direction, 1 - dampening);
                }
                direction = nesterov ? direction.add(buffer->second, momentum) : buffer->second;
            }
            parameter.add_(direction, -lr);
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        if (flagOption(group, "nesterov") && (numberOption(group, "momentum") <= 0 || numberOption(group, "dampening") != 0))
            throw ContractError("SGD: Nesterov momentum requires a momentum and zero dampening");
        if (numberOption(group, "lr") < 0)
            throw ContractError("SGD: invalid learning rate " + group["lr"].dump());
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeSgdContract(TorchRelease release) { return std::make_shared<SgdContract>(release); }

}  // namespace zkdv::optim
