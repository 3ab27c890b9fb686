#pragma once
// The kernel profile replay workers run under (docs/replay.md, "Kernel profile"): the
// environment variables that choose CPU kernels (NumericEnvironment::settingNames), set as
// the training had them rather than as the auditor's shell has them, and, on a CPU other
// than the training's, capped at the vector level the training's CPU ran at, so that torch
// and oneDNN run the training's kernels wherever this CPU can.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/tape/numeric_environment.h"

namespace zkdv {

enum class KernelChoice {
    Recorded,  // the training's profile (the default)
    Host,      // the auditor's environment as it is
};

// "recorded", "host" (the CLI's --kernels and the run's spelling); nullopt for anything else.
std::string_view kernelChoiceName(KernelChoice choice);
std::optional<KernelChoice> parseKernelChoice(std::string_view text);

struct KernelProfile {
    KernelChoice choice = KernelChoice::Host;
    // The kernel-choosing variables the workers get; every other one of settingNames() is
    // removed from their environment. Unused for Host.
    std::map<std::string, std::string> variables;
    // Of `variables`, those the training did not set, inferred from its environment because
    // this CPU is another one (ATEN_CPU_CAPABILITY, ONEDNN_MAX_CPU_ISA).
    std::map<std::string, std::string> pinned;
    std::string note;  // why the profile is what it is, for the run and its report

    // "ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2" ("(none)" when empty).
    std::string describeVariables() const;
    // `base` (an environ-style list) with the profile applied.
    std::vector<std::string> environment(const char* const* base) const;
    // Equal for profiles whose workers get the same kernel settings (the fork servers' key;
    // for Host, the settings this process has now).
    std::string key() const;
    // The run's record of it: {"choice", "variables", "pinned", "note"}.
    std::string toJson() const;
};

// `recorded` is the tape's `numerics` (none before 1.5: then there is nothing to pin and the
// workers run as the host has them); `host` is this machine's CPU (NumericEnvironment::hostCpu).
KernelProfile kernelProfileFor(KernelChoice choice, const std::optional<NumericEnvironment>& recorded, const NumericEnvironment& host);

// torch's ATEN_CPU_CAPABILITY value for the level a torch reported ("AVX2" -> "avx2"); "" for
// a level the variable cannot select.
std::string atenCapabilityValue(const std::string& reportedLevel);
// The highest ATEN_CPU_CAPABILITY a CPU with these flags runs ("default", "avx2", "avx512").
std::string atenCapabilityFor(const std::vector<std::string>& cpuFlags);
// oneDNN's ONEDNN_MAX_CPU_ISA value for the most a CPU with these flags runs ("AVX2",
// "AVX512_CORE_VNNI", …).
std::string onednnIsaFor(const std::vector<std::string>& cpuFlags);

}  // namespace zkdv
