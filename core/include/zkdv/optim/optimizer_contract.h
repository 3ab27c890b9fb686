#pragma once
// The functional form of one torch.optim optimizer: the state it keeps per parameter and
// its parameter-group update, so that a step can be replayed exactly (training side: this
// header exposes torch types).

#include <map>
#include <set>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <nlohmann/json.hpp>

#include "zkdv/optim/torch_release.h"
#include "zkdv/util/error.h"

namespace zkdv::optim {

// A group's options as torch.optim keeps them in param_groups (minus "params"):
// numbers, booleans, null, and pairs such as betas as two-element arrays.
using GroupOptions = nlohmann::json;

// One parameter's optimizer state: slot name -> tensor, ordered by name (the canonical
// slot order of the tape). Scalar slots such as "step" are 0-dimensional tensors.
using SlotState = std::map<std::string, at::Tensor>;

// An optimizer configuration or use that a contract cannot represent; says which option
// or parameter and what to do instead.
class ContractError : public Error {
public:
    using Error::Error;
};

class OptimizerContract {
public:
    // `release`: the torch whose torch.optim this contract reproduces (its options and its
    // arithmetic); built-in contracts exist for the proven releases only. A custom contract
    // may leave it unset.
    explicit OptimizerContract(TorchRelease release = {}) : release_(release) {}
    virtual ~OptimizerContract() = default;

    const TorchRelease& release() const { return release_; }

    // The torch.optim class name this contract reproduces ("Adam", "SGD", …).
    virtual std::string name() const = 0;
    // Every option torch's constructor takes, with torch's default value.
    virtual GroupOptions defaults() const = 0;

    // Fills options a group leaves out with defaults(); refuses names torch does not have.
    GroupOptions normalize(const GroupOptions& group) const;
    // Refuses what the contract cannot represent: differentiable=true, tensor-valued or
    // structured options, unknown options, and each contract's unsupported modes.
    void validate(const std::vector<GroupOptions>& groups) const;

    // True for optimizers whose torch constructor creates every parameter's state up front
    // (Adagrad); the others create it at a parameter's first step with a gradient.
    virtual bool initializesEagerly() const { return false; }
    // Slots torch keeps as a Python number, not a tensor (RMSprop's step in torch 1.13).
    // initialize() gives them as 0-d tensors of the number's type; a tape may hold them in
    // another numeric dtype (docs/tape-format.md, section 6.1), so a replay compares their
    // value, not their dtype.
    virtual std::set<std::string> numberSlots() const { return {}; }
    // The state torch would lazily create for `parameter` under `group`.
    virtual SlotState initialize(const at::Tensor& parameter, const GroupOptions& group) const = 0;
    // One functional group update, in place: parameters[i] and *states[i] advance by one
    // step under gradients[i]. Every listed parameter has a gradient.
    virtual void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                        const std::vector<SlotState*>& states, const GroupOptions& group) const = 0;

protected:
    // Contract-specific refusals for one normalized group; throw ContractError.
    virtual void validateGroup(const GroupOptions& group) const;
    // True when reproducing torch 2.x, whose update rules differ from 1.13's in places.
    bool torch2() const { return release_.major >= 2; }

private:
    TorchRelease release_;
};

}  // namespace zkdv::optim
