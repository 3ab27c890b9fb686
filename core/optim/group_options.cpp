#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

double numberOption(const GroupOptions& group, const char* name)
{
    auto it = group.find(name);
    if (it == group.end() || !it->is_number())
        throw ContractError(std::string("optimizer option ") + name + " must be a number" +
                            (it == group.end() ? std::string(" but is missing") : ", found " + it->dump()));
    return it->get<double>();
}

bool flagOption(const GroupOptions& group, const char* name)
{
    auto it = group.find(name);
    if (it == group.end() || it->is_null())
        return false;
    if (!it->is_boolean())
        throw ContractError(std::string("optimizer option ") + name + " must be true or false, found " + it->dump());
    return it->get<bool>();
}

std::pair<double, double> pairOption(const GroupOptions& group, const char* name)
{
    auto it = group.find(name);
    if (it == group.end() || !it->is_array() || it->size() != 2 || !(*it)[0].is_number() || !(*it)[1].is_number())
        throw ContractError(std::string("optimizer option ") + name + " must be a pair of numbers" +
                            (it == group.end() ? std::string(" but is missing") : ", found " + it->dump()));
    return {(*it)[0].get<double>(), (*it)[1].get<double>()};
}

at::Tensor& requireSlot(SlotState& state, const std::string& contract, const char* name)
{
    auto it = state.find(name);
    if (it == state.end())
        throw ContractError(contract + ": parameter state lacks the \"" + name + "\" slot");
    return it->second;
}

void refuseOption(const GroupOptions& group, const char* name, const nlohmann::json& value, const std::string& why)
{
    auto it = group.find(name);
    if (it != group.end() && *it == value)
        throw ContractError(std::string("optimizer option ") + name + "=" + value.dump() + " is not supported: " + why);
}

void refuseComplex(const std::string& contract, const at::Tensor& parameter)
{
    if (parameter.is_complex())
        throw ContractError(contract + ": complex parameters are not supported; register a custom functional optimizer contract");
}

void refuseSparse(const std::string& contract, const at::Tensor& gradient)
{
    if (gradient.layout() != at::kStrided)
        throw ContractError(contract + " does not support sparse gradients (torch raises too)");
}

}  // namespace zkdv::optim
