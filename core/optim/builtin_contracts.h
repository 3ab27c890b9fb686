#pragma once
// Factories of the built-in contracts, one per file in core/optim/.

#include <memory>

#include "zkdv/optim/optimizer_contract.h"

namespace zkdv::optim {

std::shared_ptr<const OptimizerContract> makeSgdContract();
// @@CONTRACT_FACTORIES@@ (one declaration per contract, above this line)

}  // namespace zkdv::optim
