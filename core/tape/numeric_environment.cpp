#include "zkdv/tape/numeric_environment.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
using nlohmann::json;

[[noreturn]] void fail(const std::string& where, const std::string& message) { throw FormatError(where + message); }

std::string text(const json& object, const char* name, const std::string& where)
{
    auto it = object.find(name);
    if (it == object.end())
        fail(where, std::string(" has no member ") + name);
    if (!it->is_string())
        fail(where + "." + name, std::string(" must be a string, found ") + it->type_name());
    return it->get<std::string>();
}

std::string quoted(const std::string& value) { return value.empty() ? "(none)" : "\"" + value + "\""; }
}  // namespace

const std::vector<std::string>& NumericEnvironment::settingNames()
{
    // Each selects kernels or their reduction order: torch's vector level, MKL's code path
    // (CBWR pins it) and instruction cap, oneDNN's ISA cap and math mode, the thread pools.
    static const std::vector<std::string> names{"ATEN_CPU_CAPABILITY", "MKL_CBWR",         "MKL_ENABLE_INSTRUCTIONS",
                                                "ONEDNN_MAX_CPU_ISA",  "DNNL_MAX_CPU_ISA", "ONEDNN_DEFAULT_FPMATH_MODE",
                                                "OMP_NUM_THREADS",     "MKL_NUM_THREADS",  "ZKDV_CPU_CAPABILITY"};
    return names;
}

const std::vector<std::string>& NumericEnvironment::flagNames()
{
    static const std::vector<std::string> names{"sse4_2",      "avx",         "avx2",        "fma",        "f16c",
                                                "avx_vnni",    "avx512f",     "avx512dq",    "avx512bw",   "avx512vl",
                                                "avx512_vnni", "avx512_bf16", "avx512_fp16", "amx_tile",   "amx_bf16",
                                                "amx_int8",    "amx_fp16"};
    return names;
}

namespace {

// The first value of each of /proc/cpuinfo's `vendor_id`, `model name` and `flags` lines.
NumericEnvironment readHostCpu()
{
    NumericEnvironment environment;
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line, flags;
    auto value = [&](const char* key, std::string& out) {
        if (!out.empty() || line.rfind(key, 0) != 0)
            return;
        const auto colon = line.find(':');
        if (colon == std::string::npos)
            return;
        out = line.substr(colon + 1);
        out.erase(0, std::min(out.find_first_not_of(" \t"), out.size()));
    };
    while (std::getline(cpuinfo, line)) {
        value("vendor_id", environment.cpuVendor);
        value("model name", environment.cpuModel);
        value("flags", flags);
    }
    std::istringstream words(flags);
    for (std::string flag; words >> flag;)
        if (std::find(NumericEnvironment::flagNames().begin(), NumericEnvironment::flagNames().end(), flag) != NumericEnvironment::flagNames().end())
            environment.cpuFlags.push_back(flag);
    std::sort(environment.cpuFlags.begin(), environment.cpuFlags.end());
    return environment;
}

}  // namespace

NumericEnvironment NumericEnvironment::hostCpu()
{
    // The processor does not change while a process runs: /proc/cpuinfo is read once.
    static const NumericEnvironment host = readHostCpu();
    return host;
}

std::string NumericEnvironment::toJson() const
{
    json object = {{"cpu", {{"vendor", cpuVendor}, {"model", cpuModel}, {"flags", cpuFlags}}},
                   {"torch_cpu_capability", torchCpuCapability},
                   {"blas", blas},
                   {"mkl", mkl},
                   {"onednn", onednn},
                   {"intra_op_threads", intraOpThreads},
                   {"settings", json(settings)}};
    return toJsonText(object);
}

