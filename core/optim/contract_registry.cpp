#include "zkdv/optim/contract_registry.h"

#include "builtin_contracts.h"

namespace zkdv::optim {

std::vector<std::shared_ptr<const OptimizerContract>> builtinContracts()
{
    return {
        makeSgdContract(),
        makeAdamContract(),
        makeAdamWContract(),
        makeAdamaxContract(),
        makeNAdamContract(),
        makeRAdamContract(),
        makeAdagradContract(),
        makeAdadeltaContract(),
        makeRmspropContract(),
        makeRpropContract(),
        makeAsgdContract(),
        makeSparseAdamContract(),
        makeLbfgsContract(),
        makeAdafactorContract(),
        makeMuonContract(),
        // @@CONTRACT_LIST@@ (one factory call per contract, above this line)
    };
}

ContractRegistry::ContractRegistry()
{
    for (auto& contract : builtinContracts())
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
