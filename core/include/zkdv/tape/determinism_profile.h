#pragma once
// How a training step's numbers were made on its device: the device, the CUDA libraries, and
// the switches torch reads when it picks a kernel (deterministic algorithms, cuDNN, TF32,
// matmul precision, cuBLAS's workspace, the attention backends) and the optimizer
// implementation it resolved. The root member `determinism` (spec section 3.5, since 1.13)
// records the trainer's; a replay applies it before anything runs and compares its own with
// it (docs/replay.md, "Determinism profile").

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace zkdv {

struct DeterminismProfile {
    std::string deviceKind = "cpu";  // "cpu", "cuda"
    std::string deviceName;          // "NVIDIA H200"; the CPU's model name on "cpu"; "" when unknown
    std::string cudaVersion;         // the CUDA runtime torch runs, "" without CUDA
    std::string cudnnVersion;        // cuDNN's version number, "" without cuDNN
    // torch.use_deterministic_algorithms: "off", "on" or "warn-only".
    std::string deterministicAlgorithms = "off";
    bool cudnnEnabled = true;
    bool cudnnDeterministic = false;
    bool cudnnBenchmark = false;
    bool cudnnAllowTf32 = true;
    bool matmulAllowTf32 = false;
    std::string float32MatmulPrecision = "highest";  // "highest", "high", "medium"
    // cuBLAS's reduced-precision reductions in fp16 and bf16 GEMMs: "allow", "disallow" or
    // "disallow-no-splitk"; bf16 absent where this torch has no such switch.
    std::string matmulFp16Reduction = "allow";
    std::optional<std::string> matmulBf16Reduction;
    std::optional<bool> matmulAllowFp16Accumulation;  // absent: this torch has no such switch
    std::string cublasWorkspaceConfig;               // CUBLAS_WORKSPACE_CONFIG, "" when unset
    // The scaled-dot-product-attention backends enabled, by name ("flash", "math", …); absent
    // members are backends this torch does not have.
    std::map<std::string, bool> sdpaBackends;
    // The optimizer implementation torch resolved (`foreach`, `fused`); absent: the optimizer
    // has no such option.
    std::optional<bool> optimizerForeach;
    std::optional<bool> optimizerFused;
    int intraOpThreads = 1;
    // The recorder put the deterministic settings in force itself (its default on CUDA).
    bool setByRecorder = false;

    std::string toJson() const;  // the root member's object, one line
    // Parses the member's object; FormatError names the member at fault, after `where`
    // ("root record: determinism").
    static DeterminismProfile parse(const std::string& json, const std::string& where);

    // Every member by its dotted JSON name ("cudnn.allow_tf32") with its value as JSON text.
    std::map<std::string, std::string> members() const;
    // The members that decide the bits of a step and in which `replay` differs from this
    // profile; with `nondeterministic()`, these put a replay in the cross-environment regime.
    std::vector<std::string> differences(const DeterminismProfile& replay) const;
    // "device.name \"A\" -> \"B\"; matmul.allow_tf32 true -> false": the differences in words.
    std::string describeDifferences(const DeterminismProfile& replay) const;
    // Why a step run under this profile need not reproduce its own bits ("" when it should):
    // on CUDA, nondeterministic algorithms allowed, cuDNN not deterministic or benchmarking.
    std::string nondeterministic() const;
    // The profile in words for a report: "cuda:NVIDIA H200, CUDA 13.0, cuDNN 91000; deterministic
    // algorithms warn-only; cuDNN deterministic, not benchmarking, TF32 off; matmul TF32 off,
    // precision highest; CUBLAS_WORKSPACE_CONFIG :4096:8".
    std::string summary() const;
};

// The profile a replay runs a tape recorded under `recorded` with: every switch that decides
// the numbers as the trainer had it; deterministic algorithms (warn-only at least), cuDNN
// deterministic and not benchmarking whatever the trainer had, since the replay must be
// reproducible itself; cuBLAS's workspace as recorded or ":4096:8". `base` is the worker's
// own profile (its device, libraries and the switches its torch has), `device` the replay's
// ("cpu", "cuda:0") and `deviceName` that device's name. Without a recorded profile (tapes
// before 1.13) only the replay's own determinism is set.
DeterminismProfile replayDeterminism(const std::optional<DeterminismProfile>& recorded, const DeterminismProfile& base,
                                     const std::string& device, const std::string& deviceName);

}  // namespace zkdv
