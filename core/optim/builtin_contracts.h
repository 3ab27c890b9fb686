#pragma once
// Factories of the built-in contracts, one per file in core/optim/.

#include <memory>

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

std::shared_ptr<const OptimizerContract> makeSgdContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeAdamContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeAdamWContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeAdamaxContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeNAdamContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeRAdamContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeAdagradContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeAdadeltaContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeRmspropContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeRpropContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeAsgdContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeSparseAdamContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeLbfgsContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeAdafactorContract(TorchRelease release);
std::shared_ptr<const OptimizerContract> makeMuonContract(TorchRelease release);
// @@CONTRACT_FACTORIES@@ (one declaration per contract, above this line)

}  // namespace zkdv::optim
