#pragma once
// torch.amp.GradScaler's dynamic loss scale (tape format 1.8, section 5.6). Mixed precision in
// float16 multiplies every loss by a scale before its backward pass, so small gradients do not
// flush to zero, divides the gradients by it again (unscale_), and skips the optimizer step
// when that finds an inf or NaN. After every step the scale moves by a fixed rule: backed off
// after a skip, grown after growth_interval steps in a row without one. The root declares the
// rule and where it started; every transaction records the state it used and whether it
// skipped, and a reader follows the rule from one transaction to the next.

#include <cstdint>
#include <string>
#include <string_view>

namespace zkdv {

// GradScaler's constructor arguments that move the scale (torch: growth_factor > 1,
// 0 < backoff_factor < 1, growth_interval > 0).
struct GradScalerRule {
    double growthFactor = 2.0;
    double backoffFactor = 0.5;
    std::int64_t growthInterval = 2000;
};

// The scale (torch keeps it as a float32 tensor) and the growth tracker (steps without a skip
// since the scale last moved, an int32 tensor) a step used.
struct GradScalerState {
    float scale = 65536.0f;
    std::int64_t growthTracker = 0;

    bool operator==(const GradScalerState& other) const;
    bool operator!=(const GradScalerState& other) const { return !(*this == other); }
};

// Root member grad_scaler: the rule, and the state transaction 0 uses.
struct GradScalerDeclaration {
    GradScalerRule rule;
    GradScalerState initial;
};

// Transaction metadata grad_scaler: the state the step used, and whether unscale_ found an inf
// or NaN in the gradients, so that GradScaler.step() skipped the optimizer step.
struct GradScalerStep {
    GradScalerState state;
    bool skipped = false;
};

// The state after a step that used `state` (scaler.update()): a port of torch's
// _amp_update_scale_, whose CPU and CUDA kernels multiply the float32 scale by the double
// factor in double and round the product to float32, and never grow the scale to infinity.
GradScalerState nextGradScalerState(const GradScalerState& state, const GradScalerRule& rule, bool skipped);

// Why a declaration or a step is not one torch's GradScaler can have ("" when it can be).
std::string gradScalerRuleProblem(const GradScalerRule& rule);
std::string gradScalerStateProblem(const GradScalerState& state, const GradScalerRule& rule);

// The scale as the tape writes it: the shortest decimal that reads back as the same float32.
std::string gradScaleText(float scale);

// The root member and the transaction metadata as JSON, and back; the parsers throw
// FormatError naming the member.
std::string gradScalerDeclarationJson(const GradScalerDeclaration& declaration);
GradScalerDeclaration parseGradScalerDeclaration(std::string_view json);
std::string gradScalerStepJson(const GradScalerStep& step);
GradScalerStep parseGradScalerStep(std::string_view json, const GradScalerRule& rule);

}  // namespace zkdv
