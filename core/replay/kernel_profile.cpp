#include "zkdv/replay/kernel_profile.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {

bool has(const std::vector<std::string>& flags, const char* flag) { return std::find(flags.begin(), flags.end(), flag) != flags.end(); }

// Thread counts are the run's own choice (--intra-op-threads, the tape's count by default);
// a replay copies every other kernel-choosing variable.
bool isThreadCount(const std::string& name) { return name == "OMP_NUM_THREADS" || name == "MKL_NUM_THREADS"; }

// The tape is untrusted: a value reaches the workers' environment only when it looks like
// the libraries' own spellings ("avx2", "AVX512_CORE_VNNI", "AVX2,STRICT", "BF16").
bool isPlainSettingValue(const std::string& value)
{
    if (value.empty() || value.size() > 64)
        return false;
    return std::all_of(value.begin(), value.end(), [](char c) {
        return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == ',' || c == '.' || c == '-';
    });
}

}  // namespace

std::string_view kernelChoiceName(KernelChoice choice) { return choice == KernelChoice::Recorded ? "recorded" : "host"; }

std::optional<KernelChoice> parseKernelChoice(std::string_view text)
{
    if (text == "recorded")
        return KernelChoice::Recorded;
    if (text == "host")
        return KernelChoice::Host;
    return std::nullopt;
}

std::string atenCapabilityValue(const std::string& reportedLevel)
{
    std::string lower;
    for (char c : reportedLevel)
        lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    // torch 1.13 reports its baseline as "NO AVX", later releases as "DEFAULT". The x86
    // levels both releases accept; ARM's and POWER's names differ between releases.
    if (lower == "no avx")
        return "default";
    for (const char* level : {"default", "avx2", "avx512"})
        if (lower == level)
            return lower;
    return {};
}

std::string atenCapabilityFor(const std::vector<std::string>& f)
{
    // torch's own test of the CPU (DispatchStub's compute_cpu_capability).
    if (has(f, "avx512f") && has(f, "avx512bw") && has(f, "avx512vl") && has(f, "avx512dq") && has(f, "fma"))
        return "avx512";
    if (has(f, "avx2") && has(f, "fma"))
        return "avx2";
    return "default";
}

std::string onednnIsaFor(const std::vector<std::string>& f)
{
    const bool avx512Core = has(f, "avx512f") && has(f, "avx512bw") && has(f, "avx512vl") && has(f, "avx512dq");
    if (avx512Core && has(f, "amx_tile") && has(f, "amx_int8") && has(f, "amx_bf16"))
        return "AVX512_CORE_AMX";
    if (avx512Core && has(f, "avx512_fp16"))
        return "AVX512_CORE_FP16";
    if (avx512Core && has(f, "avx512_bf16"))
        return "AVX512_CORE_BF16";
    if (avx512Core && has(f, "avx512_vnni"))
        return "AVX512_CORE_VNNI";
    if (avx512Core)
        return "AVX512_CORE";
    if (has(f, "avx2") && has(f, "avx_vnni"))
        return "AVX2_VNNI";
    if (has(f, "avx2"))
        return "AVX2";
    if (has(f, "avx"))
        return "AVX";
    return "SSE41";
}

