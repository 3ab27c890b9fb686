// Functional contract for torch.optim.Adam (torch 1.13 single-tensor update).

#include "adam_family.h"
#include "builtin_contracts.h"

namespace zkdv::optim {

namespace {

class AdamContract : public AdamFamilyContract {
public:
    using AdamFamilyContract::AdamFamilyContract;

    std::string name() const override { return "Adam"; }

    GroupOptions defaults() const override
    {
        GroupOptions options = {{"lr", 1e-3},        {"betas", {0.9, 0.999}}, {"eps", 1e-8},          {"weight_decay", 0.0},
                {"amsgrad", false},  {"foreach", nullptr},    {"maximize", false},    {"capturable", false},
                {"differentiable", false}, {"fused", false}};
        if (torch2()) {  // options torch 2.x added
            options["fused"] = nullptr;
            options["decoupled_weight_decay"] = false;
        }
        return options;
    }

protected:
    // L2 penalty: weight decay joins the gradient.
    void applyWeightDecay(at::Tensor& parameter, at::Tensor& gradient, double, double weightDecay) const override
    {
        if (weightDecay != 0)
            gradient = gradient.add(parameter, weightDecay);
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAdamContract(TorchRelease release) { return std::make_shared<AdamContract>(release); }

}  // namespace zkdv::optim
