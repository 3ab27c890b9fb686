#include "snapshot_pool.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <c10/core/impl/VirtualGuardImpl.h>

namespace zkdv {

void SnapshotCopy::wait() const
{
    // libtorch 1.13's Event cannot block on itself; polling costs the writer thread a few
    // wake-ups per snapshot, never the training thread.
    for (const c10::Event& event : copied)
        while (!event.query())
            std::this_thread::sleep_for(std::chrono::microseconds(100));
}

std::shared_ptr<SnapshotCopy> SnapshotPool::acquire(const std::vector<at::Tensor>& tensors)
{
    std::size_t index = 0;
    {
        std::unique_lock<std::mutex> lock(mutex_);
        freed_.wait(lock, [&] { return inUse_ < slots_.size(); });
        while (slots_[index].inUse)
            ++index;
        slots_[index].inUse = true;
        highWater_ = std::max(highWater_, ++inUse_);
    }
    Slot& slot = slots_[index];
    // Buffers are reused while the state keeps its layout (it grows once, when lazy
    // optimizer state such as SGD's momentum buffer appears).
    bool sameLayout = slot.buffers.size() == tensors.size();
    for (std::size_t i = 0; sameLayout && i < tensors.size(); ++i)
        sameLayout = slot.buffers[i].sizes() == tensors[i].sizes() && slot.buffers[i].scalar_type() == tensors[i].scalar_type();
    if (!sameLayout) {
        slot.buffers.clear();
        for (const at::Tensor& tensor : tensors)
            slot.buffers.push_back(at::empty(tensor.sizes(), at::TensorOptions().dtype(tensor.scalar_type()).pinned_memory(tensor.is_cuda())));
    }
    auto copy = std::shared_ptr<SnapshotCopy>(new SnapshotCopy, [this, index](SnapshotCopy* done) {
        delete done;
        release(index);
    });
    copy->buffers = &slot.buffers;
    // CPU state is copied here; device state asynchronously into the pinned buffers, in
    // stream order, with an event after each device's last copy for the writer to wait on.
    std::vector<c10::Device> devices;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const bool onCuda = tensors[i].is_cuda();
        slot.buffers[i].copy_(tensors[i], /*non_blocking=*/onCuda);
        if (onCuda && std::find(devices.begin(), devices.end(), tensors[i].device()) == devices.end())
            devices.push_back(tensors[i].device());
    }
    for (const c10::Device& device : devices) {
        const c10::impl::VirtualGuardImpl guard(device.type());
        copy->copied.emplace_back(device.type());
        copy->copied.back().record(guard.getStream(device));
    }
    return copy;
}

void SnapshotPool::release(std::size_t index)
{
    {
        std::lock_guard<std::mutex> lock(mutex_);
        slots_[index].inUse = false;
        --inUse_;
    }
    freed_.notify_one();
}

std::size_t SnapshotPool::highWater() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return highWater_;
}

}  // namespace zkdv
