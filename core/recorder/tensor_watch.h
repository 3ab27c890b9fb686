#pragma once
// Marks of a list of tensors (identity, version counter, a cheap content digest) taken at one
// point of a transaction, and the first of them that changed since: how the recorder refuses a
// change its tape could not describe, before a replay would call it tampering.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ATen/Tensor.h>

namespace zkdv {

class TensorWatch {
public:
    // Marks every tensor now (an undefined tensor, such as a missing gradient, is marked too).
    void mark(const std::vector<at::Tensor>& tensors);
    bool marked() const { return marked_; }

    struct Change {
        std::size_t index;
        std::string how;  // e.g. "changed in place", "was replaced", "its values changed without a version bump (.data)"
    };
    // The first tensor that differs from its mark. Version counters and identities are read
    // always; `contents` also compares the digest, which sees what they cannot (a write
    // through `.data`, which has a version counter of its own).
    std::optional<Change> firstChange(const std::vector<at::Tensor>& tensors, bool contents) const;

private:
    struct Mark {
        const void* impl = nullptr;  // null: the tensor was undefined
        const void* data = nullptr;
        std::uint32_t version = 0;
        std::uint64_t digest = 0;
    };
    static Mark markOf(const at::Tensor& tensor);
    std::vector<Mark> marks_;
    bool marked_ = false;
};

// A digest of a tensor's bytes (its dtype, shape and values): a Fletcher sum over 64-bit
// words, one read of the data and no copy on the CPU. It spares an honest trainer a false
// accusation, so it needs to see ordinary changes (clipping, clamping, masking, a copy), not to
// resist a forger: a forged tape is the replay's business.
std::uint64_t contentDigest(const at::Tensor& tensor);

}  // namespace zkdv
