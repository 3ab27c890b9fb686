#include "zkdv/tensor/determinism_probe.h"

#include <dlfcn.h>

#include <cstdlib>
#include <optional>
#include <type_traits>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/detail/CUDAHooksInterface.h>

#include "zkdv/tape/numeric_environment.h"
#include "zkdv/tensor/torch_build.h"

namespace zkdv {

namespace {

// torch's switches came and changed shape between releases (1.13 has two attention backends
// and boolean reductions, 2.x more backends and three-way reductions); each is read and set
// where this torch has it, detected by overload resolution rather than by version numbers.
#define ZKDV_OPTIONAL_SWITCH(name, getter, setter)                                                                 \
    template <class C>                                                                                             \
    auto get_##name(const C& context, int) -> decltype(static_cast<bool>(context.getter()), std::optional<bool>()) \
    {                                                                                                              \
        return static_cast<bool>(context.getter());                                                                \
    }                                                                                                              \
    template <class C>                                                                                             \
    std::optional<bool> get_##name(const C&, long)                                                                 \
    {                                                                                                              \
        return std::nullopt;                                                                                       \
    }                                                                                                              \
    template <class C>                                                                                             \
    auto set_##name(C& context, bool value, int) -> decltype(context.setter(value), void())                        \
    {                                                                                                              \
        context.setter(value);                                                                                     \
    }                                                                                                              \
    template <class C>                                                                                             \
    void set_##name(C&, bool, long)                                                                                \
    {                                                                                                              \
    }

ZKDV_OPTIONAL_SWITCH(flash, userEnabledFlashSDP, setSDPUseFlash)
ZKDV_OPTIONAL_SWITCH(memEfficient, userEnabledMemEfficientSDP, setSDPUseMemEfficient)
ZKDV_OPTIONAL_SWITCH(math, userEnabledMathSDP, setSDPUseMath)
ZKDV_OPTIONAL_SWITCH(cudnnAttention, userEnabledCuDNNSDP, setSDPUseCuDNN)
ZKDV_OPTIONAL_SWITCH(fp16Accumulation, allowFP16AccumulationCuBLAS, setAllowFP16AccumulationCuBLAS)

template <class T>
std::string reductionName(T value)
{
    if constexpr (std::is_same_v<T, bool>)
        return value ? "allow" : "disallow";
    else
        switch (static_cast<int>(value)) {
        case 0: return "allow";
        case 1: return "disallow";
        default: return "disallow-no-splitk";
        }
}

template <class C>
auto bf16Reduction(const C& context, int) -> decltype(context.allowBF16ReductionCuBLAS(), std::optional<std::string>())
{
    return reductionName(context.allowBF16ReductionCuBLAS());
}
template <class C>
std::optional<std::string> bf16Reduction(const C&, long)
{
    return std::nullopt;
}

// Three-way where torch has the split-K switch, two-way before.
template <class C>
auto setFp16Reduction(C& context, const std::string& value, int) -> decltype(context.setAllowFP16ReductionCuBLAS(true, true), void())
{
    context.setAllowFP16ReductionCuBLAS(value == "allow", value != "disallow-no-splitk");
}
template <class C>
void setFp16Reduction(C& context, const std::string& value, long)
{
    context.setAllowFP16ReductionCuBLAS(value == "allow");
}
template <class C>
auto setBf16Reduction(C& context, const std::string& value, int) -> decltype(context.setAllowBF16ReductionCuBLAS(true, true), void())
{
    context.setAllowBF16ReductionCuBLAS(value == "allow", value != "disallow-no-splitk");
}
template <class C>
auto setBf16Reduction(C& context, const std::string& value, long) -> decltype(context.setAllowBF16ReductionCuBLAS(true), void())
{
    context.setAllowBF16ReductionCuBLAS(value == "allow");
}
template <class C>
void setBf16Reduction(C&, const std::string&, ...)
{
}

std::string precisionName(at::Float32MatmulPrecision precision)
{
    switch (precision) {
    case at::Float32MatmulPrecision::HIGHEST: return "highest";
    case at::Float32MatmulPrecision::HIGH: return "high";
    case at::Float32MatmulPrecision::MEDIUM: return "medium";
    }
    return "highest";
}

std::string cudnnVersion()
{
    if (!at::hasCUDA() || !at::detail::getCUDAHooks().hasCuDNN())
        return "";
    return std::to_string(at::detail::getCUDAHooks().versionCuDNN());
}

}  // namespace

std::vector<std::string> cudaDeviceNames()
{
    std::vector<std::string> names;
    const int count = cudaDeviceCount();
    if (count == 0)
        return names;
    void* driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!driver)
        driver = dlopen("libcuda.so.1", RTLD_NOW);
    using Init = int (*)(unsigned);
    using Get = int (*)(int*, int);
    using GetName = int (*)(char*, int, int);
    auto init = driver ? reinterpret_cast<Init>(dlsym(driver, "cuInit")) : nullptr;
    auto get = driver ? reinterpret_cast<Get>(dlsym(driver, "cuDeviceGet")) : nullptr;
    auto getName = driver ? reinterpret_cast<GetName>(dlsym(driver, "cuDeviceGetName")) : nullptr;
    const bool usable = init && get && getName && init(0) == 0;
    for (int i = 0; i < count; ++i) {
        char name[256] = {};
        int handle = 0;
        if (usable && get(&handle, i) == 0 && getName(name, sizeof name - 1, handle) == 0)
            names.emplace_back(name);
        else
            names.emplace_back();
    }
    return names;
}

