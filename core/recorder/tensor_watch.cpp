#include "tensor_watch.h"

#include <cstring>

#include <ATen/ATen.h>

namespace zkdv {

namespace {

std::uint64_t fletcher(const unsigned char* bytes, std::size_t size)
{
    std::uint64_t sum = 0, sumOfSums = 0;
    const std::size_t words = size / 8;
    for (std::size_t i = 0; i < words; ++i) {
        std::uint64_t word;
        std::memcpy(&word, bytes + 8 * i, 8);
        sum += word;
        sumOfSums += sum;
    }
    if (size % 8) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes + 8 * words, size % 8);
        sum += word;
        sumOfSums += sum;
    }
    return sumOfSums ^ (sum * 0x9E3779B97F4A7C15ull) ^ size;
}

// The same sums on the tensor's own device, element by element, read back once: a tensor off
// the CPU is never copied to the host to be watched.
std::uint64_t deviceDigest(const at::Tensor& tensor)
{
    at::ScalarType word;
    switch (tensor.element_size()) {
    case 1: word = at::kByte; break;
    case 2: word = at::kShort; break;
    case 4: word = at::kInt; break;
    case 8: word = at::kLong; break;
    default: {  // complex128: rare enough to read on the host
        const at::Tensor host = tensor.to(at::kCPU).contiguous();
        return fletcher(static_cast<const unsigned char*>(host.data_ptr()), static_cast<std::size_t>(host.numel()) * host.element_size());
    }
    }
    at::Tensor wide = tensor.reshape({-1}).view(word).to(at::kLong);
    at::Tensor weights = at::arange(wide.numel(), 0, -1, wide.options());
    at::Tensor sums = at::stack({wide.sum(), (wide * weights).sum()}).cpu();
    const auto sum = static_cast<std::uint64_t>(sums[0].item<std::int64_t>());
    const auto sumOfSums = static_cast<std::uint64_t>(sums[1].item<std::int64_t>());
    return sumOfSums ^ (sum * 0x9E3779B97F4A7C15ull) ^ static_cast<std::uint64_t>(tensor.numel() * tensor.element_size());
}

}  // namespace

std::uint64_t contentDigest(const at::Tensor& tensor)
{
    std::uint64_t shape = static_cast<std::uint64_t>(tensor.scalar_type()) * 0x100000001B3ull;
    for (const std::int64_t extent : tensor.sizes())
        shape = (shape ^ static_cast<std::uint64_t>(extent)) * 0x100000001B3ull;
    if (tensor.is_sparse())  // a sparse gradient (SparseAdam's): no storage of its own
        return contentDigest(tensor._indices()) ^ (contentDigest(tensor._values()) * 0x9E3779B97F4A7C15ull) ^ shape;
    if (!tensor.device().is_cpu())
        return deviceDigest(tensor) ^ shape;
    const at::Tensor dense = tensor.is_contiguous() ? tensor : tensor.contiguous();
    return fletcher(static_cast<const unsigned char*>(dense.data_ptr()), static_cast<std::size_t>(dense.numel()) * dense.element_size()) ^
           shape;
}

TensorWatch::Mark TensorWatch::markOf(const at::Tensor& tensor)
{
    Mark mark;
    if (!tensor.defined())
        return mark;
    mark.impl = tensor.unsafeGetTensorImpl();
    mark.data = tensor.is_sparse() ? tensor._values().data_ptr() : tensor.data_ptr();
    mark.version = tensor._version();
    mark.digest = contentDigest(tensor);
    return mark;
}

void TensorWatch::mark(const std::vector<at::Tensor>& tensors)
{
    marks_.clear();
    marks_.reserve(tensors.size());
    for (const at::Tensor& tensor : tensors)
        marks_.push_back(markOf(tensor));
    marked_ = true;
}

std::optional<TensorWatch::Change> TensorWatch::firstChange(const std::vector<at::Tensor>& tensors, bool contents) const
{
    if (!marked_)
        return std::nullopt;
    for (std::size_t i = 0; i < tensors.size() && i < marks_.size(); ++i) {
        const Mark& was = marks_[i];
        const at::Tensor& now = tensors[i];
        if (!now.defined()) {
            if (was.impl)
                return Change{i, "was removed (set to None)"};
            continue;
        }
        if (!was.impl)
            return Change{i, "appeared"};
        if (now.unsafeGetTensorImpl() != was.impl)
            return Change{i, "was replaced by another tensor"};
        if (now._version() != was.version)
            return Change{i, "was changed in place"};
        if (contents && contentDigest(now) != was.digest)
            return Change{i, (now.is_sparse() ? now._values().data_ptr() : now.data_ptr()) != was.data ? "had its data replaced (.data = ...)"
                                                        : "had its values changed unseen by its version counter (through .data, or by a kernel that does not count)"};
    }
    return std::nullopt;
}

}  // namespace zkdv
