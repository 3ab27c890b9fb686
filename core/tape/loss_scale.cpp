#include "zkdv/tape/loss_scale.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
std::string number(const LossScale& scale)
{
    if (scale.integral)
        return std::to_string(static_cast<long long>(scale.by));
    return nlohmann::json(scale.by).dump();
}
}  // namespace

std::string LossScale::describe() const
{
    switch (op) {
    case Op::Divide: return "/ " + number(*this);
    case Op::Multiply: return "* " + number(*this);
    case Op::None: break;
    }
    return {};
}

double LossScale::apply(double loss) const
{
    switch (op) {
    case Op::Divide: return loss / by;
    case Op::Multiply: return loss * by;
    case Op::None: break;
    }
    return loss;
}

std::string lossScaleProblem(const LossScale& scale)
{
    if (scale.op == LossScale::Op::None)
        return {};
    if (!std::isfinite(scale.by))
        return "a loss is scaled by a finite number";
    if (scale.op == LossScale::Op::Divide && scale.by == 0)
        return "a loss is not divided by zero";
    if (scale.integral && (std::fabs(scale.by) > 9007199254740992.0 || scale.by != std::floor(scale.by)))
        return "an integral scale is an integer of at most 2^53";
    return {};
}

std::string lossScalesJson(const std::vector<LossScale>& scales)
{
    nlohmann::json array = nlohmann::json::array();
    for (const LossScale& scale : scales) {
        if (scale.op == LossScale::Op::None) {
            array.push_back(nullptr);
            continue;
        }
        nlohmann::json entry = {{"op", scale.op == LossScale::Op::Divide ? "div" : "mul"}};
        if (scale.integral)
            entry["by"] = static_cast<std::int64_t>(scale.by);
        else
            entry["by"] = scale.by;
        array.push_back(std::move(entry));
    }
    return array.dump();
}

std::vector<LossScale> parseLossScales(std::string_view text, std::size_t count)
{
    const nlohmann::json array = parseUntrustedJson(text, "metadata \"loss_scales\"");
    if (!array.is_array() || array.size() != count)
        throw FormatError("metadata \"loss_scales\" must be a JSON array of " + std::to_string(count) + " entries, one per micro-batch");
    std::vector<LossScale> scales;
    for (std::size_t m = 0; m < array.size(); ++m) {
        const nlohmann::json& entry = array[m];
        const std::string where = "metadata \"loss_scales\" entry " + std::to_string(m) + ": ";
        LossScale scale;
        if (!entry.is_null()) {
            if (!entry.is_object() || entry.size() != 2 || !entry.contains("op") || !entry.contains("by"))
                throw FormatError(where + "must be null or {\"op\": \"div\" or \"mul\", \"by\": a number}");
            if (entry["op"] == "div")
                scale.op = LossScale::Op::Divide;
            else if (entry["op"] == "mul")
                scale.op = LossScale::Op::Multiply;
            else
                throw FormatError(where + "\"op\" must be \"div\" or \"mul\"");
            const nlohmann::json& by = entry["by"];
            if (!by.is_number())
                throw FormatError(where + "\"by\" must be a number");
            scale.integral = by.is_number_integer();
            scale.by = by.get<double>();
            if (by.is_number_integer() && by.is_number_unsigned() && by.get<std::uint64_t>() > (std::uint64_t(1) << 53))
                throw FormatError(where + "an integral scale is an integer of at most 2^53");
            const std::string problem = lossScaleProblem(scale);
            if (!problem.empty())
                throw FormatError(where + problem);
        }
        scales.push_back(scale);
    }
    return scales;
}

}  // namespace zkdv
