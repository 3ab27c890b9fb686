#include "zkdv/util/huge_page_allocator.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace zkdv {

namespace {
constexpr std::size_t kHugePage = std::size_t(2) << 20;

// Below one huge page there is nothing to gain, and the heap packs small buffers better.
bool fromTheHeap(std::size_t bytes) { return bytes < kHugePage; }
}  // namespace

#if defined(__linux__)

void* allocateHugePageBacked(std::size_t bytes)
{
    if (fromTheHeap(bytes))
        return ::operator new(bytes);
    // Map a huge page more than asked and keep the aligned middle: only whole, aligned 2 MiB
    // ranges can be huge pages. Untouched pages of the reservation cost nothing.
    const std::size_t length = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    void* mapped = ::mmap(nullptr, length + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED)
        throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(mapped);
    const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start)
        ::munmap(mapped, aligned - start);
    const std::uintptr_t end = start + length + kHugePage;
    if (end > aligned + length)
        ::munmap(reinterpret_cast<void*>(aligned + length), end - (aligned + length));
    // Advice only: without transparent huge pages the memory is ordinary pages.
    ::madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE);
    return reinterpret_cast<void*>(aligned);
}

void releaseHugePageBacked(void* pointer, std::size_t bytes) noexcept
{
    if (!pointer)
        return;
    if (fromTheHeap(bytes)) {
        ::operator delete(pointer);
        return;
    }
    ::munmap(pointer, (bytes + kHugePage - 1) / kHugePage * kHugePage);
}

#else

void* allocateHugePageBacked(std::size_t bytes) { return ::operator new(bytes); }
void releaseHugePageBacked(void* pointer, std::size_t) noexcept { ::operator delete(pointer); }

#endif

}  // namespace zkdv
