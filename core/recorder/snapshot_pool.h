#pragma once
// A bounded pool of host buffers for full-state snapshots (pinned when training on CUDA):
// the training thread copies the state into a free buffer and the background writer hands
// it back once written, so snapshot memory is bounded by the pool, not by the run length.
// Copies from a CUDA device are asynchronous: queued on the device's current stream, after
// the work that made the state and before the work that changes it next, so the training
// thread goes on at once and only the writer waits for them (SnapshotCopy::wait).

#include <condition_variable>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/ATen.h>
#include <c10/core/Event.h>

namespace zkdv {

// A pool slot's host buffers, being filled from the state.
struct SnapshotCopy {
    std::vector<at::Tensor>* buffers = nullptr;
    std::vector<c10::Event> copied;  // recorded after the copies, one per CUDA device; none for CPU state

    // Returns once every buffer holds its copy (at once for CPU state). Call before reading
    // the buffers; it blocks the calling thread only.
    void wait() const;
};

class SnapshotPool {
public:
    explicit SnapshotPool(std::size_t size) : slots_(size ? size : 1) {}

    // Host copies of `tensors`, in a pool slot; blocks while every slot is in use. The slot
    // returns to the pool when the last copy of the returned handle is destroyed.
    std::shared_ptr<SnapshotCopy> acquire(const std::vector<at::Tensor>& tensors);

    std::size_t size() const { return slots_.size(); }
    std::size_t highWater() const;

private:
    struct Slot {
        std::vector<at::Tensor> buffers;
        bool inUse = false;
    };
    void release(std::size_t index);

    std::vector<Slot> slots_;
    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::size_t inUse_ = 0;
    std::size_t highWater_ = 0;
};

}  // namespace zkdv
