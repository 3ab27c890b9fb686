#include "zkdv/tape/autocast_setting.h"

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
bool knownDevice(const std::string& device) { return device == "cpu" || device == "cuda"; }
bool castDtype(DType dtype) { return dtype == DType::BF16 || dtype == DType::F16; }
const char* torchName(DType dtype) { return dtype == DType::BF16 ? "torch.bfloat16" : "torch.float16"; }
}  // namespace

std::string autocastJson(const AutocastSetting& setting)
{
    nlohmann::json object = nlohmann::json::object();
    for (const auto& [device, dtype] : setting)
        object[device] = std::string(dtypeName(dtype));
    return object.dump();
}

std::string autocastProblem(const AutocastSetting& setting)
{
    for (std::size_t i = 0; i < setting.size(); ++i) {
        const auto& [device, dtype] = setting[i];
        if (!knownDevice(device))
            return "autocast on \"" + device + "\" is not recorded (a replay applies it on \"cpu\" and \"cuda\")";
        if (!castDtype(dtype))
            return "autocast to " + std::string(dtypeName(dtype)) + " is not recorded (it casts to BF16 or F16)";
        if (i > 0 && !(setting[i - 1].first < device))
            return "autocast devices are listed once each, sorted";
    }
    return {};
}

AutocastSetting parseAutocast(std::string_view text)
{
    const nlohmann::json object = parseUntrustedJson(text, "metadata \"autocast\"");
    if (!object.is_object() || object.empty())
        throw FormatError("metadata \"autocast\" must be a non-empty JSON object of device type to dtype, e.g. {\"cpu\": \"BF16\"}");
    AutocastSetting setting;
    for (const auto& [device, value] : object.items()) {  // nlohmann keeps keys sorted
        if (!value.is_string())
            throw FormatError("metadata \"autocast\": the dtype of \"" + device + "\" must be a string");
        const std::optional<DType> dtype = dtypeFromName(value.get<std::string>());
        if (!dtype)
            throw FormatError("metadata \"autocast\": \"" + value.get<std::string>() + "\" is not a dtype");
        setting.emplace_back(device, *dtype);
    }
    const std::string problem = autocastProblem(setting);
    if (!problem.empty())
        throw FormatError("metadata \"autocast\": " + problem);
    return setting;
}

std::string describeAutocast(const AutocastSetting& setting)
{
    std::string text;
    for (const auto& [device, dtype] : setting)
        text += (text.empty() ? "" : " and ") + std::string("torch.autocast(\"") + device + "\", dtype=" + torchName(dtype) + ")";
    return text;
}

}  // namespace zkdv
