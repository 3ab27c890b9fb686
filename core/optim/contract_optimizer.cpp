#include "zkdv/optim/contract_optimizer.h"

#include <ATen/core/grad_mode.h>

#include "zkdv/optim/contract_registry.h"

namespace zkdv::optim {

ContractOptimizer::ContractOptimizer(std::shared_ptr<const OptimizerContract> contract, std::vector<ParameterGroup> groups)
    : contract_(std::move(contract)), groups_(std::move(groups))
{
    std::vector<GroupOptions> options;
    for (ParameterGroup& group : groups_) {
        group.options = contract_->normalize(group.options);
        options.push_back(group.options);
    }
    contract_->validate(options);
    if (contract_->initializesEagerly()) {
        at::NoGradGuard noGrad;
        for (const ParameterGroup& group : groups_)
            for (const at::Tensor& parameter : group.parameters)
                states_[parameter.unsafeGetTensorImpl()] = contract_->initialize(parameter, group.options);
    }
}

namespace {
std::shared_ptr<const OptimizerContract> builtin(const std::string& name)
{
    static const ContractRegistry registry;
    return registry.resolve(name);
}
}  // namespace

ContractOptimizer::ContractOptimizer(const std::string& name, std::vector<at::Tensor> parameters, GroupOptions options)
    : ContractOptimizer(builtin(name), {ParameterGroup{std::move(parameters), std::move(options)}})
{
}

void ContractOptimizer::step()
{
    at::NoGradGuard noGrad;
    for (const ParameterGroup& group : groups_) {
        std::vector<at::Tensor> parameters, gradients;
        std::vector<SlotState*> states;
        for (const at::Tensor& parameter : group.parameters) {
            const at::Tensor& gradient = parameter.grad();
            if (!gradient.defined())
                continue;
            SlotState& state = states_[parameter.unsafeGetTensorImpl()];
            if (state.empty())
                state = contract_->initialize(parameter, group.options);
            // Aliases without autograd metadata (same storage and version counter), as
            // torch's optimizers step `p.data()`: in-place ops on a leaf that requires grad
            // pass through autograd's dispatch even under NoGradGuard, which cost SGD's
            // bandwidth-bound step 3-6 % (docs/performance.md).
            parameters.push_back(parameter.detach());
            gradients.push_back(gradient.detach());
            states.push_back(&state);
        }
        if (!parameters.empty())
            contract_->update(parameters, gradients, states, group.options);
    }
}

void ContractOptimizer::zeroGrad()
{
    for (ParameterGroup& group : groups_)
        for (at::Tensor& parameter : group.parameters)
            parameter.mutable_grad() = at::Tensor();
}

const SlotState& ContractOptimizer::state(const at::Tensor& parameter) const
{
    static const SlotState empty;
    auto it = states_.find(parameter.unsafeGetTensorImpl());
    return it == states_.end() ? empty : it->second;
}

void ContractOptimizer::loadState(const at::Tensor& parameter, SlotState state)
{
    states_[parameter.unsafeGetTensorImpl()] = std::move(state);
}

}  // namespace zkdv::optim
