#pragma once
// A tape's snapshots as model files: the states a tape holds, copied out under their layout
// names, and written as safetensors, for tests of weight matching.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "zkdv/tape/dtype.h"
#include "zkdv/tape/tape_scanner.h"

namespace zkdv::test {

// One tensor of a model file.
struct Tensor {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<std::uint8_t> bytes;
};
using Model = std::vector<Tensor>;

// The parameters and buffers of every snapshot, by before_transaction, under layout names.
struct SnapshotCopier : TapeVisitor {
    std::map<std::uint64_t, Model> states;
    void onSnapshot(const SnapshotRecord& snapshot, const RecordLocation&) override;
};

// Writes `model` as a safetensors file (metadata "format": "pt", as torch's writer does).
void writeModel(const std::string& path, const Model& model);

}  // namespace zkdv::test
