// Functional contract for torch.optim.SparseAdam (torch 1.13 update, _functional.sparse_adam).

#include <cmath>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

class SparseAdamContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "SparseAdam"; }

    GroupOptions defaults() const override
    {
        return {{"lr", 1e-3}, {"betas", {0.9, 0.999}}, {"eps", 1e-8}, {"maximize", false}};
    }

    std::set<std::string> numberSlots() const override { return {"step"}; }

    // torch keeps `step` as a Python int; it is a 0-d int64 tensor here, as the oracle stores it.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions&) const override
    {
        return {{"step", at::zeros({}, at::TensorOptions().dtype(at::kLong))},
                {"exp_avg", at::zeros_like(parameter, at::MemoryFormat::Preserve)},
                {"exp_avg_sq", at::zeros_like(parameter, at::MemoryFormat::Preserve)}};
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const auto [beta1, beta2] = pairOption(group, "betas");
        const double eps = numberOption(group, "eps");
        const bool maximize = flagOption(group, "maximize");
        for (const at::Tensor& gradient : gradients)
            if (!gradient.is_sparse())
                throw ContractError("SparseAdam does not support dense gradients (torch raises the same); use Adam instead");
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            SlotState& state = *states[i];
            at::Tensor& expAvg = state.at("exp_avg");
            at::Tensor& expAvgSq = state.at("exp_avg_sq");
            at::Tensor& stepCount = state.at("step");
            stepCount.add_(1);
            const auto step = static_cast<double>(stepCount.item<int64_t>());

            // The update is not linear, so indices must be unique.
            const at::Tensor grad = (maximize ? gradients[i].neg() : gradients[i]).coalesce();
            const at::Tensor gradIndices = grad._indices();
            const at::Tensor gradValues = grad._values();
            auto makeSparse = [&](const at::Tensor& values) {
                if (gradIndices.dim() == 0 || values.dim() == 0)
                    return at::sparse_coo_tensor(grad.sizes(), grad.options());
                return at::sparse_coo_tensor(gradIndices, values, grad.sizes());
            };

            // old <- b * old + (1 - b) * new, as old += (1 - b) * (new - old), only where the
            // gradient has entries.
            const at::Tensor oldExpAvgValues = expAvg.sparse_mask(grad)._values();
            at::Tensor expAvgUpdateValues = gradValues.sub(oldExpAvgValues).mul_(1 - beta1);
            expAvg.add_(makeSparse(expAvgUpdateValues));
            const at::Tensor oldExpAvgSqValues = expAvgSq.sparse_mask(grad)._values();
            at::Tensor expAvgSqUpdateValues = gradValues.pow(2).sub_(oldExpAvgSqValues).mul_(1 - beta2);
            expAvgSq.add_(makeSparse(expAvgSqUpdateValues));

            // The new moments at the gradient's entries, by dense addition as torch does.
            at::Tensor numer = expAvgUpdateValues.add_(oldExpAvgValues);
            expAvgSqUpdateValues.add_(oldExpAvgSqValues);
            const at::Tensor denom = expAvgSqUpdateValues.sqrt_().add_(eps);

            const double biasCorrection1 = 1 - std::pow(beta1, step);
            const double biasCorrection2 = 1 - std::pow(beta2, step);
            const double stepSize = lr * std::sqrt(biasCorrection2) / biasCorrection1;
            parameter.add_(makeSparse(numer.div_(denom).mul(-stepSize)));
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        const auto [beta1, beta2] = pairOption(group, "betas");
        if (!(numberOption(group, "lr") > 0))
            throw ContractError("SparseAdam: invalid learning rate " + group["lr"].dump());
        if (!(numberOption(group, "eps") > 0))
            throw ContractError("SparseAdam: invalid epsilon value " + group["eps"].dump());
        if (!(0 <= beta1 && beta1 < 1))
            throw ContractError("SparseAdam: invalid beta parameter at index 0: " + group["betas"][0].dump());
        if (!(0 <= beta2 && beta2 < 1))
            throw ContractError("SparseAdam: invalid beta parameter at index 1: " + group["betas"][1].dump());
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeSparseAdamContract(TorchRelease release) { return std::make_shared<SparseAdamContract>(release); }

}  // namespace zkdv::optim
