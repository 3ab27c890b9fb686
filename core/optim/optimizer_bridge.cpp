#include "zkdv/optim/optimizer_bridge.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <ATen/core/grad_mode.h>

#include "zkdv/tape/scheduled_option.h"

namespace zkdv::optim {

std::vector<std::size_t> bindByIdentity(const std::vector<at::Tensor>& groupParameters, const std::vector<at::Tensor>& canonical)
{
    std::unordered_map<const void*, std::size_t> positions;
    for (std::size_t i = 0; i < canonical.size(); ++i)
        positions.emplace(canonical[i].unsafeGetTensorImpl(), i);
    std::vector<std::size_t> bound;
    for (const at::Tensor& parameter : groupParameters) {
        auto it = positions.find(parameter.unsafeGetTensorImpl());
        if (it == positions.end())
            throw ContractError("prepared optimizer parameters must exactly cover the prepared model: the optimizer holds a tensor the model does not");
        bound.push_back(it->second);
    }
    return bound;
}

OptimizerBridge::OptimizerBridge(std::shared_ptr<const OptimizerContract> contract, std::vector<BoundGroup> groups, std::size_t parameterCount)
    : contract_(std::move(contract)), groups_(std::move(groups)), parameterCount_(parameterCount)
{
    std::vector<GroupOptions> options;
    std::vector<int> owners(parameterCount_, -1);
    for (std::size_t g = 0; g < groups_.size(); ++g) {
        groups_[g].options = contract_->normalize(groups_[g].options);
        options.push_back(groups_[g].options);
        for (std::size_t position : groups_[g].positions) {
            if (position >= parameterCount_ || owners[position] != -1)
                throw ContractError("prepared optimizer parameters must exactly cover the prepared model: parameter " +
                                    std::to_string(position) + (position >= parameterCount_ ? " does not exist" : " is in two groups"));
            owners[position] = static_cast<int>(g);
        }
    }
    for (std::size_t position = 0; position < parameterCount_; ++position)
        if (owners[position] == -1)
            throw ContractError("prepared optimizer parameters must exactly cover the prepared model: parameter " + std::to_string(position) +
                                " is in no optimizer group");
    contract_->validate(options);
}

std::vector<SlotState> OptimizerBridge::initialState(const std::vector<at::Tensor>& parameters) const
{
    if (parameters.size() != parameterCount_)
        throw ContractError("initialState needs " + std::to_string(parameterCount_) + " parameters, got " + std::to_string(parameters.size()));
    at::NoGradGuard noGrad;
    std::vector<SlotState> states(parameterCount_);
    for (const BoundGroup& group : groups_)
        for (std::size_t position : group.positions)
            states[position] = contract_->initialize(parameters[position], group.options);
    packState(states);
    return states;
}

OptimizerBridge::Transition OptimizerBridge::transition(const std::vector<at::Tensor>& parameters, const std::vector<SlotState>& state,
                                                        const std::vector<at::Tensor>& gradients) const
{
    if (parameters.size() != parameterCount_ || state.size() != parameterCount_ || gradients.size() != parameterCount_)
        throw ContractError("optimizer transition needs " + std::to_string(parameterCount_) + " parameters, states and gradients");
    at::NoGradGuard noGrad;
    Transition result;
    result.parameters.resize(parameterCount_);
    result.deltas.resize(parameterCount_);
    result.state.resize(parameterCount_);
    for (const BoundGroup& group : groups_) {
        std::vector<at::Tensor> updated, activeGradients;
        std::vector<SlotState*> activeStates;
        std::vector<std::size_t> active;
        for (std::size_t position : group.positions)
            result.state[position] = cloneState(state[position]);
        for (std::size_t position : group.positions) {
            if (!gradients[position].defined())
                continue;
            active.push_back(position);
            updated.push_back(parameters[position].clone());
            activeGradients.push_back(gradients[position]);
            activeStates.push_back(&result.state[position]);
        }
        if (!active.empty())
            contract_->update(updated, activeGradients, activeStates, group.options);
        for (std::size_t i = 0; i < active.size(); ++i) {
            result.deltas[active[i]] = updated[i] - parameters[active[i]];
            result.parameters[active[i]] = updated[i];
        }
        for (std::size_t position : group.positions)
            if (!result.deltas[position].defined()) {
                result.deltas[position] = at::zeros_like(parameters[position]);
                result.parameters[position] = parameters[position];
            }
    }
    for (const at::Tensor& delta : result.deltas)
        if (!delta.defined())
            throw ContractError("optimizer bridge left a model parameter unbound");
    return result;
}

std::vector<at::Tensor> OptimizerBridge::stepInPlace(const std::vector<at::Tensor>& parameters, std::vector<SlotState>& state,
                                                     const std::vector<at::Tensor>& gradients) const
{
    if (parameters.size() != parameterCount_ || state.size() != parameterCount_ || gradients.size() != parameterCount_)
        throw ContractError("optimizer step needs " + std::to_string(parameterCount_) + " parameters, states and gradients");
    at::NoGradGuard noGrad;
    std::vector<at::Tensor> deltas(parameterCount_);
    for (const BoundGroup& group : groups_) {
        std::vector<at::Tensor> stepped, activeGradients, before;
        std::vector<SlotState*> activeStates;
        std::vector<std::size_t> active;
        for (std::size_t position : group.positions) {
            if (!gradients[position].defined()) {
                deltas[position] = at::zeros_like(parameters[position]);
                continue;
            }
            active.push_back(position);
            stepped.push_back(parameters[position]);
            before.push_back(parameters[position].clone());
            activeGradients.push_back(gradients[position]);
            activeStates.push_back(&state[position]);
        }
        if (active.empty())
            continue;
        contract_->update(stepped, activeGradients, activeStates, group.options);
        // after - before into the copy of before: the subtraction transition() computes.
        for (std::size_t i = 0; i < active.size(); ++i)
            deltas[active[i]] = at::sub_out(before[i], stepped[i], before[i]);
    }
    return deltas;
}

void OptimizerBridge::takeOptions(const std::vector<GroupOptions>& current)
{
    const std::string tail = scheduled_.empty()
        ? "; the tape records the options a scheduler moves when the optimizer has one before the first transaction "
          "(proof.prepare(scheduler), docs/python.md), others are static: create a new proof for the new optimizer schedule"
        : "; only the options the tape's schedule moves may change: create a new proof for the new optimizer schedule";
    if (current.size() != groups_.size())
        throw ContractError("the prepared optimizer has " + std::to_string(current.size()) + " parameter groups, the tape recorded " +
                            std::to_string(groups_.size()) + tail);
    std::vector<GroupOptions> taken(current.size());
    for (std::size_t g = 0; g < current.size(); ++g) {
        taken[g] = contract_->normalize(current[g]);
        // A scheduled option (or element, "betas[0]") may hold any number: compared as the
        // value it had, so that only the rest of the group must be unchanged.
        GroupOptions compared = taken[g];
        for (const std::string& entry : scheduled_) {
            nlohmann::json* value = scheduledValue(compared, entry);
            const nlohmann::json* was = scheduledValue(groups_[g].options, entry);
            if (value && was && value->is_number())
                *value = *was;
        }
        std::string changed;
        for (const auto& [key, value] : compared.items()) {
            const auto was = groups_[g].options.find(key);
            if (was == groups_[g].options.end() || *was != value)
                changed += (changed.empty() ? "" : ", ") + key + " " + (was == groups_[g].options.end() ? std::string("(none)") : was->dump()) +
                           " -> " + taken[g][key].dump();
        }
        if (!changed.empty())
            throw ContractError("optimizer options of parameter group " + std::to_string(g) + " changed after the tape recorded them (" +
                                changed + ")" + tail);
    }
    for (std::size_t g = 0; g < current.size(); ++g)
        for (const std::string& entry : scheduled_)
            if (nlohmann::json* into = scheduledValue(groups_[g].options, entry))
                if (const nlohmann::json* value = scheduledValue(taken[g], entry))
                    *into = *value;
}

void OptimizerBridge::setScheduledValue(const std::string& option, const std::vector<double>& perGroup)
{
    for (std::size_t g = 0; g < groups_.size() && g < perGroup.size(); ++g) {
        nlohmann::json* value = scheduledValue(groups_[g].options, option);
        if (!value)
            throw ContractError("parameter group " + std::to_string(g) + " has no option " + option + " to schedule");
        // An integer stays one while the schedule leaves it (torch's arithmetic follows the
        // type: ASGD's eta is torch.tensor(lr)); a value the scheduler computed is a float.
        if (value->is_number_integer() && value->get<double>() == perGroup[g])
            continue;
        *value = perGroup[g];
    }
}

void packState(std::vector<SlotState>& states)
{
    using Key = std::tuple<std::string, std::vector<std::int64_t>, int, std::string>;
    std::map<Key, std::vector<at::Tensor*>> families;
    for (SlotState& state : states)
        for (auto& [slot, tensor] : state)
            if (tensor.defined() && tensor.layout() == at::kStrided)
                families[Key{slot, tensor.sizes().vec(), static_cast<int>(tensor.scalar_type()), tensor.device().str()}].push_back(&tensor);
    at::NoGradGuard noGrad;
    for (auto& [key, members] : families) {
        if (members.size() < 2)
            continue;
        std::vector<std::int64_t> shape = std::get<1>(key);
        shape.insert(shape.begin(), static_cast<std::int64_t>(members.size()));
        at::Tensor buffer = at::empty(shape, members.front()->options());
        for (std::size_t i = 0; i < members.size(); ++i) {
            buffer[static_cast<std::int64_t>(i)].copy_(*members[i]);
            *members[i] = buffer[static_cast<std::int64_t>(i)];
        }
    }
}

SlotState cloneState(const SlotState& state)
{
    SlotState copy;
    for (const auto& [slot, tensor] : state)
        copy.emplace(slot, tensor.defined() ? tensor.clone() : tensor);
    return copy;
}

}  // namespace zkdv::optim
