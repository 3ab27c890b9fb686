#include "zkdv/tensor/autocast_scope.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/version.h>

#include "zkdv/tensor/torch_tensors.h"

namespace zkdv {

namespace {

// torch 2.x names autocast by device type; 1.13 has a function per device.
bool enabled(at::DeviceType device)
{
#if TORCH_VERSION_MAJOR >= 2
    return at::autocast::is_autocast_enabled(device);
#else
    return device == at::kCPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
#endif
}

void setEnabled(at::DeviceType device, bool on)
{
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_enabled(device, on);
#else
    if (device == at::kCPU)
        at::autocast::set_cpu_enabled(on);
    else
        at::autocast::set_enabled(on);
#endif
}

at::ScalarType castType(at::DeviceType device)
{
#if TORCH_VERSION_MAJOR >= 2
    return at::autocast::get_autocast_dtype(device);
#else
    return device == at::kCPU ? at::autocast::get_autocast_cpu_dtype() : at::autocast::get_autocast_gpu_dtype();
#endif
}

void setCastType(at::DeviceType device, at::ScalarType type)
{
#if TORCH_VERSION_MAJOR >= 2
    at::autocast::set_autocast_dtype(device, type);
#else
    if (device == at::kCPU)
        at::autocast::set_autocast_cpu_dtype(type);
    else
        at::autocast::set_autocast_gpu_dtype(type);
#endif
}

}  // namespace

AutocastSetting currentAutocast()
{
    AutocastSetting setting;
    if (enabled(at::kCPU))
        setting.emplace_back("cpu", dtypeOf(castType(at::kCPU)));
    if (enabled(at::kCUDA))
        setting.emplace_back("cuda", dtypeOf(castType(at::kCUDA)));
    // Others are not replayed: named, so the recorder can refuse them.
    if (!c10::impl::tls_is_dispatch_key_excluded(c10::DispatchKey::AutocastXPU))
        setting.emplace_back("xpu", DType::BF16);
    return setting;
}

AutocastScope::AutocastScope(const AutocastSetting& setting)
{
    cpu_ = enabled(at::kCPU);
    cuda_ = enabled(at::kCUDA);
    cpuDtype_ = dtypeOf(castType(at::kCPU));
    cudaDtype_ = dtypeOf(castType(at::kCUDA));
    bool cpu = false, cuda = false;
    for (const auto& [device, dtype] : setting) {
        if (device == "cpu") {
            cpu = true;
            setCastType(at::kCPU, scalarTypeOf(dtype));
        } else if (device == "cuda") {
            cuda = true;
            setCastType(at::kCUDA, scalarTypeOf(dtype));
        }
    }
    setEnabled(at::kCPU, cpu);
    setEnabled(at::kCUDA, cuda);
    active_ = cpu || cuda;
}

AutocastScope::~AutocastScope()
{
    setEnabled(at::kCPU, cpu_);
    setEnabled(at::kCUDA, cuda_);
    setCastType(at::kCPU, scalarTypeOf(cpuDtype_));
    setCastType(at::kCUDA, scalarTypeOf(cudaDtype_));
    if (active_ && !cpu_ && !cuda_)
        at::autocast::clear_cache();
}

}  // namespace zkdv
