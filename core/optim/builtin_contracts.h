#pragma once
// Factories of the built-in contracts, one per file in core/optim/.

#include <memory>

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

std::shared_ptr<const OptimizerContract> makeSgdContract();
std::shared_ptr<const OptimizerContract> makeAdamContract();
std::shared_ptr<const OptimizerContract> makeAdamWContract();
std::shared_ptr<const OptimizerContract> makeAdamaxContract();
std::shared_ptr<const OptimizerContract> makeNAdamContract();
std::shared_ptr<const OptimizerContract> makeRAdamContract();
std::shared_ptr<const OptimizerContract> makeAdagradContract();
std::shared_ptr<const OptimizerContract> makeAdadeltaContract();
std::shared_ptr<const OptimizerContract> makeRmspropContract();
std::shared_ptr<const OptimizerContract> makeRpropContract();
std::shared_ptr<const OptimizerContract> makeAsgdContract();
std::shared_ptr<const OptimizerContract> makeSparseAdamContract();
std::shared_ptr<const OptimizerContract> makeLbfgsContract();
std::shared_ptr<const OptimizerContract> makeAdafactorContract();
std::shared_ptr<const OptimizerContract> makeMuonContract();
// @@CONTRACT_FACTORIES@@ (one declaration per contract, above this line)

}  // namespace zkdv::optim
