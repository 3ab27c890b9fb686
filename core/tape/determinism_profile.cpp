#include "zkdv/tape/determinism_profile.h"

#include <algorithm>
#include <functional>

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& message) { throw FormatError(where + message); }

const json& member(const json& object, const char* name, const std::string& where)
{
    auto it = object.find(name);
    if (it == object.end())
        fail(where, std::string(" has no member ") + name);
    return *it;
}

std::string text(const json& object, const char* name, const std::string& where, std::size_t maxLength = 4096)
{
    const json& value = member(object, name, where);
    if (!value.is_string())
        fail(where + "." + name, std::string(" must be a string, found ") + value.type_name());
    std::string out = value.get<std::string>();
    if (out.size() > maxLength)
        fail(where + "." + name, " is longer than " + std::to_string(maxLength) + " bytes");
    return out;
}

std::string oneOf(const json& object, const char* name, const std::string& where, const std::vector<std::string>& allowed)
{
    std::string value = text(object, name, where);
    if (std::find(allowed.begin(), allowed.end(), value) == allowed.end()) {
        std::string list;
        for (const std::string& a : allowed)
            list += (list.empty() ? "\"" : ", \"") + a + "\"";
        fail(where + "." + name, " is \"" + value + "\", not one of " + list);
    }
    return value;
}

bool flag(const json& object, const char* name, const std::string& where)
{
    const json& value = member(object, name, where);
    if (!value.is_boolean())
        fail(where + "." + name, std::string(" must be true or false, found ") + value.type_name());
    return value.get<bool>();
}

std::optional<bool> optionalFlag(const json& object, const char* name, const std::string& where)
{
    const json& value = member(object, name, where);
    if (value.is_null())
        return std::nullopt;
    if (!value.is_boolean())
        fail(where + "." + name, std::string(" must be true, false or null, found ") + value.type_name());
    return value.get<bool>();
}

const json& object(const json& parent, const char* name, const std::string& where)
{
    const json& value = member(parent, name, where);
    if (!value.is_object())
        fail(where + "." + name, std::string(" must be an object, found ") + value.type_name());
    return value;
}

json nullable(const std::optional<bool>& value) { return value ? json(*value) : json(nullptr); }

// Members whose values decide which kernels run or how they round. The CPU's model is
// `numerics`' to compare (it would be reported twice), and intra-op threads likewise.
bool decidesBits(const std::string& name, const DeterminismProfile& recorded)
{
    if (name == "set_by_recorder" || name == "intra_op_threads" || name == "deterministic_algorithms" ||
        name == "cudnn.deterministic" || name == "cudnn.benchmark")
        return false;  // the replay's own settings, or said by nondeterministic()
    if (recorded.deviceKind == "cpu") {
        // On the CPU, the CUDA libraries and switches choose nothing, and torch's foreach
        // optimizers run the single-tensor arithmetic tensor by tensor.
        return name == "device.kind" || name == "matmul.float32_precision" || name.rfind("sdpa", 0) == 0;
    }
    return true;
}
}  // namespace

std::string DeterminismProfile::toJson() const
{
    json sdpa = json::object();
    for (const auto& [name, enabled] : sdpaBackends)
        sdpa[name] = enabled;
    json out = {{"device", {{"kind", deviceKind}, {"name", deviceName}}},
                {"cuda", cudaVersion},
                {"cudnn", {{"version", cudnnVersion}, {"enabled", cudnnEnabled}, {"deterministic", cudnnDeterministic}, {"benchmark", cudnnBenchmark}, {"allow_tf32", cudnnAllowTf32}}},
                {"deterministic_algorithms", deterministicAlgorithms},
                {"matmul",
                 {{"allow_tf32", matmulAllowTf32},
                  {"float32_precision", float32MatmulPrecision},
                  {"fp16_reduction", matmulFp16Reduction},
                  {"bf16_reduction", matmulBf16Reduction ? json(*matmulBf16Reduction) : json(nullptr)},
                  {"allow_fp16_accumulation", nullable(matmulAllowFp16Accumulation)}}},
                {"cublas_workspace_config", cublasWorkspaceConfig},
                {"sdpa", sdpa},
                {"optimizer", {{"foreach", nullable(optimizerForeach)}, {"fused", nullable(optimizerFused)}}},
                {"intra_op_threads", intraOpThreads},
                {"set_by_recorder", setByRecorder}};
    return toJsonText(out);
}

