#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

GroupOptions OptimizerContract::normalize(const GroupOptions& group) const
{
    if (!group.is_object())
        throw ContractError(name() + ": a parameter group's options must be an object of option values");
    GroupOptions normalized = defaults();
    for (const auto& [key, value] : group.items()) {
        if (key == "params")
            continue;
        if (!normalized.contains(key)) {
            // torch.optim.lr_scheduler's schedulers keep their own entries in the groups.
            for (const char* scheduled : {"initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"})
                if (key == scheduled)
                    throw ContractError(name() + ": parameter group entry \"" + key +
                                        "\" is a learning-rate scheduler's (torch.optim.lr_scheduler adds it), and this tape declared no "
                                        "schedule: a tape records a schedule whose scheduler exists before the first transaction "
                                        "(proof.prepare(scheduler), docs/python.md \"Schedules\"); create the scheduler before it, "
                                        "or record the new schedule in a proof of its own");
            throw ContractError(name() + ": \"" + key + "\" is not an option of torch.optim." + name() +
                                "; register a custom functional optimizer contract for it");
        }
        normalized[key] = value;
    }
    return normalized;
}

void OptimizerContract::validate(const std::vector<GroupOptions>& groups) const
{
    for (const GroupOptions& raw : groups) {
        GroupOptions group = normalize(raw);
        auto isTrue = [&](const char* option) { return group.contains(option) && group[option] == true; };
        if (isTrue("differentiable"))
            throw ContractError("ZKDV does not support differentiable optimizer steps (differentiable=true); register a custom functional optimizer contract");
        // Both modes run other kernels than the single-tensor update a contract replays, so
        // their rounding differs; a tape must not claim what a replay cannot reproduce.
        if (isTrue("capturable"))
            throw ContractError("optimizer option capturable=true is not supported: it is torch's CUDA-graph mode, which keeps the step "
                                "and bias corrections as device tensors and rounds differently from the update the contract replays");
        if (isTrue("fused"))
            throw ContractError("optimizer option fused=true is not supported: torch's fused kernels round differently from the "
                                "single-tensor update the contract replays");
        std::string structured;
        for (const auto& [key, value] : group.items()) {
            bool numbers = value.is_array();
            // Tuples of numbers, some of them None (Adafactor's eps=(None, 1e-3)), are static options.
            for (const auto& element : value)
                numbers = numbers && (element.is_number() || element.is_null());
            if (value.is_object() || (value.is_array() && !numbers))
                structured += (structured.empty() ? "" : ", ") + key;
        }
        if (!structured.empty())
            throw ContractError("ZKDV requires static optimizer options, but " + structured +
                                " are tensors or structured values; register a contract that includes dynamic options in optimizer state");
        validateGroup(group);
    }
}

void OptimizerContract::validateGroup(const GroupOptions&) const {}

}  // namespace zkdv::optim