KernelProfile kernelProfileFor(KernelChoice choice, const std::optional<NumericEnvironment>& recorded, const NumericEnvironment& host)
{
    KernelProfile profile;
    if (choice == KernelChoice::Host) {
        profile.note = "the workers run the auditor's kernel settings as they are (--kernels host)";
        return profile;
    }
    if (!recorded) {
        profile.note = "the tape does not record its numerical environment (format 1.5): the workers run the auditor's kernel settings";
        return profile;
    }
    profile.choice = KernelChoice::Recorded;
    // torch takes ATEN_CPU_CAPABILITY at its word, without asking the CPU: a level above this
    // CPU's runs instructions it lacks and the worker dies of SIGILL. A CPU that reports no
    // x86 flags (another architecture) is left to torch, which ignores x86 levels there.
    const bool hostIsX86 = !host.cpuFlags.empty();
    const std::string hostLevel = atenCapabilityFor(host.cpuFlags);
    auto levelRank = [](const std::string& level) { return level == "avx512" ? 2 : level == "avx2" ? 1 : 0; };
    std::string lowered;
    auto withinThisCpu = [&](const std::string& level) {
        if (!hostIsX86 || levelRank(level) <= levelRank(hostLevel))
            return level;
        lowered = level;
        return hostLevel;
    };
    std::string refused;
    for (const auto& [name, value] : recorded->settings) {
        if (isThreadCount(name) || std::find(NumericEnvironment::settingNames().begin(), NumericEnvironment::settingNames().end(), name) ==
                                       NumericEnvironment::settingNames().end())
            continue;
        if (isPlainSettingValue(value))
            profile.variables.emplace(name, name == "ATEN_CPU_CAPABILITY" ? withinThisCpu(value) : value);
        else
            refused += (refused.empty() ? "" : ", ") + name;
    }
    profile.note = "the workers run the training's kernel settings";
    // Left out, the setting differs between the two environments, so the regime says so.
    if (!refused.empty())
        profile.note += " (not " + refused + ", whose recorded value no library spells so)";
    auto noteLowered = [&] {
        if (!lowered.empty())
            profile.note += ", with ATEN_CPU_CAPABILITY lowered from " + lowered + " to " + hostLevel +
                            ", the most this CPU runs (torch would run the training's level without asking the CPU)";
    };
    if (recorded->cpuFlags == host.cpuFlags && recorded->cpuVendor == host.cpuVendor) {
        noteLowered();
        return profile;
    }
    // Another CPU: each library then picks its kernels for this one. Where the training's
    // level is one this CPU has, capping at it runs the training's kernels (blocking that
    // depends on cache sizes may still differ: the regime stays cross-environment).
    auto pin = [&](const char* name, const std::string& value) {
        if (value.empty() || recorded->settings.count(name))
            return;
        profile.variables[name] = value;
        profile.pinned[name] = value;
    };
    const std::string trainingLevel = atenCapabilityValue(recorded->torchCpuCapability);
    // Lowered only where pinned: a level the trainer set was lowered (or kept) above.
    if (!trainingLevel.empty() && !recorded->settings.count("ATEN_CPU_CAPABILITY"))
        pin("ATEN_CPU_CAPABILITY", withinThisCpu(trainingLevel));
    // oneDNN treats its variable as a ceiling and stays within the CPU by itself.
    if (!recorded->onednn.empty() && !recorded->settings.count("DNNL_MAX_CPU_ISA"))
        pin("ONEDNN_MAX_CPU_ISA", onednnIsaFor(recorded->cpuFlags));
    profile.note += ", capped at the training CPU's vector level (it had other ISA extensions than this one)";
    noteLowered();
    return profile;
}

std::string KernelProfile::describeVariables() const
{
    std::string text;
    for (const auto& [name, value] : variables)
        text += (text.empty() ? "" : ", ") + name + "=" + value;
    return text.empty() ? "(none)" : text;
}

std::vector<std::string> KernelProfile::environment(const char* const* base) const
{
    std::vector<std::string> out;
    for (const char* const* entry = base; entry && *entry; ++entry) {
        const char* equals = std::strchr(*entry, '=');
        const std::string name = equals ? std::string(*entry, equals) : std::string(*entry);
        if (choice == KernelChoice::Recorded && !isThreadCount(name) &&
            std::find(NumericEnvironment::settingNames().begin(), NumericEnvironment::settingNames().end(), name) !=
                NumericEnvironment::settingNames().end())
            continue;
        out.emplace_back(*entry);
    }
    if (choice == KernelChoice::Recorded)
        for (const auto& [name, value] : variables)
            out.push_back(name + "=" + value);
    return out;
}

std::string KernelProfile::key() const
{
    if (choice == KernelChoice::Recorded)
        return "recorded:" + describeVariables();
    // The host's settings are this process's now: a server started under others is another.
    std::string key = "host:";
    for (const std::string& name : NumericEnvironment::settingNames())
        if (const char* value = std::getenv(name.c_str()))
            key += name + "=" + value + ",";
    return key;
}

std::string KernelProfile::toJson() const
{
    return toJsonText(nlohmann::json{{"choice", kernelChoiceName(choice)},
                                     {"variables", nlohmann::json(variables)},
                                     {"pinned", nlohmann::json(pinned)},
                                     {"note", note}});
}

}  // namespace zkdv
