#pragma once
// A model's tensors compared with a tape's state, tensor by tensor and bit for bit: which
// differ in dtype, shape or values (how many elements, by how much), which are missing from
// the model and which the model holds beyond the tape's layout.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/provenance/model_checkpoint.h"
#include "zkdv/provenance/name_mapping.h"
#include "zkdv/tape/dtype.h"
#include "zkdv/tape/safetensors.h"

namespace zkdv {

enum class WeightFinding {
    Equal,         // same dtype, shape and bytes
    ValuesDiffer,  // same dtype and shape, some elements' bits differ
    DtypeDiffers,
    ShapeDiffers,
    Missing,       // in the tape's layout, not in the model
    Extra,         // in the model, not in the tape's layout
    Unchecked,     // dtype and shape as the layout says; values checked only through a state digest
};
std::string_view weightFindingName(WeightFinding finding);  // "equal", "values", "dtype", "shape", "missing", "extra", "unchecked"

// One tensor of the tape's state: a layout name, its role and, when the tape holds its
// values, where they are.
struct StateTensor {
    std::string name;  // layout name
    bool buffer = false;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    const TensorView* values = nullptr;  // nullptr: only the layout is known
};

struct WeightComparison {
    std::string tapeName;   // "" for an extra tensor
    std::string modelName;  // "" for a missing one
    std::string role;       // "parameter", "buffer", "" for an extra tensor
    WeightFinding finding = WeightFinding::Equal;
    std::string tapeDtype, modelDtype;  // "" where there is none
    std::vector<std::int64_t> tapeShape, modelShape;
    std::uint64_t elements = 0;
    std::uint64_t differingElements = 0;  // elements whose bits differ (ValuesDiffer)
    double maxAbsDiff = 0.0;              // over differing pairs where both values are finite
    std::uint64_t nonFiniteDifferences = 0;  // differing pairs with a NaN or an infinity on a side
    bool fails = false;  // counts against the match (a missing buffer only when buffers are required)
};

// Compares every tensor of `state` (layout order) with the model's tensor `mapping` names for
// it, then lists the model's other tensors as extra. A tensor without values is compared by
// dtype and shape only (`Unchecked` when those agree). A missing buffer fails only with
// `requireBuffers`: checkpoints leave out buffers torch does not save (persistent=False).
std::vector<WeightComparison> compareWeights(const std::vector<StateTensor>& state, const ModelCheckpoint& model, const NameMapping& mapping,
                                             bool requireBuffers);

}  // namespace zkdv