DeterminismProfile DeterminismProfile::parse(const std::string& jsonText, const std::string& where)
{
    const json root = parseUntrustedJson(jsonText, where);
    if (!root.is_object())
        fail(where, std::string(" must be an object, found ") + root.type_name());
    DeterminismProfile profile;
    const json& device = object(root, "device", where);
    profile.deviceKind = oneOf(device, "kind", where + ".device", {"cpu", "cuda"});
    profile.deviceName = text(device, "name", where + ".device", 256);
    profile.cudaVersion = text(root, "cuda", where, 64);
    const json& cudnn = object(root, "cudnn", where);
    profile.cudnnVersion = text(cudnn, "version", where + ".cudnn", 64);
    profile.cudnnEnabled = flag(cudnn, "enabled", where + ".cudnn");
    profile.cudnnDeterministic = flag(cudnn, "deterministic", where + ".cudnn");
    profile.cudnnBenchmark = flag(cudnn, "benchmark", where + ".cudnn");
    profile.cudnnAllowTf32 = flag(cudnn, "allow_tf32", where + ".cudnn");
    profile.deterministicAlgorithms = oneOf(root, "deterministic_algorithms", where, {"off", "on", "warn-only"});
    const json& matmul = object(root, "matmul", where);
    profile.matmulAllowTf32 = flag(matmul, "allow_tf32", where + ".matmul");
    profile.float32MatmulPrecision = oneOf(matmul, "float32_precision", where + ".matmul", {"highest", "high", "medium"});
    const std::vector<std::string> reductions{"allow", "disallow", "disallow-no-splitk"};
    profile.matmulFp16Reduction = oneOf(matmul, "fp16_reduction", where + ".matmul", reductions);
    if (!member(matmul, "bf16_reduction", where + ".matmul").is_null())
        profile.matmulBf16Reduction = oneOf(matmul, "bf16_reduction", where + ".matmul", reductions);
    profile.matmulAllowFp16Accumulation = optionalFlag(matmul, "allow_fp16_accumulation", where + ".matmul");
    profile.cublasWorkspaceConfig = text(root, "cublas_workspace_config", where, 256);
    const json& sdpa = object(root, "sdpa", where);
    if (sdpa.size() > 16)
        fail(where + ".sdpa", " names " + std::to_string(sdpa.size()) + " backends, more than 16");
    for (const auto& [name, enabled] : sdpa.items()) {
        if (name.empty() || name.size() > 64)
            fail(where + ".sdpa", " has a backend name of " + std::to_string(name.size()) + " bytes");
        if (!enabled.is_boolean())
            fail(where + ".sdpa." + name, std::string(" must be true or false, found ") + enabled.type_name());
        profile.sdpaBackends.emplace(name, enabled.get<bool>());
    }
    const json& optimizer = object(root, "optimizer", where);
    profile.optimizerForeach = optionalFlag(optimizer, "foreach", where + ".optimizer");
    profile.optimizerFused = optionalFlag(optimizer, "fused", where + ".optimizer");
    const json& threads = member(root, "intra_op_threads", where);
    if (!threads.is_number_integer() || threads.get<std::int64_t>() < 1 || threads.get<std::int64_t>() > 65536)
        fail(where, ".intra_op_threads must be an integer from 1 to 65536");
    profile.intraOpThreads = static_cast<int>(threads.get<std::int64_t>());
    profile.setByRecorder = flag(root, "set_by_recorder", where);
    return profile;
}

std::map<std::string, std::string> DeterminismProfile::members() const
{
    std::map<std::string, std::string> out;
    // Flattens the JSON form, so that the names are the spec's.
    std::function<void(const json&, const std::string&)> walk = [&](const json& value, const std::string& prefix) {
        if (value.is_object() && !value.empty()) {
            for (const auto& [name, inner] : value.items())
                walk(inner, prefix.empty() ? name : prefix + "." + name);
        } else {
            out[prefix] = value.dump();
        }
    };
    walk(json::parse(toJson()), "");
    return out;
}

std::vector<std::string> DeterminismProfile::differences(const DeterminismProfile& replay) const
{
    const std::map<std::string, std::string> mine = members(), theirs = replay.members();
    std::vector<std::string> names;
    for (const auto* side : {&mine, &theirs})
        for (const auto& [name, value] : *side)
            if (std::find(names.begin(), names.end(), name) == names.end())
                names.push_back(name);
    std::sort(names.begin(), names.end());
    std::vector<std::string> differ;
    for (const std::string& name : names) {
        if (!decidesBits(name, *this))
            continue;
        auto a = mine.find(name), b = theirs.find(name);
        const std::string left = a == mine.end() ? "(none)" : a->second, right = b == theirs.end() ? "(none)" : b->second;
        if (left != right)
            differ.push_back(name);
    }
    return differ;
}

