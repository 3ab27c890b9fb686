// Contract for torch.optim.LBFGS that exists only to refuse it by name: LBFGS's step calls a
// closure that re-evaluates the model (forward and backward) several times per step, and a
// tape of recorded gradients cannot attest evaluations it never saw.

#include "builtin_contracts.h"

namespace zkdv::optim {

namespace {

const char* const kClosureRefusal =
    "LBFGS is closure-driven: each step re-evaluates the model several times through a closure (line search and "
    "inner iterations), which a tape of recorded gradients cannot attest; use another optimizer";

class LbfgsContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "LBFGS"; }

    // torch 1.13's constructor options; max_eval None means max_iter * 5 // 4 in torch.
    GroupOptions defaults() const override
    {
        return {{"lr", 1.0},
                {"max_iter", 20},
                {"max_eval", nullptr},
                {"tolerance_grad", 1e-7},
                {"tolerance_change", 1e-9},
                {"history_size", 100},
                {"line_search_fn", nullptr}};
    }

    SlotState initialize(const at::Tensor&, const GroupOptions&) const override { throw ContractError(kClosureRefusal); }

    void update(const std::vector<at::Tensor>&, const std::vector<at::Tensor>&, const std::vector<SlotState*>&,
                const GroupOptions&) const override
    {
        throw ContractError(kClosureRefusal);
    }

protected:
    void validateGroup(const GroupOptions&) const override { throw ContractError(kClosureRefusal); }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeLbfgsContract(TorchRelease release) { return std::make_shared<LbfgsContract>(release); }

}  // namespace zkdv::optim
