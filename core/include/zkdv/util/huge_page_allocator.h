#pragma once
// Memory for large buffers that are filled once and read a few times (sort keys, read
// windows, encoded blobs): backed by 2 MiB transparent huge pages where the system offers
// them, so filling 16 MB takes 8 page faults instead of 4,096. On the virtual machines
// audits run on a fault costs ~10 µs, and an ingest of a million transactions spent ~0.3
// CPU-seconds in them (docs/performance.md). Small buffers come from the ordinary heap.

#include <cstddef>
#include <new>
#include <vector>

namespace zkdv {

// At least `bytes` of memory aligned for any type; throws std::bad_alloc. Pair with
// releaseHugePageBacked(pointer, bytes) with the same size.
void* allocateHugePageBacked(std::size_t bytes);
void releaseHugePageBacked(void* pointer, std::size_t bytes) noexcept;

template <typename T>
struct HugePageAllocator {
    using value_type = T;

    HugePageAllocator() = default;
    template <typename U>
    HugePageAllocator(const HugePageAllocator<U>&) noexcept
    {
    }

    T* allocate(std::size_t count)
    {
        if (count > static_cast<std::size_t>(-1) / sizeof(T))
            throw std::bad_alloc();
        return static_cast<T*>(allocateHugePageBacked(count * sizeof(T)));
    }
    void deallocate(T* pointer, std::size_t count) noexcept { releaseHugePageBacked(pointer, count * sizeof(T)); }

    template <typename U>
    bool operator==(const HugePageAllocator<U>&) const noexcept
    {
        return true;
    }
    template <typename U>
    bool operator!=(const HugePageAllocator<U>&) const noexcept
    {
        return false;
    }
};

template <typename T>
using HugePageVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace zkdv
