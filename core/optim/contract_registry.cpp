#include "zkdv/optim/contract_registry.h"

#include <algorithm>

#include "builtin_contracts.h"

namespace zkdv::optim {

std::vector<std::shared_ptr<const OptimizerContract>> builtinContracts(TorchRelease release)
{
    return {
        makeSgdContract(release),
        makeAdamContract(release),
        makeAdamWContract(release),
        makeAdamaxContract(release),
        makeNAdamContract(release),
        makeRAdamContract(release),
        makeAdagradContract(release),
        makeAdadeltaContract(release),
        makeRmspropContract(release),
        makeRpropContract(release),
        makeAsgdContract(release),
        makeSparseAdamContract(release),
        makeLbfgsContract(release),
        makeAdafactorContract(release),
        makeMuonContract(release),
        // @@CONTRACT_LIST@@ (one factory call per contract, above this line)
    };
}

std::vector<std::string> builtinContractNames()
{
    std::vector<std::string> names;
    for (const auto& contract : builtinContracts(provenTorchReleases().front()))
        names.push_back(contract->name());
    return names;
}

ContractRegistry::ContractRegistry(TorchRelease release) : release_(release)
{
    if (!isProvenTorchRelease(release))
        return;
    for (auto& contract : builtinContracts(release))
        registerContract(contract);
}

void ContractRegistry::registerContract(std::shared_ptr<const OptimizerContract> contract)
{
    if (!contract)
        throw ContractError("cannot register an empty optimizer contract");
    contracts_[contract->name()] = std::move(contract);
}

std::shared_ptr<const OptimizerContract> ContractRegistry::resolve(const std::string& name) const
{
    auto it = contracts_.find(name);
    if (it == contracts_.end() && !isProvenTorchRelease(release_)) {
        const auto names = builtinContractNames();
        if (std::find(names.begin(), names.end(), name) != names.end())
            throw ContractError("the built-in contract for torch.optim." + name + " is proven for " + provenTorchReleasesText() +
                                " only, not for torch " + release_.text() +
                                ", whose torch.optim may round differently; record with a proven torch or register a custom contract");
    }
    if (it == contracts_.end()) {
        std::string known;
        for (const auto& entry : contracts_)
            known += (known.empty() ? "" : ", ") + entry.first;
        throw ContractError("no functional optimizer contract for \"" + name + "\" (known: " + known +
                            "); register a custom functional optimizer contract");
    }
    return it->second;
}

bool ContractRegistry::contains(const std::string& name) const { return contracts_.count(name) != 0; }

std::vector<std::string> ContractRegistry::names() const
{
    std::vector<std::string> result;
    for (const auto& entry : contracts_)
        result.push_back(entry.first);
    return result;
}

}  // namespace zkdv::optim
