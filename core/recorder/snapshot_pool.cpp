#include "snapshot_pool.h"

namespace zkdv {

std::shared_ptr<std::vector<at::Tensor>> SnapshotPool::acquire(const std::vector<at::Tensor>& tensors)
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
    // Blocking copies: the writer thread reads the buffers as soon as it gets them.
    for (std::size_t i = 0; i < tensors.size(); ++i)
        slot.buffers[i].copy_(tensors[i]);
    return std::shared_ptr<std::vector<at::Tensor>>(&slot.buffers, [this, index](std::vector<at::Tensor>*) { release(index); });
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
