#include "snapshot_pool.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <c10/core/StreamGuard.h>
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

SnapshotPool::~SnapshotPool()
{
    // The side streams may still read a staging area only if a copy was abandoned unwaited
    // (an exception unwinding the recorder): the area outlives those reads.
    for (const auto& staging : staging_)
        if (staging->transferred)
            while (!staging->transferred->query())
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
    // CPU state is copied here; each device's state asynchronously (copyFromDevice), with an
    // event after its last copy for the writer to wait on.
    std::vector<c10::Device> devices;
    std::vector<std::vector<std::size_t>> onDevice;
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        if (!tensors[i].is_cuda()) {
            slot.buffers[i].copy_(tensors[i]);
            continue;
        }
        const std::size_t d = static_cast<std::size_t>(std::find(devices.begin(), devices.end(), tensors[i].device()) - devices.begin());
        if (d == devices.size()) {
            devices.push_back(tensors[i].device());
            onDevice.emplace_back();
        }
        onDevice[d].push_back(i);
    }
    for (std::size_t d = 0; d < devices.size(); ++d)
        copyFromDevice(devices[d], onDevice[d], tensors, slot.buffers, *copy);
    return copy;
}

SnapshotPool::DeviceStaging& SnapshotPool::stagingFor(const c10::Device& device)
{
    for (const auto& staging : staging_)
        if (staging->device == device)
            return *staging;
    const c10::impl::VirtualGuardImpl guard(device.type());
    staging_.push_back(std::make_unique<DeviceStaging>(DeviceStaging{device, guard.getStreamFromGlobalPool(device), {}, nullptr, false}));
    return *staging_.back();
}

void SnapshotPool::copyFromDevice(const c10::Device& device, const std::vector<std::size_t>& indices, const std::vector<at::Tensor>& tensors,
                                  std::vector<at::Tensor>& buffers, SnapshotCopy& copy)
{
    const c10::impl::VirtualGuardImpl guard(device.type());
    const c10::Stream training = guard.getStream(device);
    DeviceStaging& staging = stagingFor(device);

    // The staging area, laid out as this state; a new layout frees the old area only after
    // the training stream has waited for the side stream's last read of it (the caching
    // allocator hands freed memory to later work on the training stream).
    bool sameLayout = !staging.refused && staging.area.size() == indices.size();
    for (std::size_t k = 0; sameLayout && k < indices.size(); ++k)
        sameLayout = staging.area[k].sizes() == tensors[indices[k]].sizes() && staging.area[k].scalar_type() == tensors[indices[k]].scalar_type();
    if (!sameLayout && !staging.refused) {
        if (staging.transferred)
            staging.transferred->block(training);
        staging.area.clear();
        try {
            for (std::size_t index : indices)
                staging.area.push_back(at::empty(tensors[index].sizes(), tensors[index].options()));
        } catch (const c10::Error&) {
            // Out of device memory: training matters more than the overlap.
            staging.area.clear();
            staging.refused = true;
        }
    }

    if (staging.refused) {
        for (std::size_t index : indices)
            buffers[index].copy_(tensors[index], /*non_blocking=*/true);
        copy.copied.emplace_back(device.type());
        copy.copied.back().record(training);
        std::lock_guard<std::mutex> lock(mutex_);
        ++trainingStreamCopies_;
        return;
    }

    // Device to device on the training stream (after the previous transfer out of the area),
    // then the host transfer on the side stream once the clone is done.
    if (staging.transferred)
        staging.transferred->block(training);
    for (std::size_t k = 0; k < indices.size(); ++k)
        staging.area[k].copy_(tensors[indices[k]], /*non_blocking=*/true);
    c10::Event staged(device.type());
    staged.record(training);
    staged.block(staging.side);
    {
        const c10::StreamGuard onSide(staging.side);
        for (std::size_t k = 0; k < indices.size(); ++k)
            buffers[indices[k]].copy_(staging.area[k], /*non_blocking=*/true);
    }
    copy.copied.emplace_back(device.type());
    copy.copied.back().record(staging.side);
    staging.transferred = std::make_unique<c10::Event>(device.type());
    staging.transferred->record(staging.side);
    std::lock_guard<std::mutex> lock(mutex_);
    ++sideStreamCopies_;
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

std::size_t SnapshotPool::sideStreamCopies() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return sideStreamCopies_;
}

std::size_t SnapshotPool::trainingStreamCopies() const
{
    std::lock_guard<std::mutex> lock(mutex_);
    return trainingStreamCopies_;
}

}  // namespace zkdv
