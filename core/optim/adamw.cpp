// Functional contract for torch.optim.AdamW (torch 1.13 single-tensor update).

#include "adam_family.h"
#include "builtin_contracts.h"

namespace zkdv::optim {

namespace {

class AdamWContract : public AdamFamilyContract {
public:
    using AdamFamilyContract::AdamFamilyContract;

    std::string name() const override { return "AdamW"; }

    // torch 1.13's AdamW has neither `differentiable` nor `fused`.
    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1e-3},       {"betas", {0.9, 0.999}}, {"eps", 1e-8},       {"weight_decay", 1e-2},
                {"amsgrad", false}, {"maximize", false},     {"foreach", nullptr}, {"capturable", false}};
        if (torch2()) {  // options torch 2.x added
            options["differentiable"] = false;
            options["fused"] = nullptr;
            options["decoupled_weight_decay"] = true;
        }
        return options;
    }

protected:
    // Decoupled weight decay, applied even when weight_decay is 0 (a multiplication by 1).
    void applyWeightDecay(at::Tensor& parameter, at::Tensor&, double lr, double weightDecay) const override
    {
        parameter.mul_(1 - lr * weightDecay);
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAdamWContract(TorchRelease release) { return std::make_shared<AdamWContract>(release); }

}  // namespace zkdv::optim
