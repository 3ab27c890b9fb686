#pragma once
// Resolves optimizer contracts by exact torch.optim class name; a registry can carry
// custom contracts of its own (one per recorder, as the seed's register_functional_optimizer).

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

class ContractRegistry {
public:
    // Holds the 15 built-in contracts.
    ContractRegistry();

    // Adds or replaces the contract for contract->name() in this registry only.
    void registerContract(std::shared_ptr<const OptimizerContract> contract);
    // Throws ContractError listing the known names when `name` has no contract.
    std::shared_ptr<const OptimizerContract> resolve(const std::string& name) const;
    bool contains(const std::string& name) const;
    std::vector<std::string> names() const;

private:
    std::map<std::string, std::shared_ptr<const OptimizerContract>> contracts_;
};

// The built-in contracts, one per torch.optim optimizer.
std::vector<std::shared_ptr<const OptimizerContract>> builtinContracts();

}  // namespace zkdv::optim
