#pragma once
// The numerical environment a training step ran in: the CPU, the kernels torch chose for it
// and the libraries and settings those dispatch on. The root member `numerics` (spec section
// 3, since 1.5) records the trainer's; a replay compares it with its own, since the bits of a
// CPU step depend on every part of it (docs/replay.md, "Regimes").

#include <map>
#include <string>
#include <vector>

namespace zkdv {

struct NumericEnvironment {
    std::string cpuVendor;               // "GenuineIntel", "AuthenticAMD"
    std::string cpuModel;                // the processor's model name
    std::vector<std::string> cpuFlags;   // the ISA extensions kernels dispatch on, sorted
    std::string torchCpuCapability;      // torch's kernel level in use: "DEFAULT", "AVX2", "AVX512"
    std::string blas;                    // torch's BLAS_INFO ("mkl", "generic") and the library loaded
    std::string mkl;                     // MKL's identity, "" when torch has none
    std::string onednn;                  // oneDNN's identity, "" when torch has none
    int intraOpThreads = 0;
    // The environment variables that change which kernels run (ATEN_CPU_CAPABILITY, MKL_CBWR,
    // ONEDNN_MAX_CPU_ISA, …), those that are set.
    std::map<std::string, std::string> settings;

    // The variables `settings` looks at, in the order they are documented.
    static const std::vector<std::string>& settingNames();
    // The ISA flags `cpuFlags` keeps (the rest of /proc/cpuinfo does not choose kernels).
    static const std::vector<std::string>& flagNames();

    // This machine's CPU (vendor, model, the kept flags), the other members empty: what a
    // process that loads no torch (a replay's parent) knows of the environment.
    static NumericEnvironment hostCpu();

    std::string toJson() const;  // the root member's object, one line
    // Parses the member's object; FormatError names the member at fault, after `where`
    // ("root record: numerics").
    static NumericEnvironment parse(const std::string& json, const std::string& where);

    // The members in which `other` differs, by their JSON names ("cpu_model",
    // "settings.MKL_CBWR", …); empty when the two would run the same kernels.
    std::vector<std::string> differences(const NumericEnvironment& other) const;
    // "cpu_model \"X\" → \"Y\"; torch_cpu_capability AVX2 → DEFAULT": what differs, in words.
    std::string describeDifferences(const NumericEnvironment& replay) const;
};

}  // namespace zkdv
