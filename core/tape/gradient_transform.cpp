#include "zkdv/tape/gradient_transform.h"

#include <cmath>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
constexpr const char* kClipNorm = "clip_grad_norm";
constexpr const char* kClipValue = "clip_grad_value";
constexpr const char* kUnscale = "unscale";

std::string number(double value)
{
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    // nlohmann writes the shortest decimal that reads back as the same double.
    return nlohmann::json(value).dump();
}

[[noreturn]] void fail(std::size_t position, const std::string& message)
{
    throw FormatError("metadata \"gradient_transforms\" entry " + std::to_string(position) + ": " + message);
}

double finiteMember(const nlohmann::json& entry, std::size_t position, const char* member)
{
    auto it = entry.find(member);
    if (it == entry.end() || !it->is_number())
        fail(position, std::string("\"") + member + "\" must be a number");
    const double value = it->get<double>();
    if (!std::isfinite(value))
        fail(position, std::string("\"") + member + "\" must be finite");
    return value;
}
}  // namespace

std::string GradientTransform::describe() const
{
    std::string text;
    if (kind == Kind::Unscale)
        return "GradScaler.unscale_()";  // the scale moves every few steps; messages name it
    if (kind == Kind::ClipNorm) {
        text = "clip_grad_norm_(max_norm=" + number(maxNorm) + ", norm_type=" + number(normType);
        if (errorIfNonfinite)
            text += ", error_if_nonfinite=True";
    } else {
        text = "clip_grad_value_(clip_value=" + number(clipValue);
    }
    if (foreach)
        text += std::string(", foreach=") + (*foreach ? "True" : "False");
    return text + ")";
}

bool GradientTransform::operator==(const GradientTransform& other) const
{
    if (kind != other.kind || foreach != other.foreach)
        return false;
    if (kind == Kind::ClipValue)
        return clipValue == other.clipValue;
    if (kind == Kind::Unscale)
        return scale == other.scale;
    return maxNorm == other.maxNorm && normType == other.normType && errorIfNonfinite == other.errorIfNonfinite;
}

std::string gradientTransformProblem(const GradientTransform& transform)
{
    if (transform.kind == GradientTransform::Kind::ClipValue)
        return std::isfinite(transform.clipValue) ? std::string() : "clip_value must be a finite number";
    if (transform.kind == GradientTransform::Kind::Unscale)
        return std::isfinite(transform.scale) ? std::string() : "the loss scale must be finite";
    if (!std::isfinite(transform.maxNorm))
        return "max_norm must be a finite number";
    if (!(transform.normType > 0) || std::isnan(transform.normType))
        return "norm_type must be a positive number or inf (the norms torch.linalg.vector_norm computes over all gradients)";
    return {};
}

std::string totalNormTensorName(std::size_t position) { return "gradients/total_norm/" + std::to_string(position); }

std::string gradientTransformsJson(const std::vector<GradientTransform>& transforms)
{
    nlohmann::json array = nlohmann::json::array();
    for (const GradientTransform& transform : transforms) {
        nlohmann::json entry;
        if (transform.kind == GradientTransform::Kind::Unscale) {
            // The scale is the transaction's (metadata "grad_scaler"), written once there.
            array.push_back({{"kind", kUnscale}});
            continue;
        }
        if (transform.kind == GradientTransform::Kind::ClipNorm) {
            entry["kind"] = kClipNorm;
            entry["max_norm"] = transform.maxNorm;
            if (std::isinf(transform.normType))
                entry["norm_type"] = "inf";
            else
                entry["norm_type"] = transform.normType;
            entry["error_if_nonfinite"] = transform.errorIfNonfinite;
        } else {
            entry["kind"] = kClipValue;
            entry["clip_value"] = transform.clipValue;
        }
        entry["foreach"] = transform.foreach ? nlohmann::json(*transform.foreach) : nlohmann::json(nullptr);
        array.push_back(std::move(entry));
    }
    return array.dump();
}

std::vector<GradientTransform> parseGradientTransforms(std::string_view text)
{
    const nlohmann::json array = parseUntrustedJson(text, "metadata \"gradient_transforms\"");
    if (!array.is_array() || array.empty())
        throw FormatError("metadata \"gradient_transforms\" must be a non-empty JSON array");
    if (array.size() > kMaxGradientTransforms)
        throw FormatError("metadata \"gradient_transforms\" holds " + std::to_string(array.size()) + " transforms; at most " +
                          std::to_string(kMaxGradientTransforms) + " are allowed");
    std::vector<GradientTransform> transforms;
    for (std::size_t position = 0; position < array.size(); ++position) {
        const nlohmann::json& entry = array[position];
        if (!entry.is_object())
            fail(position, "must be an object");
        GradientTransform transform;
        auto kind = entry.find("kind");
        if (kind == entry.end() || !kind->is_string())
            fail(position, "\"kind\" must be a string");
        std::set<std::string> allowed = {"kind", "foreach"};
        if (*kind == kUnscale) {
            if (entry.size() != 1)
                fail(position, "an \"unscale\" entry holds only its kind (its scale is the transaction's grad_scaler)");
            transform.kind = GradientTransform::Kind::Unscale;
            transforms.push_back(transform);
            continue;
        }
        if (*kind == kClipNorm) {
            transform.kind = GradientTransform::Kind::ClipNorm;
            transform.maxNorm = finiteMember(entry, position, "max_norm");
            auto normType = entry.find("norm_type");
            if (normType != entry.end() && normType->is_string() && *normType == "inf")
                transform.normType = std::numeric_limits<double>::infinity();
            else
                transform.normType = finiteMember(entry, position, "norm_type");
            auto error = entry.find("error_if_nonfinite");
            if (error == entry.end() || !error->is_boolean())
                fail(position, "\"error_if_nonfinite\" must be true or false");
            transform.errorIfNonfinite = error->get<bool>();
            allowed.insert({"max_norm", "norm_type", "error_if_nonfinite"});
        } else if (*kind == kClipValue) {
            transform.kind = GradientTransform::Kind::ClipValue;
            transform.clipValue = finiteMember(entry, position, "clip_value");
            allowed.insert("clip_value");
        } else {
            fail(position, "unknown kind \"" + kind->get<std::string>() + "\" (this reader knows \"clip_grad_norm\", \"clip_grad_value\" and \"unscale\")");
        }
        auto foreach = entry.find("foreach");
        if (foreach == entry.end() || !(foreach->is_boolean() || foreach->is_null()))
            fail(position, "\"foreach\" must be true, false or null");
        if (foreach->is_boolean())
            transform.foreach = foreach->get<bool>();
        for (const auto& member : entry.items())
            if (!allowed.count(member.key()))
                fail(position, "unexpected member \"" + member.key() + "\"");
        const std::string problem = gradientTransformProblem(transform);
        if (!problem.empty())
            fail(position, problem);
        transforms.push_back(transform);
    }
    return transforms;
}

}  // namespace zkdv
