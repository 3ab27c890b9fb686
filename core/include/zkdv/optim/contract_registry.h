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
    // Holds the 15 built-in contracts as torch `release` runs them (by default the libtorch
    // this program links). For a release the contracts are not proven against, it holds none:
    // resolving a built-in name then says which releases are.
    explicit ContractRegistry(TorchRelease release = TorchRelease::ofThisLibtorch());

    // Adds or replaces the contract for contract->name() in this registry only.
    void registerContract(std::shared_ptr<const OptimizerContract> contract);
    // Throws ContractError listing the known names when `name` has no contract.
    std::shared_ptr<const OptimizerContract> resolve(const std::string& name) const;
    bool contains(const std::string& name) const;
    std::vector<std::string> names() const;

    const TorchRelease& release() const { return release_; }

private:
    TorchRelease release_;
    std::map<std::string, std::shared_ptr<const OptimizerContract>> contracts_;
};

// The built-in contracts, one per torch.optim optimizer, as `release` runs them.
std::vector<std::shared_ptr<const OptimizerContract>> builtinContracts(TorchRelease release);
// The optimizer classes the built-in contracts cover (the 15 names).
std::vector<std::string> builtinContractNames();

}  // namespace zkdv::optim
