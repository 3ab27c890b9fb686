#pragma once
// The state-preserving bridge from an optimizer's groups to its functional contract:
// groups bound to the model's canonical parameter order, and a transition that returns
// deltas and the next state without touching its inputs (the seed's OptimizerBridge).

#include <memory>
#include <vector>

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

// One parameter group bound to canonical positions (indexes into the model's parameters).
struct BoundGroup {
    std::vector<std::size_t> positions;
    GroupOptions options;
};

// Binds groups of tensors to the canonical order by tensor identity. Throws ContractError
// unless the groups' parameters exactly cover `canonical`, each once.
std::vector<std::size_t> bindByIdentity(const std::vector<at::Tensor>& groupParameters, const std::vector<at::Tensor>& canonical);

class OptimizerBridge {
public:
    // Validates and normalizes the options; throws ContractError unless the groups cover
    // positions 0..parameterCount-1 exactly once.
    OptimizerBridge(std::shared_ptr<const OptimizerContract> contract, std::vector<BoundGroup> groups, std::size_t parameterCount);

    const OptimizerContract& contract() const { return *contract_; }
    const std::vector<BoundGroup>& groups() const { return groups_; }
    std::size_t parameterCount() const { return parameterCount_; }

    // The state before the first step, for every canonical parameter, with slots of equal
    // name, shape, dtype and device packed into shared contiguous buffers.
    std::vector<SlotState> initialState(const std::vector<at::Tensor>& parameters) const;

    struct Transition {
        // The parameters after the step, per canonical parameter. Training applies these,
        // not before + delta: (after - before) + before need not round back to after, and
        // torch.optim leaves `after` in the parameter.
        std::vector<at::Tensor> parameters;
        std::vector<at::Tensor> deltas;  // after - before, per canonical parameter
        std::vector<SlotState> state;    // the next state, per canonical parameter
    };
    // One step. gradients[i] undefined means parameter i has no gradient this step: it is
    // left unchanged (delta zero) but stays bound. Inputs are not modified.
    Transition transition(const std::vector<at::Tensor>& parameters, const std::vector<SlotState>& state,
                          const std::vector<at::Tensor>& gradients) const;

    // The same step on the caller's own tensors: `parameters` (aliases of the model's) and
    // `state` are updated in place, bit for bit as transition() would compute them, and the
    // deltas are returned. The recorder steps this way, without copying parameters and state.
    // When the contract throws, groups stepped before the failing one stay stepped.
    std::vector<at::Tensor> stepInPlace(const std::vector<at::Tensor>& parameters, std::vector<SlotState>& state,
                                        const std::vector<at::Tensor>& gradients) const;

    // Options a schedule moves (tape format 1.6, section 3.3): they may change between steps,
    // and each step uses their current values. Every other option is static.
    void setScheduled(std::vector<std::string> options) { scheduled_ = std::move(options); }
    const std::vector<std::string>& scheduled() const { return scheduled_; }

    // Takes the scheduled options' values from `current` for the next steps, and refuses
    // static options that differ from those the bridge was sealed with, naming the option and
    // both values ("create a new proof for the new optimizer options").
    void takeOptions(const std::vector<GroupOptions>& current);
    // A scheduled option's value in each group for the next steps (the replay's, from a
    // transaction record).
    void setScheduledValue(const std::string& option, const std::vector<double>& perGroup);

private:
    std::shared_ptr<const OptimizerContract> contract_;
    std::vector<BoundGroup> groups_;
    std::size_t parameterCount_;
    std::vector<std::string> scheduled_;
};

// Rebinds state tensors with equal slot name, shape, dtype and device (and at least two
// members) to views of one contiguous buffer each.
void packState(std::vector<SlotState>& states);

// A deep copy: every tensor cloned.
SlotState cloneState(const SlotState& state);

}  // namespace zkdv::optim