NumericEnvironment NumericEnvironment::parse(const std::string& text_, const std::string& where)
{
    const json object = parseUntrustedJson(text_, where);
    if (!object.is_object())
        fail(where, std::string(" must be an object, found ") + object.type_name());
    NumericEnvironment environment;
    auto cpu = object.find("cpu");
    if (cpu == object.end() || !cpu->is_object())
        fail(where, ".cpu must be an object");
    environment.cpuVendor = text(*cpu, "vendor", where + ".cpu");
    environment.cpuModel = text(*cpu, "model", where + ".cpu");
    auto flags = cpu->find("flags");
    if (flags == cpu->end() || !flags->is_array())
        fail(where, ".cpu.flags must be an array of strings");
    for (const json& flag : *flags) {
        if (!flag.is_string())
            fail(where, ".cpu.flags holds " + flag.dump() + ", expected strings");
        environment.cpuFlags.push_back(flag.get<std::string>());
    }
    std::sort(environment.cpuFlags.begin(), environment.cpuFlags.end());
    environment.torchCpuCapability = text(object, "torch_cpu_capability", where);
    environment.blas = text(object, "blas", where);
    environment.mkl = text(object, "mkl", where);
    environment.onednn = text(object, "onednn", where);
    auto threads = object.find("intra_op_threads");
    if (threads == object.end() || !threads->is_number_integer() || threads->get<std::int64_t>() < 1 ||
        threads->get<std::int64_t>() > 65536)
        fail(where, ".intra_op_threads must be an integer from 1 to 65536");
    environment.intraOpThreads = static_cast<int>(threads->get<std::int64_t>());
    auto settings = object.find("settings");
    if (settings == object.end() || !settings->is_object())
        fail(where, ".settings must be an object of strings");
    for (const auto& [name, value] : settings->items()) {
        if (!value.is_string())
            fail(where + ".settings." + name, std::string(" must be a string, found ") + value.type_name());
        environment.settings.emplace(name, value.get<std::string>());
    }
    return environment;
}

std::vector<std::string> NumericEnvironment::differences(const NumericEnvironment& other) const
{
    std::vector<std::string> differ;
    auto compare = [&](const char* name, const auto& a, const auto& b) {
        if (a != b)
            differ.push_back(name);
    };
    compare("cpu.vendor", cpuVendor, other.cpuVendor);
    compare("cpu.model", cpuModel, other.cpuModel);
    compare("cpu.flags", cpuFlags, other.cpuFlags);
    compare("torch_cpu_capability", torchCpuCapability, other.torchCpuCapability);
    compare("blas", blas, other.blas);
    compare("mkl", mkl, other.mkl);
    compare("onednn", onednn, other.onednn);
    compare("intra_op_threads", intraOpThreads, other.intraOpThreads);
    std::vector<std::string> names;
    for (const auto* side : {&settings, &other.settings})
        for (const auto& [name, value] : *side)
            if (std::find(names.begin(), names.end(), name) == names.end())
                names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        auto a = settings.find(name), b = other.settings.find(name);
        if ((a == settings.end()) != (b == other.settings.end()) || (a != settings.end() && a->second != b->second))
            differ.push_back("settings." + name);
    }
    return differ;
}

std::string NumericEnvironment::describeDifferences(const NumericEnvironment& replay) const
{
    std::string out;
    auto add = [&](const std::string& name, const std::string& recorded, const std::string& replayed) {
        out += (out.empty() ? "" : "; ") + name + " " + quoted(recorded) + " -> " + quoted(replayed);
    };
    auto joined = [](const std::vector<std::string>& flags) {
        std::string text;
        for (const std::string& flag : flags)
            text += (text.empty() ? "" : " ") + flag;
        return text;
    };
    for (const std::string& name : differences(replay)) {
        if (name == "cpu.vendor")
            add(name, cpuVendor, replay.cpuVendor);
        else if (name == "cpu.model")
            add(name, cpuModel, replay.cpuModel);
        else if (name == "cpu.flags")
            add(name, joined(cpuFlags), joined(replay.cpuFlags));
        else if (name == "torch_cpu_capability")
            add(name, torchCpuCapability, replay.torchCpuCapability);
        else if (name == "blas")
            add(name, blas, replay.blas);
        else if (name == "mkl")
            add(name, mkl, replay.mkl);
        else if (name == "onednn")
            add(name, onednn, replay.onednn);
        else if (name == "intra_op_threads")
            add(name, std::to_string(intraOpThreads), std::to_string(replay.intraOpThreads));
        else {
            const std::string variable = name.substr(sizeof("settings.") - 1);
            auto a = settings.find(variable), b = replay.settings.find(variable);
            add(name, a == settings.end() ? "" : a->second, b == replay.settings.end() ? "" : b->second);
        }
    }
    return out;
}

}  // namespace zkdv
