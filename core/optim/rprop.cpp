// Functional contract for torch.optim.Rprop (torch 1.13 single-tensor update).

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class RpropContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "Rprop"; }

    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1e-2}, {"etas", {0.5, 1.2}}, {"step_sizes", {1e-6, 50}}, {"foreach", nullptr}, {"maximize", false}};
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

    // torch 1.13 keeps step as a Python int (recorded as a 0-d int64 tensor), 2.x as a float32 tensor; step_size starts filled
    // with lr (torch shapes it like the gradient, which has the parameter's shape and dtype).
    SlotState initialize(const at::Tensor& parameter, const GroupOptions& group) const override
    {
        refuseComplex(name(), parameter);
        return {{"step", torch2() ? at::zeros({}, at::kFloat) : at::scalar_tensor(0, at::kLong)},
                {"prev", at::zeros_like(parameter)},
                {"step_size", at::empty(parameter.sizes(), parameter.options()).fill_(numberOption(group, "lr"))}};
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const auto [etaminus, etaplus] = pairOption(group, "etas");
        const auto [stepSizeMin, stepSizeMax] = pairOption(group, "step_sizes");
        const bool maximize = flagOption(group, "maximize");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            refuseComplex(name(), parameter);
            refuseSparse(name(), gradients[i]);
            SlotState& state = *states[i];
            at::Tensor& prev = state.at("prev");
            at::Tensor& stepSize = state.at("step_size");
            state.at("step").add_(1);
            at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            at::Tensor sign = grad.mul(prev).sign();
            sign.index_put_({sign.gt(0)}, etaplus);
            sign.index_put_({sign.lt(0)}, etaminus);
            sign.index_put_({sign.eq(0)}, 1);
            // update stepsizes with step size updates
            stepSize.mul_(sign).clamp_(stepSizeMin, stepSizeMax);
            // for dir<0, dfdx=0; for dir>=0, dfdx=dfdx
            grad = grad.clone(at::MemoryFormat::Preserve);
            grad.index_put_({sign.eq(etaminus)}, 0);
            parameter.addcmul_(grad.sign(), stepSize, -1);
            prev.copy_(grad);
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        if (!(0.0 <= numberOption(group, "lr")))
            throw ContractError("Rprop: invalid learning rate " + group["lr"].dump());
        const auto [etaminus, etaplus] = pairOption(group, "etas");
        if (!(0.0 < etaminus && etaminus < 1.0 && 1.0 < etaplus))
            throw ContractError("Rprop: invalid eta values " + group["etas"].dump());
        pairOption(group, "step_sizes");
    }

private:
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeRpropContract(TorchRelease release) { return std::make_shared<RpropContract>(release); }

}  // namespace zkdv::optim
