#pragma once
// A functional optimizer contract used as an ordinary libtorch optimizer: step() over the
// parameters' .grad(), with torch.optim's lazy state, so C++ programs get every optimizer
// torch.optim has (libtorch's own API lacks nine of them).

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

struct ParameterGroup {
    std::vector<at::Tensor> parameters;
    GroupOptions options = GroupOptions::object();
};

class ContractOptimizer {
public:
    // Throws ContractError when the contract refuses the groups.
    ContractOptimizer(std::shared_ptr<const OptimizerContract> contract, std::vector<ParameterGroup> groups);
    // A built-in contract by torch.optim class name, one group.
    ContractOptimizer(const std::string& name, std::vector<at::Tensor> parameters, GroupOptions options = GroupOptions::object());

    // One step for every parameter with a defined gradient; others are skipped, as in torch.
    void step();
    // Resets gradients (to undefined, as torch's set_to_none=True default).
    void zeroGrad();

    const std::vector<ParameterGroup>& groups() const { return groups_; }
    // Mutable, as torch's param_groups, for schedules that change options between steps.
    std::vector<ParameterGroup>& groups() { return groups_; }
    const OptimizerContract& contract() const { return *contract_; }
    // The parameter's state; empty until its first step, as in torch.
    const SlotState& state(const at::Tensor& parameter) const;
    // Sets the parameter's state, as torch's load_state_dict does (a checkpoint's, to resume a
    // run); its slots are taken as they are, and the first step uses them.
    void loadState(const at::Tensor& parameter, SlotState state);

private:
    std::shared_ptr<const OptimizerContract> contract_;
    std::vector<ParameterGroup> groups_;
    std::unordered_map<const void*, SlotState> states_;
};

}  // namespace zkdv::optim