std::string DeterminismProfile::describeDifferences(const DeterminismProfile& replay) const
{
    const std::map<std::string, std::string> mine = members(), theirs = replay.members();
    std::string out;
    for (const std::string& name : differences(replay)) {
        auto a = mine.find(name), b = theirs.find(name);
        out += (out.empty() ? "" : "; ") + name + " " + (a == mine.end() ? "(none)" : a->second) + " -> " +
               (b == theirs.end() ? "(none)" : b->second);
    }
    return out;
}

std::string DeterminismProfile::nondeterministic() const
{
    if (deviceKind != "cuda")
        return "";  // CPU kernels reproduce their bits at a fixed thread count
    std::string why;
    auto add = [&](const std::string& reason) { why += (why.empty() ? "" : ", ") + reason; };
    if (deterministicAlgorithms == "off")
        add("torch's nondeterministic algorithms were allowed");
    if (cudnnEnabled && !cudnnDeterministic)
        add("cuDNN was not deterministic");
    if (cudnnEnabled && cudnnBenchmark)
        add("cuDNN benchmarked its algorithms");
    return why;
}

std::string DeterminismProfile::summary() const
{
    std::string out = deviceKind + (deviceName.empty() ? "" : " (" + deviceName + ")");
    if (!cudaVersion.empty())
        out += ", CUDA " + cudaVersion;
    if (!cudnnVersion.empty())
        out += ", cuDNN " + cudnnVersion;
    out += "; deterministic algorithms " + deterministicAlgorithms;
    if (deviceKind == "cpu")  // cuDNN, cuBLAS and TF32 choose no CPU kernel
        return out + "; float32 matmul precision " + float32MatmulPrecision;
    if (!cudnnEnabled)
        out += "; cuDNN disabled";
    else
        out += std::string("; cuDNN ") + (cudnnDeterministic ? "deterministic" : "not deterministic") + ", " +
               (cudnnBenchmark ? "benchmarking" : "not benchmarking") + ", TF32 " + (cudnnAllowTf32 ? "on" : "off");
    out += std::string("; matmul TF32 ") + (matmulAllowTf32 ? "on" : "off") + ", precision " + float32MatmulPrecision;
    out += "; CUBLAS_WORKSPACE_CONFIG " + (cublasWorkspaceConfig.empty() ? std::string("unset") : cublasWorkspaceConfig);
    if (optimizerForeach.value_or(false) || optimizerFused.value_or(false))
        out += std::string("; optimizer ") + (optimizerFused.value_or(false) ? "fused" : "foreach");
    return out;
}

DeterminismProfile replayDeterminism(const std::optional<DeterminismProfile>& recorded, const DeterminismProfile& base,
                                     const std::string& device, const std::string& deviceName)
{
    DeterminismProfile replay = base;
    replay.deviceKind = device.rfind("cuda", 0) == 0 ? "cuda" : "cpu";
    replay.deviceName = deviceName;
    replay.setByRecorder = false;
    replay.optimizerForeach = replay.optimizerFused = std::nullopt;
    if (recorded) {
        replay.cudnnEnabled = recorded->cudnnEnabled;
        replay.cudnnAllowTf32 = recorded->cudnnAllowTf32;
        replay.matmulAllowTf32 = recorded->matmulAllowTf32;
        replay.float32MatmulPrecision = recorded->float32MatmulPrecision;
        replay.matmulFp16Reduction = recorded->matmulFp16Reduction;
        // A switch the replay's torch lacks stays absent there: a difference.
        if (replay.matmulBf16Reduction && recorded->matmulBf16Reduction)
            replay.matmulBf16Reduction = recorded->matmulBf16Reduction;
        if (replay.matmulAllowFp16Accumulation && recorded->matmulAllowFp16Accumulation)
            replay.matmulAllowFp16Accumulation = recorded->matmulAllowFp16Accumulation;
        // Only the backends both torches have; one the replay lacks stays absent (a difference).
        for (auto& [name, enabled] : replay.sdpaBackends)
            if (auto it = recorded->sdpaBackends.find(name); it != recorded->sdpaBackends.end())
                enabled = it->second;
        if (!recorded->cublasWorkspaceConfig.empty())
            replay.cublasWorkspaceConfig = recorded->cublasWorkspaceConfig;
        // The single-tensor rule is what the replay's optimizer contracts run.
        if (recorded->optimizerForeach)
            replay.optimizerForeach = false;
        if (recorded->optimizerFused)
            replay.optimizerFused = false;
    }
    replay.deterministicAlgorithms = recorded && recorded->deterministicAlgorithms == "on" ? "on" : "warn-only";
    replay.cudnnDeterministic = true;
    replay.cudnnBenchmark = false;
    if (replay.cublasWorkspaceConfig.empty())
        replay.cublasWorkspaceConfig = ":4096:8";
    return replay;
}

}  // namespace zkdv
