#pragma once
// A change of the gradients inside the recorded step, between the backward pass and the
// optimizer step (tape format 1.7, section 5.1): torch.nn.utils' clip_grad_norm_ and
// clip_grad_value_, and since 1.8 torch.amp.GradScaler's unscale_ (section 5.6), as a
// transaction records them and a replay re-applies them.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

struct GradientTransform {
    enum class Kind { ClipNorm, ClipValue, Unscale };
    Kind kind = Kind::ClipNorm;
    // clip_grad_norm_: the gradients scaled by min(1, max_norm / (total norm + 1e-6)).
    double maxNorm = 0.0;
    double normType = 2.0;  // a p > 0, or +infinity (the tape writes "inf")
    bool errorIfNonfinite = false;
    // clip_grad_value_: every element clamped into [-clip_value, clip_value].
    double clipValue = 0.0;
    // unscale_: every gradient multiplied by the float32 reciprocal of the transaction's loss
    // scale (metadata "grad_scaler", which the reader copies here; the entry holds no member).
    float scale = 1.0f;
    // How the recording torch computed it: with its foreach kernels (true), one tensor at a
    // time (false), or a release whose function had no foreach argument (torch 1.13: unset).
    std::optional<bool> foreach;

    // torch's call, for messages and reports: "clip_grad_norm_(max_norm=1, norm_type=2)".
    std::string describe() const;
    bool operator==(const GradientTransform& other) const;
    bool operator!=(const GradientTransform& other) const { return !(*this == other); }
};

// At most this many transforms in one transaction: a loop clips once, a hostile tape could
// otherwise make every replayed step run thousands of them.
inline constexpr std::size_t kMaxGradientTransforms = 8;

// The transaction metadata "gradient_transforms" (a JSON array, in the order applied).
std::string gradientTransformsJson(const std::vector<GradientTransform>& transforms);
// Reads it back; throws FormatError saying which entry and member is wrong.
std::vector<GradientTransform> parseGradientTransforms(std::string_view json);
// Whether a transform's numbers are ones torch takes and the tape can hold (finite, a
// positive or infinite norm type); the reason when not, empty when they are.
std::string gradientTransformProblem(const GradientTransform& transform);

// The tensor holding the total norm clip_grad_norm_ computed for transform `position`.
std::string totalNormTensorName(std::size_t position);

}  // namespace zkdv
