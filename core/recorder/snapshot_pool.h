#pragma once
// A bounded pool of host buffers for full-state snapshots (pinned when training on CUDA):
// the training thread copies the state into a free buffer and the background writer hands
// it back once written, so snapshot memory is bounded by the pool, not by the run length.
// Copies from a CUDA device are asynchronous and leave the training stream at once: the state
// is cloned into a device staging area on the training stream (device to device, after the
// work that made the state and before the work that changes it next), and a side stream copies
// the staging area to the pinned host buffers while training goes on. Neither the training
// thread nor the training stream waits for the host transfer; only the writer does
// (SnapshotCopy::wait). Where the device has no memory for a staging area, the copies are
// queued on the training stream itself (still asynchronous for the thread).

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
    ~SnapshotPool();
    SnapshotPool(const SnapshotPool&) = delete;
    SnapshotPool& operator=(const SnapshotPool&) = delete;

    // Host copies of `tensors`, in a pool slot; blocks while every slot is in use. The slot
    // returns to the pool when the last copy of the returned handle is destroyed.
    std::shared_ptr<SnapshotCopy> acquire(const std::vector<at::Tensor>& tensors);

    std::size_t size() const { return slots_.size(); }
    std::size_t highWater() const;
    // Snapshots whose device state went through a side stream, and those copied on the
    // training stream because the device had no memory for a staging area.
    std::size_t sideStreamCopies() const;
    std::size_t trainingStreamCopies() const;

private:
    struct Slot {
        std::vector<at::Tensor> buffers;
        bool inUse = false;
    };
    // One per CUDA device: its side stream and the staging area the side stream reads from
    // (one for all slots: snapshots are a replay interval apart, so the previous transfer is
    // long done when the next clone waits for it on the device).
    struct DeviceStaging {
        c10::Device device;
        c10::Stream side;
        std::vector<at::Tensor> area;
        std::unique_ptr<c10::Event> transferred;  // the side stream's last read of `area`
        bool refused = false;                     // no device memory for it: the training stream copies
    };
    void release(std::size_t index);
    void copyFromDevice(const c10::Device& device, const std::vector<std::size_t>& indices, const std::vector<at::Tensor>& tensors,
                        std::vector<at::Tensor>& buffers, SnapshotCopy& copy);
    DeviceStaging& stagingFor(const c10::Device& device);

    std::vector<Slot> slots_;
    std::vector<std::unique_ptr<DeviceStaging>> staging_;  // used by the acquiring (training) thread only
    std::size_t sideStreamCopies_ = 0;
    std::size_t trainingStreamCopies_ = 0;
    mutable std::mutex mutex_;
    std::condition_variable freed_;
    std::size_t inUse_ = 0;
    std::size_t highWater_ = 0;
};

}  // namespace zkdv
