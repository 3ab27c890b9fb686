#pragma once
// Typed reads of a normalized group's options and of parameter state, failing with the
// option's or slot's name.

#include <string>
#include <utility>

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

double numberOption(const GroupOptions& group, const char* name);
bool flagOption(const GroupOptions& group, const char* name);
// A two-number option such as betas or etas.
std::pair<double, double> pairOption(const GroupOptions& group, const char* name);
// The state slot `name`, or a ContractError naming the contract and the missing slot.
at::Tensor& requireSlot(SlotState& state, const std::string& contract, const char* name);
// Refuses a complex parameter, which no built-in contract represents.
void refuseComplex(const std::string& contract, const at::Tensor& parameter);
// Refuses a sparse (non-strided) gradient: torch's optimizers other than SparseAdam and
// Adagrad raise on them too.
void refuseSparse(const std::string& contract, const at::Tensor& gradient);
// Refuses the group when `name` is set to `value` (for modes a contract cannot represent).
void refuseOption(const GroupOptions& group, const char* name, const nlohmann::json& value, const std::string& why);

}  // namespace zkdv::optim
