// Functional contract for torch.optim.Adafactor (torch >= 2.5; torch 1.13 lacks it), ported op
// for op from torch 2.15's single- and multi-tensor implementations (_adafactor.py) and proven
// against them by the oracle on the PyPI lane.

#include <cmath>
#include <limits>
#include <optional>

#include <c10/core/DefaultDtype.h>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

// torch.finfo(dtype).eps, torch's epsilon1 when eps[0] is None.
double machineEpsilon(at::ScalarType type)
{
    switch (type) {
    case at::kDouble:
        return std::numeric_limits<double>::epsilon();
    case at::kFloat:
        return std::numeric_limits<float>::epsilon();
    case at::kHalf:
        return 0.0009765625;
    case at::kBFloat16:
        return 0.0078125;
    default:
        throw ContractError(std::string("Adafactor: unsupported parameter dtype ") + c10::toString(type));
    }
}

// The RMS-style 2-norm torch takes with Tensor.norm(2) (torch.linalg.vector_norm over all dims).
double norm2(const at::Tensor& tensor) { return at::linalg_vector_norm(tensor, 2).item<double>(); }

class AdafactorContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "Adafactor"; }

    GroupOptions defaults() const override
    {
        return {{"lr", 1e-2},   {"beta2_decay", -0.8}, {"eps", {nullptr, 1e-3}}, {"d", 1.0},
                {"weight_decay", 0.0}, {"foreach", nullptr},  {"maximize", false}};
    }

    // `step` is a float tensor (torch's scalar dtype); a parameter of two or more dimensions
    // keeps its second moment factored along the last two: row_var (last dim 1) and col_var
    // (second-to-last dim 1); a vector or scalar keeps the full `variance`.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions&) const override
    {
        refuseComplex(name(), parameter);
        const at::ScalarType scalarType = c10::get_default_dtype_as_scalartype() == at::kDouble ? at::kDouble : at::kFloat;
        SlotState state{{"step", at::zeros({}, at::TensorOptions().dtype(scalarType))}};
        if (parameter.dim() > 1) {
            std::vector<int64_t> rowShape = parameter.sizes().vec();
            rowShape.back() = 1;
            state.emplace("row_var", parameter.new_zeros(rowShape));
            std::vector<int64_t> colShape = parameter.sizes().vec();
            colShape[colShape.size() - 2] = 1;
            state.emplace("col_var", parameter.new_zeros(colShape));
        } else {
            state.emplace("variance", at::zeros_like(parameter, at::MemoryFormat::Preserve));
        }
        return state;
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const double beta2Decay = numberOption(group, "beta2_decay");
        const double d = numberOption(group, "d");
        const double weightDecay = numberOption(group, "weight_decay");
        const bool maximize = flagOption(group, "maximize");
        const bool foreach = flagOption(group, "foreach");
        // torch sets epsilon1 from the first parameter's dtype and keeps it for the group.
        std::optional<double> eps1 = optionalEps1(group);
        const double eps2 = group.at("eps").at(1).get<double>();
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            refuseComplex(name(), parameter);
            refuseSparse(name(), gradients[i]);
            const at::Tensor grad = maximize ? gradients[i].neg() : gradients[i];
            SlotState& state = *states[i];
            if (!eps1)
                eps1 = machineEpsilon(parameter.scalar_type());

            at::Tensor& stepCount = state.at("step");
            stepCount.add_(1);
            const double step = stepCount.item<double>();

            const double oneMinusBeta2 = std::pow(step, beta2Decay);
            const double inverseRootStep = 1 / std::pow(step, 0.5);
            const double rho = inverseRootStep < lr ? inverseRootStep : lr;
            const double rms = norm2(parameter) / std::pow(static_cast<double>(parameter.numel()), 0.5);
            const double alpha = (rms > eps2 ? rms : eps2) * rho;

            // Decoupled weight decay, scaled by lr.
            if (weightDecay != 0)
                parameter.mul_(1 - lr * weightDecay);

            at::Tensor varianceEstimate;
            if (grad.dim() > 1) {
                at::Tensor& rowVar = state.at("row_var");
                at::Tensor& colVar = state.at("col_var");
                // Means of the squared gradient along the last and the second-to-last dimension.
                const at::Tensor rowMean = at::linalg_vector_norm(grad, 2, at::IntArrayRef{-1}, true).square_().div_(grad.size(-1));
                rowVar.lerp_(rowMean, oneMinusBeta2);
                const at::Tensor colMean = at::linalg_vector_norm(grad, 2, at::IntArrayRef{-2}, true).square_().div_(grad.size(-2));
                colVar.lerp_(colMean, oneMinusBeta2);
                varianceEstimate = at::matmul(rowVar, colVar);
                varianceEstimate.div_(rowVar.mean(at::IntArrayRef{-2}, true).clamp_(*eps1, c10::nullopt));
            } else {
                at::Tensor& variance = state.at("variance");
                variance.lerp_(grad * grad, oneMinusBeta2);
                varianceEstimate = variance.clone();
            }

            // eps1 squared, as the square root follows.
            at::Tensor update = varianceEstimate.clamp_(*eps1 * *eps1, c10::nullopt).rsqrt_();
            update.mul_(grad);
            const double updateRms = norm2(update) / (std::pow(static_cast<double>(update.numel()), 0.5) * d);
            const double denominator = updateRms > 1.0 ? updateRms : 1.0;
            if (foreach) {
                // torch's multi-tensor path scales the update, then adds it: two roundings
                // where add_'s alpha takes one.
                update.mul_(-alpha / denominator);
                parameter.add_(update);
            } else {
                parameter.add_(update, -alpha / denominator);
            }
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        if (!(numberOption(group, "lr") >= 0))
            throw ContractError("Adafactor: learning rate should be >= 0 but is " + group["lr"].dump());
        if (!(numberOption(group, "beta2_decay") <= 0))
            throw ContractError("Adafactor: beta2_decay should be <= 0 but is " + group["beta2_decay"].dump());
        const GroupOptions& eps = group["eps"];
        if (!eps.is_array() || eps.size() != 2 || !(eps[0].is_null() || eps[0].is_number()) || !eps[1].is_number())
            throw ContractError("Adafactor: eps must be a pair (epsilon1 or null, epsilon2), found " + eps.dump());
        std::optional<double> eps1 = optionalEps1(group);
        if (eps1 && !(*eps1 >= 0))
            throw ContractError("Adafactor: epsilon1 should be >= 0 but is " + eps[0].dump());
        if (!(eps[1].get<double>() >= 0))
            throw ContractError("Adafactor: epsilon2 should be >= 0 but is " + eps[1].dump());
        if (!(numberOption(group, "d") >= 1))
            throw ContractError("Adafactor: clipping threshold d should be >= 1 but is " + group["d"].dump());
        if (!(numberOption(group, "weight_decay") >= 0))
            throw ContractError("Adafactor: weight_decay should be >= 0 but is " + group["weight_decay"].dump());
    }

private:
    static std::optional<double> optionalEps1(const GroupOptions& group)
    {
        const GroupOptions& eps = group.at("eps");
        if (!eps.is_array() || eps.size() != 2 || !eps[1].is_number() || !(eps[0].is_null() || eps[0].is_number()))
            throw ContractError("optimizer option eps must be a pair (epsilon1 or null, epsilon2), found " + eps.dump());
        return eps[0].is_null() ? std::nullopt : std::optional<double>(eps[0].get<double>());
    }

};

}  // namespace

std::shared_ptr<const OptimizerContract> makeAdafactorContract(TorchRelease release) { return std::make_shared<AdafactorContract>(release); }

}  // namespace zkdv::optim