DeterminismProfile currentDeterminismProfile(const std::string& device)
{
    at::Context& context = at::globalContext();
    DeterminismProfile profile;
    profile.deviceKind = device.rfind("cuda", 0) == 0 ? "cuda" : "cpu";
    if (profile.deviceKind == "cuda") {
        const std::string index = device.size() > 5 ? device.substr(5) : "0";
        const std::vector<std::string> names = cudaDeviceNames();
        const std::size_t n = static_cast<std::size_t>(std::strtoul(index.c_str(), nullptr, 10));
        profile.deviceName = n < names.size() ? names[n] : "";
    } else {
        profile.deviceName = NumericEnvironment::hostCpu().cpuModel;
    }
    profile.cudaVersion = cudaVersion();
    profile.cudnnVersion = cudnnVersion();
    profile.deterministicAlgorithms =
        !context.deterministicAlgorithms() ? "off" : (context.deterministicAlgorithmsWarnOnly() ? "warn-only" : "on");
    profile.cudnnEnabled = context.userEnabledCuDNN();
    profile.cudnnDeterministic = context.deterministicCuDNN();
    profile.cudnnBenchmark = context.benchmarkCuDNN();
    profile.float32MatmulPrecision = precisionName(context.float32MatmulPrecision());
    // torch 2.9 and later refuse to answer the legacy TF32 questions once a program mixed
    // them with the per-backend precision settings; then the matmul precision answers.
    try {
        profile.cudnnAllowTf32 = context.allowTF32CuDNN();
    } catch (const std::exception&) {
        profile.cudnnAllowTf32 = profile.float32MatmulPrecision != "highest";
    }
    try {
        profile.matmulAllowTf32 = context.allowTF32CuBLAS();
    } catch (const std::exception&) {
        profile.matmulAllowTf32 = profile.float32MatmulPrecision != "highest";
    }
    profile.matmulFp16Reduction = reductionName(context.allowFP16ReductionCuBLAS());
    profile.matmulBf16Reduction = bf16Reduction(context, 0);
    profile.matmulAllowFp16Accumulation = get_fp16Accumulation(context, 0);
    const char* workspace = std::getenv("CUBLAS_WORKSPACE_CONFIG");
    profile.cublasWorkspaceConfig = workspace ? workspace : "";
    auto backend = [&](const char* name, std::optional<bool> enabled) {
        if (enabled)
            profile.sdpaBackends.emplace(name, *enabled);
    };
    backend("flash", get_flash(context, 0));
    backend("mem_efficient", get_memEfficient(context, 0));
    backend("math", get_math(context, 0));
    backend("cudnn", get_cudnnAttention(context, 0));
    profile.intraOpThreads = at::get_num_threads();
    return profile;
}

void applyDeterminismProfile(const DeterminismProfile& profile)
{
    at::Context& context = at::globalContext();
    context.setDeterministicAlgorithms(profile.deterministicAlgorithms != "off", profile.deterministicAlgorithms == "warn-only");
    context.setUserEnabledCuDNN(profile.cudnnEnabled);
    context.setDeterministicCuDNN(profile.cudnnDeterministic);
    context.setBenchmarkCuDNN(profile.cudnnBenchmark);
    context.setAllowTF32CuDNN(profile.cudnnAllowTf32);
    context.setAllowTF32CuBLAS(profile.matmulAllowTf32);
    context.setFloat32MatmulPrecision(profile.float32MatmulPrecision);
    setFp16Reduction(context, profile.matmulFp16Reduction, 0);
    if (profile.matmulBf16Reduction)
        setBf16Reduction(context, *profile.matmulBf16Reduction, 0);
    if (profile.matmulAllowFp16Accumulation)
        set_fp16Accumulation(context, *profile.matmulAllowFp16Accumulation, 0);
    for (const auto& [name, enabled] : profile.sdpaBackends) {
        if (name == "flash")
            set_flash(context, enabled, 0);
        else if (name == "mem_efficient")
            set_memEfficient(context, enabled, 0);
        else if (name == "math")
            set_math(context, enabled, 0);
        else if (name == "cudnn")
            set_cudnnAttention(context, enabled, 0);
    }
    if (!profile.cublasWorkspaceConfig.empty())
        setenv("CUBLAS_WORKSPACE_CONFIG", profile.cublasWorkspaceConfig.c_str(), 1);
}

std::string applyDeterministicTraining()
{
    const DeterminismProfile before = currentDeterminismProfile("cpu");
    DeterminismProfile wanted = before;
    if (wanted.deterministicAlgorithms == "off")
        wanted.deterministicAlgorithms = "warn-only";
    wanted.cudnnDeterministic = true;
    wanted.cudnnBenchmark = false;
    wanted.cudnnAllowTf32 = false;
    wanted.matmulAllowTf32 = false;
    wanted.float32MatmulPrecision = "highest";
    if (wanted.cublasWorkspaceConfig.empty())
        wanted.cublasWorkspaceConfig = ":4096:8";
    applyDeterminismProfile(wanted);
    std::string changed;
    auto note = [&](bool differs, const char* what) {
        if (differs)
            changed += (changed.empty() ? "" : ", ") + std::string(what);
    };
    note(before.deterministicAlgorithms != wanted.deterministicAlgorithms, "deterministic algorithms (warn-only)");
    note(!before.cudnnDeterministic, "cuDNN deterministic");
    note(before.cudnnBenchmark, "cuDNN benchmarking off");
    note(before.cudnnAllowTf32 || before.matmulAllowTf32, "TF32 off");
    note(before.float32MatmulPrecision != "highest", "float32 matmul precision highest");
    note(before.cublasWorkspaceConfig.empty(), "CUBLAS_WORKSPACE_CONFIG=:4096:8");
    return changed;
}

}  // namespace zkdv
