#pragma once
// The full training state before a transaction (spec section 6), and the names used for it.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/tape/safetensors.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct RootRecord;

// Canonical tensor names of the full state: "param/<name>", "buffer/<name>",
// "state/<parameter>/<slot>".
std::string parameterTensorName(std::string_view parameter);
std::string bufferTensorName(std::string_view buffer);
std::string stateTensorName(std::string_view parameter, std::string_view slot);

struct SnapshotRecord {
    std::uint64_t beforeTransaction = 0;
    std::vector<const TensorView*> parameters;  // layout order
    std::vector<const TensorView*> buffers;     // layout order
    std::vector<const TensorView*> stateSlots;  // canonical state order

    // Checks names, order, shapes and dtypes against the root; FormatError otherwise.
    static SnapshotRecord parse(const SafetensorsView& view, const RootRecord& root);
    // The state digest (spec section 8) of the state the snapshot holds.
    Digest stateDigest() const;
};

}  // namespace zkdv
