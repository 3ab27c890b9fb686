#include "zkdv/provenance/weight_comparison.h"

#include <cmath>
#include <cstring>
#include <set>

#include "zkdv/tape/scalar_value.h"

namespace zkdv {

namespace {

void compareValues(ByteSpan tape, ByteSpan model, DType dtype, WeightComparison& result)
{
    if (tape.size == model.size && std::memcmp(tape.data, model.data, tape.size) == 0) {
        result.finding = WeightFinding::Equal;
        return;
    }
    result.finding = WeightFinding::ValuesDiffer;
    result.fails = true;
    const std::size_t width = dtypeSize(dtype);
    for (std::uint64_t i = 0; i < result.elements; ++i) {
        const std::uint8_t* a = tape.data + i * width;
        const std::uint8_t* b = model.data + i * width;
        if (std::memcmp(a, b, width) == 0)
            continue;
        ++result.differingElements;
        const double x = scalarToDouble(dtype, a);
        const double y = scalarToDouble(dtype, b);
        if (std::isfinite(x) && std::isfinite(y))
            result.maxAbsDiff = std::max(result.maxAbsDiff, std::fabs(x - y));
        else
            ++result.nonFiniteDifferences;
    }
}

}  // namespace

std::string_view weightFindingName(WeightFinding finding)
{
    switch (finding) {
    case WeightFinding::Equal:
        return "equal";
    case WeightFinding::ValuesDiffer:
        return "values";
    case WeightFinding::DtypeDiffers:
        return "dtype";
    case WeightFinding::ShapeDiffers:
        return "shape";
    case WeightFinding::Missing:
        return "missing";
    case WeightFinding::Extra:
        return "extra";
    case WeightFinding::Unchecked:
        return "unchecked";
    }
    return "equal";
}

std::vector<WeightComparison> compareWeights(const std::vector<StateTensor>& state, const ModelCheckpoint& model, const NameMapping& mapping,
                                             bool requireBuffers)
{
    std::vector<WeightComparison> results;
    std::set<std::string> matched;
    for (const StateTensor& tensor : state) {
        WeightComparison result;
        result.tapeName = tensor.name;
        result.role = tensor.buffer ? "buffer" : "parameter";
        result.tapeDtype = std::string(dtypeName(tensor.dtype));
        result.tapeShape = tensor.shape;
        const std::string modelName = mapping.modelName(tensor.name);
        const ModelCheckpoint::Tensor* found = modelName.empty() ? nullptr : model.find(modelName);
        if (!found) {
            result.finding = WeightFinding::Missing;
            result.fails = !tensor.buffer || requireBuffers;
            results.push_back(std::move(result));
            continue;
        }
        matched.insert(modelName);
        const TensorView& theirs = *found->view;
        result.modelName = modelName;
        result.modelDtype = std::string(dtypeName(theirs.dtype));
        result.modelShape = theirs.shape;
        if (theirs.dtype != tensor.dtype) {
            result.finding = WeightFinding::DtypeDiffers;
            result.fails = true;
        } else if (theirs.shape != tensor.shape) {
            result.finding = WeightFinding::ShapeDiffers;
            result.fails = true;
        } else {
            result.elements = static_cast<std::uint64_t>(theirs.elementCount());
            if (tensor.values)
                compareValues(tensor.values->data, theirs.data, tensor.dtype, result);
            else
                result.finding = WeightFinding::Unchecked;
        }
        results.push_back(std::move(result));
    }
    for (const std::string& name : model.names()) {
        if (matched.count(name))
            continue;
        const TensorView& theirs = *model.find(name)->view;
        WeightComparison result;
        result.modelName = name;
        result.finding = WeightFinding::Extra;
        result.modelDtype = std::string(dtypeName(theirs.dtype));
        result.modelShape = theirs.shape;
        result.fails = true;
        results.push_back(std::move(result));
    }
    return results;
}

}  // namespace zkdv
