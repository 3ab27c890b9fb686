// Functional contract for torch.optim.Muon (torch >= 2.9; torch 1.13 lacks it), ported op for
// op from torch 2.15's single-tensor implementation (_single_tensor_muon and
// _zeropower_via_newtonschulz) and proven against it by the oracle on the PyPI lane.

#include <algorithm>
#include <cmath>

#include "builtin_contracts.h"
#include "zkdv/optim/group_options.h"

namespace zkdv::optim {

namespace {

// Newton–Schulz iteration towards the orthogonal factor of `matrix`, in bfloat16 as torch
// does: a quintic whose coefficients push singular values towards [0.5, 1.5] rather than
// exactly to 1. Returns a bfloat16 tensor of matrix's shape.
at::Tensor orthogonalize(const at::Tensor& matrix, double a, double b, double c, int64_t steps, double eps)
{
    const bool tall = matrix.size(0) > matrix.size(1);
    at::Tensor ortho = matrix.to(at::kBFloat16);
    if (tall)
        ortho = ortho.t();
    // A Frobenius norm of at most 1 bounds the spectral norm by 1.
    ortho.div_(at::linalg_vector_norm(ortho, 2).clamp(eps, c10::nullopt));
    for (int64_t i = 0; i < steps; ++i) {
        // b * G + c * G @ G, then a * X + update @ X, each one fused addmm as torch runs it.
        const at::Tensor gram = at::matmul(ortho, ortho.t());
        const at::Tensor gramUpdate = at::addmm(gram, gram, gram, b, c);
        ortho = at::addmm(ortho, gramUpdate, ortho, a);
    }
    if (tall)
        ortho = ortho.t();
    return ortho;
}

std::string adjustLrFunction(const GroupOptions& group)
{
    auto it = group.find("adjust_lr_fn");
    if (it == group.end() || it->is_null())
        return "original";
    if (!it->is_string())
        throw ContractError("optimizer option adjust_lr_fn must be null, \"original\", \"match_rms_adamw\" or \"spectral_unclamped\", found " + it->dump());
    return it->get<std::string>();
}

// torch's _adjust_lr: keeps the orthogonalized update's RMS consistent across shapes.
double adjustedLr(double lr, const std::string& function, const at::Tensor& parameter)
{
    const auto rows = static_cast<double>(parameter.size(0));
    const auto columns = static_cast<double>(parameter.size(1));
    double ratio = 1.0;
    if (function == "original") {
        const double aspect = rows / columns;
        ratio = std::sqrt(aspect > 1 ? aspect : 1.0);
    } else if (function == "match_rms_adamw") {
        ratio = 0.2 * std::sqrt(std::max(rows, columns));
    } else if (function == "spectral_unclamped") {
        ratio = std::sqrt(rows / columns);
    }
    return lr * ratio;
}

class MuonContract : public OptimizerContract {
public:
    using OptimizerContract::OptimizerContract;

    std::string name() const override { return "Muon"; }

    GroupOptions defaults() const override
    {
        return {{"lr", 1e-3},
                {"weight_decay", 0.1},
                {"momentum", 0.95},
                {"nesterov", true},
                {"ns_coefficients", {3.4445, -4.7750, 2.0315}},
                {"eps", 1e-7},
                {"ns_steps", 5},
                {"adjust_lr_fn", nullptr}};
    }

    // The momentum buffer appears at the first step, as zeros of the gradient's shape.
    SlotState initialize(const at::Tensor& parameter, const GroupOptions&) const override
    {
        refuseUnsupported(parameter);
        return {{"momentum_buffer", at::zeros_like(parameter, at::MemoryFormat::Preserve)}};
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<SlotState*>& states,
                const GroupOptions& group) const override
    {
        const double lr = numberOption(group, "lr");
        const double weightDecay = numberOption(group, "weight_decay");
        const double momentum = numberOption(group, "momentum");
        const bool nesterov = flagOption(group, "nesterov");
        const GroupOptions& coefficients = group.at("ns_coefficients");
        const double a = coefficients.at(0).get<double>(), b = coefficients.at(1).get<double>(), c = coefficients.at(2).get<double>();
        const double eps = numberOption(group, "eps");
        const auto steps = static_cast<int64_t>(numberOption(group, "ns_steps"));
        const std::string adjust = adjustLrFunction(group);
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            at::Tensor parameter = parameters[i];
            refuseUnsupported(parameter);
            const at::Tensor& grad = gradients[i];
            refuseSparse(name(), grad);
            if (grad.dim() != 2)
                throw ContractError("Muon: the gradient must be a 2-D matrix, found size " + c10::str(grad.sizes()));

            at::Tensor& buffer = states[i]->at("momentum_buffer");
            buffer.lerp_(grad, 1 - momentum);
            const at::Tensor direction = nesterov ? grad.lerp(buffer, momentum) : buffer;
            const at::Tensor update = orthogonalize(direction, a, b, c, steps, eps);

            parameter.mul_(1 - lr * weightDecay);
            parameter.add_(update, -adjustedLr(lr, adjust, parameter));
        }
    }

protected:
    void validateGroup(const GroupOptions& group) const override
    {
        if (!(numberOption(group, "lr") >= 0))
            throw ContractError("Muon: learning rate should be >= 0 but is " + group["lr"].dump());
        if (!(numberOption(group, "momentum") >= 0))
            throw ContractError("Muon: momentum should be >= 0 but is " + group["momentum"].dump());
        if (!(numberOption(group, "weight_decay") >= 0))
            throw ContractError("Muon: weight decay should be >= 0 but is " + group["weight_decay"].dump());
        const std::string adjust = adjustLrFunction(group);
        if (adjust != "original" && adjust != "match_rms_adamw" && adjust != "spectral_unclamped")
            throw ContractError("Muon: adjust_lr_fn " + group["adjust_lr_fn"].dump() +
                                " is not supported (use null, \"original\", \"match_rms_adamw\" or \"spectral_unclamped\")");
        const GroupOptions& coefficients = group["ns_coefficients"];
        if (!coefficients.is_array() || coefficients.size() != 3)
            throw ContractError("Muon: ns_coefficients must be exactly three numbers (a, b, c), found " + coefficients.dump());
        const double steps = numberOption(group, "ns_steps");
        if (!(steps >= 0 && steps < 100) || steps != std::floor(steps))
            throw ContractError("Muon: ns_steps must be a whole number below 100, found " + group["ns_steps"].dump());
        numberOption(group, "eps");
        flagOption(group, "nesterov");
    }

private:
    static void refuseUnsupported(const at::Tensor& parameter)
    {
        if (parameter.dim() != 2)
            throw ContractError("Muon only supports 2-D parameters (torch refuses the others), found a parameter of size " +
                                c10::str(parameter.sizes()) + "; optimize biases, embeddings and other non-matrix parameters with another optimizer such as AdamW");
        refuseComplex("Muon", parameter);
    }
};

}  // namespace

std::shared_ptr<const OptimizerContract> makeMuonContract(TorchRelease release) { return std::make_shared<MuonContract>(release); }

}  // namespace zkdv::optim
