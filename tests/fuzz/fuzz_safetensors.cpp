// Fuzz target for SafetensorsView::parse: any input may be refused, none may crash. It also
// checks reparse() against parse(): a view that has read the input reads a copy with one
// byte changed (in the middle) exactly as a fresh parse reads that copy; when the byte is in
// the metadata or the data, that is reparse()'s path that re-reads only the metadata.
//
// See docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/tape/safetensors.h"
#include "zkdv/util/error.h"

namespace {
// Keeps the checksum loop from being optimised away.
volatile std::uint64_t g_sink = 0;
}  // namespace

namespace {

// What a parse says: the view's contents (data as offsets into the blob) or the error.
template <typename Parse>
std::string outcomeOf(const std::uint8_t* blob, Parse parse)
{
    try {
        const zkdv::SafetensorsView& view = parse();
        std::string out = std::to_string(view.dataOffset());
        for (const zkdv::TensorView& tensor : view.tensors()) {
            out += "|" + tensor.name + ":" + std::to_string(static_cast<int>(tensor.dtype)) + ":";
            for (std::int64_t dim : tensor.shape)
                out += std::to_string(dim) + ",";
            out += std::to_string(tensor.data.data - blob) + "+" + std::to_string(tensor.data.size);
        }
        for (const auto& [key, value] : view.metadata())
            out += "|" + key + "=" + value;
        return out;
    } catch (const zkdv::FormatError& error) {
        return "error " + (error.offset() ? std::to_string(*error.offset()) : std::string("-")) + " " + error.detail();
    }
}

void checkReparseAgrees(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return;
    std::vector<std::uint8_t> changed(data, data + size);
    changed[size / 2] = static_cast<std::uint8_t>(changed[size / 2] + 1);
    zkdv::SafetensorsView view;
    try {
        view.reparse(zkdv::ByteSpan(data, size));
    } catch (const zkdv::FormatError&) {
    }
    const std::string reused = outcomeOf(changed.data(), [&]() -> const zkdv::SafetensorsView& {
        view.reparse(zkdv::ByteSpan(changed.data(), changed.size()));
        return view;
    });
    zkdv::SafetensorsView fresh;
    const std::string expected = outcomeOf(changed.data(), [&]() -> const zkdv::SafetensorsView& {
        fresh = zkdv::SafetensorsView::parse(zkdv::ByteSpan(changed.data(), changed.size()));
        return fresh;
    });
    if (reused != expected)
        __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        const zkdv::SafetensorsView view = zkdv::SafetensorsView::parse(zkdv::ByteSpan(data, size));
        // Touch every accessor so that a view pointing outside the input shows up under ASan.
        std::uint64_t checksum = 0;
        for (const zkdv::TensorView& tensor : view.tensors()) {
            checksum += static_cast<std::uint64_t>(tensor.elementCount());
            for (std::uint8_t byte : tensor.data)
                checksum += byte;
            if (view.find(tensor.name) == nullptr)
                __builtin_trap();
        }
        for (const auto& [key, value] : view.metadata())
            checksum += view.metadataValue(key).size() + value.size();
        g_sink = g_sink + checksum;
    } catch (const zkdv::FormatError&) {
        // Refusing malformed input is the expected outcome.
    }
    checkReparseAgrees(data, size);
    return 0;
}
