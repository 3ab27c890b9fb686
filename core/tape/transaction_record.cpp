#include "zkdv/tape/transaction_record.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/tape/dataset_samples.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/scalar_value.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/error.h"
#include "zkdv/util/merkle_tree.h"

namespace zkdv {

namespace {
[[noreturn]] void fail(const std::string& message) { throw FormatError("transaction record: " + message); }

std::uint64_t decimalMetadata(const SafetensorsView& view, std::string_view key)
{
    std::string_view text = view.metadataValue(key);
    std::uint64_t value = 0;
    auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || error != std::errc() || end != text.data() + text.size())
        fail("metadata \"" + std::string(key) + "\" must be a decimal integer, found \"" + std::string(text) + "\"");
    return value;
}

bool startsWith(std::string_view text, std::string_view prefix)
{
    return text.size() >= prefix.size() && text.compare(0, prefix.size(), prefix) == 0;
}

void placeBatchTensor(const TensorView& tensor, std::string_view digits, const char* form, std::vector<const TensorView*>& batch)
{
    std::size_t position = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), position);
    if (digits.empty() || error != std::errc() || end != digits.data() + digits.size())
        fail(tensor.name + ": batch tensors are named " + form);
    // A hostile name must not make the reader allocate: a batch has at most as many tensors as the record.
    if (position >= 65536)
        fail(tensor.name + ": a batch holds at most 65536 tensors");
    if (batch.size() <= position)
        batch.resize(position + 1, nullptr);
    batch[position] = &tensor;
}

// Metadata "samples" and tensor "samples/proofs" (section 5.7): present exactly when the root
// declares a dataset; one array of sample indices per micro-batch, one index per batch row.
void readSamples(const SafetensorsView& view, const RootRecord& root, const TensorView* proofs, TransactionRecord& record)
{
    const std::string_view text = view.metadataValue("samples");
    if (!root.dataset) {
        if (!text.empty() || proofs)
            fail("metadata \"samples\" or tensor \"samples/proofs\" is present, but the root declares no dataset");
        return;
    }
    if (text.empty())
        fail("metadata \"samples\" is missing; the root declares a dataset, so every transaction names the samples of its batch");
    nlohmann::json samples;
    try {
        samples = nlohmann::json::parse(text);
    } catch (const std::exception&) {
        fail("metadata \"samples\" is not JSON");
    }
    if (!samples.is_array() || samples.size() != record.microBatches.size())
        fail("metadata \"samples\" must be an array of " + std::to_string(record.microBatches.size()) + " arrays, one per micro-batch");
    std::uint64_t siblings = 0;
    for (std::size_t m = 0; m < samples.size(); ++m) {
        std::uint64_t rows = 0;
        try {
            rows = batchRows(record.microBatches[m].batch);
        } catch (const FormatError& error) {
            fail(std::string("micro-batch ") + std::to_string(m) + ": " + error.what());
        }
        const nlohmann::json& indices = samples[m];
        if (!indices.is_array() || indices.size() != rows)
            fail("metadata \"samples\"[" + std::to_string(m) + "] must hold " + std::to_string(rows) + " sample indices, one per batch row");
        std::vector<std::uint64_t> row;
        row.reserve(indices.size());
        for (const nlohmann::json& index : indices) {
            if (!index.is_number_unsigned() || index.get<std::uint64_t>() >= root.dataset->leafCount)
                fail("metadata \"samples\"[" + std::to_string(m) + "] holds " + index.dump() + ", not a sample index below " +
                     std::to_string(root.dataset->leafCount));
            row.push_back(index.get<std::uint64_t>());
            siblings += merkleProofLength(row.back(), root.dataset->leafCount);
        }
        record.samples.push_back(std::move(row));
    }
    if (siblings == 0 ? proofs != nullptr
                      : !proofs || proofs->dtype != DType::U8 || proofs->shape.size() != 2 || proofs->shape[0] != static_cast<std::int64_t>(siblings) ||
                            proofs->shape[1] != static_cast<std::int64_t>(tape::kDigestSize))
        fail("tensor \"samples/proofs\" must be U8 [" + std::to_string(siblings) + ", 32]: the Merkle proofs of the named samples");
    record.sampleProofs = proofs;
}

// Metadata "grad_scaler" (spec 5.6): present exactly when the root declares a GradScaler, and
// then the transaction's transforms hold its one unscale_, which takes the transaction's scale.
void readGradScaler(const SafetensorsView& view, const RootRecord& root, TransactionRecord& record)
{
    std::size_t unscales = 0;
    for (const GradientTransform& transform : record.gradientTransforms)
        unscales += transform.kind == GradientTransform::Kind::Unscale;
    const std::string_view text = view.metadataValue("grad_scaler");
    if (root.formatMinor < tape::kGradScalerMinor) {
        if (unscales)
            fail("metadata \"gradient_transforms\" holds an \"unscale\" entry, which format 1." + std::to_string(root.formatMinor) +
                 " does not know (GradScaler's unscale_ is part of 1.8)");
        return;
    }
    if (!root.gradScaler) {
        if (!text.empty())
            fail("metadata \"grad_scaler\" is present, but the root declares no grad_scaler");
        if (unscales)
            fail("metadata \"gradient_transforms\" holds an \"unscale\" entry, but the root declares no grad_scaler");
        return;
    }
    if (text.empty())
        fail("metadata \"grad_scaler\" is missing; the root declares a grad_scaler, so every transaction records the scale it used");
    try {
        record.gradScaler = parseGradScalerStep(text, root.gradScaler->rule);
    } catch (const FormatError& error) {
        fail(error.what());
    }
    if (unscales != 1)
        fail("metadata \"gradient_transforms\" holds " + std::to_string(unscales) + " \"unscale\" entries; a transaction with a grad_scaler "
             "unscales its gradients once (GradScaler.step() unscales them when unscale_() did not)");
    for (GradientTransform& transform : record.gradientTransforms)
        if (transform.kind == GradientTransform::Kind::Unscale)
            transform.scale = record.gradScaler->state.scale;
}

void float64Vector(const TensorView& tensor, std::size_t expected, std::vector<double>& values)
{
    if (tensor.dtype != DType::F64 || tensor.shape.size() != 1 || static_cast<std::size_t>(tensor.shape[0]) != expected)
        fail(tensor.name + ": expected F64 [" + std::to_string(expected) + "]");
    values.resize(expected);
    if (expected)
        std::memcpy(values.data(), tensor.data.data, expected * sizeof(double));
}
}  // namespace

std::optional<double> TransactionRecord::optimizerValue(const std::string& option) const
{
    for (const TensorView* tensor : optimizerValues)
        if (tensor->name.size() == option.size() + 10 && tensor->name.compare(10, std::string::npos, option) == 0 && tensor->data.size >= 8) {
            double value;
            std::memcpy(&value, tensor->data.data, sizeof value);
            return value;
        }
    return std::nullopt;
}

namespace {

std::vector<double> float64Values(const TensorView* tensor)
{
    if (!tensor)
        return {};
    // The parser checked the dtype (F64) and the shape (one dimension).
    std::vector<double> values(tensor->data.size / sizeof(double));
    if (!values.empty())
        std::memcpy(values.data(), tensor->data.data, values.size() * sizeof(double));
    return values;
}

}  // namespace

std::vector<double> TransactionRecord::scheduleMetricValues() const { return float64Values(scheduleMetrics); }

std::vector<double> TransactionRecord::scheduleStateValues() const { return float64Values(scheduleState); }

std::vector<double> TransactionRecord::optimizerGroupValues(const std::string& option) const
{
    for (const TensorView* tensor : optimizerValues)
        if (tensor->name.size() == option.size() + 10 && tensor->name.compare(10, std::string::npos, option) == 0) {
            // The parser checked the shape: one F64 per group.
            std::vector<double> values(tensor->data.size / sizeof(double));
            if (!values.empty())
                std::memcpy(values.data(), tensor->data.data, values.size() * sizeof(double));
            return values;
        }
    return {};
}

double TransactionRecord::updateNorm() const
{
    double sum = 0.0;
    for (double l2 : updateL2)
        sum += l2 * l2;
    return std::sqrt(sum);
}

TransactionRecord TransactionRecord::parse(const SafetensorsView& view, const RootRecord& root)
{
    TransactionRecord record;
    parse(view, root, record);
    return record;
}

void TransactionRecord::parse(const SafetensorsView& view, const RootRecord& root, TransactionRecord& record)
{
    if (view.metadataValue("zkdv.record") != "transaction")
        fail("metadata \"zkdv.record\" must be \"transaction\", found \"" + std::string(view.metadataValue("zkdv.record")) + "\"");
    record.stateDigest.reset();
    record.scheduleEpoch.reset();
    record.loss = 0.0;
    record.lossTensor = nullptr;
    record.batch.clear();
    record.optimizerValues.clear();
    record.gradientTransforms.clear();
    record.totalNorms.clear();
    record.microBatches.clear();
    record.autocast.clear();
    record.gradScaler.reset();
    record.scheduleMetrics = nullptr;
    record.scheduleState = nullptr;
    record.samples.clear();
    record.sampleProofs = nullptr;
    record.index = decimalMetadata(view, "index");
    record.wallTimeNs = decimalMetadata(view, "wall_time_ns");
    std::string_view digest = view.metadataValue("state_digest");
    if (!digest.empty()) {
        record.stateDigest = digestFromHex(digest);
        if (!record.stateDigest)
            fail("metadata \"state_digest\" must be 64 hex digits");
    }
    if (root.formatMinor >= tape::kScheduleMinor && !view.metadataValue("schedule_epoch").empty())
        record.scheduleEpoch = decimalMetadata(view, "schedule_epoch");
    const bool transformsKnown = root.formatMinor >= tape::kGradientTransformMinor;
    const bool scheduleInputsKnown =
        root.formatMinor >= tape::kScheduleInputsMinor && root.optimizerSchedule && root.optimizerSchedule->checked();
    if (transformsKnown && !view.metadataValue("gradient_transforms").empty()) {
        try {
            record.gradientTransforms = parseGradientTransforms(view.metadataValue("gradient_transforms"));
        } catch (const FormatError& error) {
            fail(error.what());
        }
        record.totalNorms.assign(record.gradientTransforms.size(), nullptr);
    }
    if (transformsKnown && !view.metadataValue("autocast").empty()) {
        try {
            record.autocast = parseAutocast(view.metadataValue("autocast"));
        } catch (const FormatError& error) {
            fail(error.what());
        }
    }
    readGradScaler(view, root, record);
    std::size_t microCount = 1;
    if (transformsKnown && !view.metadataValue("micro_batches").empty()) {
        const std::uint64_t count = decimalMetadata(view, "micro_batches");
        if (count < 2 || count > kMaxMicroBatches)
            fail("metadata \"micro_batches\" is " + std::to_string(count) + "; a transaction of several micro-batches holds 2 to " +
                 std::to_string(kMaxMicroBatches));
        microCount = static_cast<std::size_t>(count);
    }
    const bool micro = microCount > 1;
    record.microBatches.resize(microCount);
    if (transformsKnown && !view.metadataValue("loss_scales").empty()) {
        try {
            const std::vector<LossScale> scales = parseLossScales(view.metadataValue("loss_scales"), microCount);
            for (std::size_t m = 0; m < microCount; ++m)
                record.microBatches[m].scale = scales[m];
        } catch (const FormatError& error) {
            fail(error.what());
        }
    }

    const std::size_t parameterCount = root.parameters.size();
    const std::size_t groupCount = root.optimizerGroups.size();
    // Tensors of a later minor version are skipped; ours must all be known.
    const bool tolerateUnknown = root.formatMinor > tape::kMinorVersion;
    const TensorView* l2 = nullptr;
    const TensorView* maxAbs = nullptr;
    std::vector<const TensorView*>& deltas = record.deltas;
    deltas.assign(parameterCount, nullptr);
    std::size_t deltaCount = 0;
    const bool samplesKnown = root.formatMinor >= tape::kDatasetMinor;
    const TensorView* sampleProofs = nullptr;

    for (const TensorView& tensor : view.tensors()) {
        const std::string& name = tensor.name;
        if (name == "loss" && !micro) {
            if (!isFloatingPoint(tensor.dtype) || !tensor.shape.empty())
                fail("loss: expected a floating-point scalar of shape []");
            record.microBatches[0].loss = &tensor;
        } else if (startsWith(name, "batch/") && !micro) {
            placeBatchTensor(tensor, std::string_view(name).substr(6), "batch/<number>", record.microBatches[0].batch);
        } else if (micro && startsWith(name, "micro/")) {
            // micro/<m>/loss, micro/<m>/batch/<i>
            const std::string_view rest = std::string_view(name).substr(6);
            const std::size_t slash = rest.find('/');
            std::size_t m = 0;
            const std::string_view digits = rest.substr(0, slash);
            auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), m);
            if (slash == std::string_view::npos || digits.empty() || error != std::errc() || end != digits.data() + digits.size() ||
                (digits.size() > 1 && digits[0] == '0') || m >= microCount)
                fail(name + ": micro-batch tensors are named micro/<m>/loss and micro/<m>/batch/<i>, m below " + std::to_string(microCount));
            const std::string_view what = rest.substr(slash + 1);
            if (what == "loss") {
                if (!isFloatingPoint(tensor.dtype) || !tensor.shape.empty())
                    fail(name + ": expected a floating-point scalar of shape []");
                record.microBatches[m].loss = &tensor;
            } else if (startsWith(what, "batch/")) {
                placeBatchTensor(tensor, what.substr(6), "micro/<m>/batch/<number>", record.microBatches[m].batch);
            } else {
                fail("unexpected tensor \"" + name + "\"");
            }
        } else if (startsWith(name, "optimizer/")) {
            if (tensor.dtype != DType::F64 || tensor.shape.size() != 1 || static_cast<std::size_t>(tensor.shape[0]) != groupCount)
                fail(name + ": expected F64 [" + std::to_string(groupCount) + "] (one value per optimizer group)");
            record.optimizerValues.push_back(&tensor);
        } else if (name == "update/l2") {
            l2 = &tensor;
        } else if (name == "update/max_abs") {
            maxAbs = &tensor;
        } else if (startsWith(name, "delta/")) {
            int position = root.parameterIndex(name.substr(6));
            if (position < 0)
                fail(name + ": not a layout parameter");
            const TensorSpec& spec = root.parameters[static_cast<std::size_t>(position)];
            if (tensor.dtype != spec.dtype || tensor.shape != spec.shape)
                fail(name + ": dtype and shape must match the layout parameter");
            deltas[static_cast<std::size_t>(position)] = &tensor;
            ++deltaCount;
        } else if (transformsKnown && startsWith(name, "gradients/total_norm/")) {
            std::size_t position = 0;
            std::string_view digits(name.data() + 21, name.size() - 21);
            auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), position);
            if (digits.empty() || error != std::errc() || end != digits.data() + digits.size() || (digits.size() > 1 && digits[0] == '0'))
                fail(name + ": total norms are named gradients/total_norm/<transform number>");
            if (position >= record.gradientTransforms.size())
                fail(name + ": the transaction records no gradient transform " + std::to_string(position) + " (metadata \"gradient_transforms\" lists " +
                     std::to_string(record.gradientTransforms.size()) + ")");
            if (record.gradientTransforms[position].kind != GradientTransform::Kind::ClipNorm)
                fail(name + ": gradient transform " + std::to_string(position) + " is " + record.gradientTransforms[position].describe() +
                     ", which has no total norm");
            if (!isFloatingPoint(tensor.dtype) || !tensor.shape.empty())
                fail(name + ": expected a floating-point scalar of shape []");
            record.totalNorms[position] = &tensor;
        } else if (scheduleInputsKnown && (name == "schedule/metrics" || name == "schedule/state")) {
            const bool metrics = name == "schedule/metrics";
            const std::size_t most = metrics ? static_cast<std::size_t>(tape::kMaxScheduleEpochAdvance) : tape::kMaxSchedulerStateValues;
            if (tensor.dtype != DType::F64 || tensor.shape.size() != 1 || tensor.shape[0] < 1 || static_cast<std::size_t>(tensor.shape[0]) > most)
                fail(name + ": expected F64 [n], n from 1 to " + std::to_string(most));
            (metrics ? record.scheduleMetrics : record.scheduleState) = &tensor;
        } else if (samplesKnown && name == "samples/proofs") {
            sampleProofs = &tensor;
        } else if (!tolerateUnknown) {
            fail("unexpected tensor \"" + name + "\"");
        }
    }
    for (std::size_t m = 0; m < microCount; ++m) {
        MicroBatch& step = record.microBatches[m];
        const std::string prefix = micro ? "micro/" + std::to_string(m) + "/" : std::string();
        if (!step.loss)
            fail("missing tensor \"" + prefix + "loss\"");
        for (std::size_t i = 0; i < step.batch.size(); ++i)
            if (!step.batch[i])
                fail("batch tensors must be numbered without gaps; " + prefix + "batch/" + std::to_string(i) + " is missing");
        if (m > 0 && step.batch.size() != record.microBatches[0].batch.size())
            fail("micro-batch " + std::to_string(m) + " holds " + std::to_string(step.batch.size()) + " batch tensors, micro-batch 0 " +
                 std::to_string(record.microBatches[0].batch.size()) + "; the sealed step takes batches of one form");
    }
    if (samplesKnown)
        readSamples(view, root, sampleProofs, record);
    record.lossTensor = record.microBatches[0].loss;
    record.loss = 0.0;
    for (const MicroBatch& step : record.microBatches) {
        const double loss = scalarToDouble(step.loss->dtype, step.loss->data.data);
        record.loss += microCount == 1 ? loss : step.scale.apply(loss);
        record.batch.insert(record.batch.end(), step.batch.begin(), step.batch.end());
    }
    if (!l2 || !maxAbs)
        fail("missing tensor \"" + std::string(l2 ? "update/max_abs" : "update/l2") + "\"");
    float64Vector(*l2, parameterCount, record.updateL2);
    float64Vector(*maxAbs, parameterCount, record.updateMaxAbs);
    if (deltaCount != 0 && deltaCount != parameterCount)
        fail("deltas recorded for " + std::to_string(deltaCount) + " of " + std::to_string(parameterCount) +
             " parameters; a sampled update check records all of them");
    if (!deltaCount)
        deltas.clear();
    for (std::size_t i = 0; i < record.gradientTransforms.size(); ++i)
        if (record.gradientTransforms[i].kind == GradientTransform::Kind::ClipNorm && !record.totalNorms[i])
            fail("missing tensor \"" + totalNormTensorName(i) + "\" (the total norm of gradient transform " + std::to_string(i) + ", " +
                 record.gradientTransforms[i].describe() + ")");
}

TransactionRecordBuilder::TransactionRecordBuilder(std::uint64_t index, std::uint64_t wallTimeNs)
    : index_(index), wallTimeNs_(wallTimeNs)
{
}

void TransactionRecordBuilder::setStateDigest(const Digest& digest) { stateDigest_ = digest; }

void TransactionRecordBuilder::setScheduleEpoch(std::uint64_t epoch) { scheduleEpoch_ = epoch; }

void TransactionRecordBuilder::setLoss(DType dtype, ByteSpan scalar)
{
    if (micro_.empty())
        micro_.push_back(Micro{Tensor{"loss", dtype, {}, scalar}, {}, {}});
    else
        micro_.front().loss = Tensor{"loss", dtype, {}, scalar};
}

void TransactionRecordBuilder::addMicroBatch(DType lossDtype, ByteSpan loss, LossScale scale)
{
    micro_.push_back(Micro{Tensor{"loss", lossDtype, {}, loss}, {}, scale});
}

void TransactionRecordBuilder::setLossScale(LossScale scale)
{
    if (micro_.empty())
        throw Error("transaction " + std::to_string(index_) + ": a loss scale before its loss");
    micro_.front().scale = scale;
}

void TransactionRecordBuilder::setAutocast(AutocastSetting setting) { autocast_ = std::move(setting); }

void TransactionRecordBuilder::addBatchTensor(DType dtype, std::vector<std::int64_t> shape, ByteSpan data)
{
    if (micro_.empty())
        throw Error("transaction " + std::to_string(index_) + ": a batch tensor before its loss");
    std::vector<Tensor>& batch = micro_.back().batch;
    batch.push_back(Tensor{std::to_string(batch.size()), dtype, std::move(shape), data});
}

void TransactionRecordBuilder::setOptimizerValue(const std::string& option, const std::vector<double>& perGroup)
{
    optimizerValues_.emplace_back("optimizer/" + option, perGroup);
}

void TransactionRecordBuilder::setUpdateFingerprints(std::vector<double> l2, std::vector<double> maxAbs)
{
    l2_ = std::move(l2);
    maxAbs_ = std::move(maxAbs);
}

void TransactionRecordBuilder::addDelta(const std::string& parameter, DType dtype, std::vector<std::int64_t> shape, ByteSpan data)
{
    deltas_.push_back(Tensor{"delta/" + parameter, dtype, std::move(shape), data});
}

void TransactionRecordBuilder::setGradScaler(GradScalerStep step) { gradScaler_ = step; }

void TransactionRecordBuilder::setSamples(std::vector<std::vector<std::uint64_t>> samples, std::vector<Digest> proofSiblings)
{
    samples_ = std::move(samples);
    proofSiblings_ = std::move(proofSiblings);
}

void TransactionRecordBuilder::setScheduleInputs(std::vector<double> metrics, std::vector<double> state)
{
    scheduleMetrics_ = std::move(metrics);
    scheduleState_ = std::move(state);
}

void TransactionRecordBuilder::addGradientTransform(const GradientTransform& transform, DType dtype, ByteSpan totalNorm)
{
    if (transform.kind == GradientTransform::Kind::ClipNorm)
        totalNorms_.push_back(Tensor{totalNormTensorName(transforms_.size()), dtype, {}, totalNorm});
    transforms_.push_back(transform);
}

SafetensorsBuilder TransactionRecordBuilder::blob() const
{
    if (micro_.empty())
        throw Error("transaction " + std::to_string(index_) + " has no loss");
    SafetensorsBuilder blob;
    blob.setMetadata("zkdv.record", "transaction");
    blob.setMetadata("index", std::to_string(index_));
    blob.setMetadata("wall_time_ns", std::to_string(wallTimeNs_));
    if (stateDigest_)
        blob.setMetadata("state_digest", toHex(*stateDigest_));
    if (scheduleEpoch_)
        blob.setMetadata("schedule_epoch", std::to_string(*scheduleEpoch_));
    if (!transforms_.empty())
        blob.setMetadata("gradient_transforms", gradientTransformsJson(transforms_));
    if (!autocast_.empty())
        blob.setMetadata("autocast", autocastJson(autocast_));
    if (gradScaler_)
        blob.setMetadata("grad_scaler", gradScalerStepJson(*gradScaler_));
    if (!samples_.empty())
        blob.setMetadata("samples", nlohmann::json(samples_).dump());
    const bool micro = micro_.size() > 1;
    if (micro)
        blob.setMetadata("micro_batches", std::to_string(micro_.size()));
    std::vector<LossScale> scales;
    for (const Micro& step : micro_)
        scales.push_back(step.scale);
    if (std::any_of(scales.begin(), scales.end(), [](const LossScale& s) { return s.op != LossScale::Op::None; }))
        blob.setMetadata("loss_scales", lossScalesJson(scales));
    for (std::size_t m = 0; m < micro_.size(); ++m) {
        // Names are built here, where the record's layout is decided; SafetensorsBuilder keeps them.
        const std::string prefix = micro ? "micro/" + std::to_string(m) + "/" : std::string();
        const Micro& step = micro_[m];
        blob.add(prefix + "loss", step.loss.dtype, step.loss.shape, step.loss.data);
        for (const Tensor& tensor : step.batch)
            blob.add(prefix + "batch/" + tensor.name, tensor.dtype, tensor.shape, tensor.data);
    }
    for (const auto& [name, values] : optimizerValues_)
        blob.add(name, DType::F64, {static_cast<std::int64_t>(values.size())}, ByteSpan(values.data(), values.size() * sizeof(double)));
    if (!scheduleMetrics_.empty())
        blob.add("schedule/metrics", DType::F64, {static_cast<std::int64_t>(scheduleMetrics_.size())},
                 ByteSpan(scheduleMetrics_.data(), scheduleMetrics_.size() * sizeof(double)));
    if (!scheduleState_.empty())
        blob.add("schedule/state", DType::F64, {static_cast<std::int64_t>(scheduleState_.size())},
                 ByteSpan(scheduleState_.data(), scheduleState_.size() * sizeof(double)));
    blob.add("update/l2", DType::F64, {static_cast<std::int64_t>(l2_.size())}, ByteSpan(l2_.data(), l2_.size() * sizeof(double)));
    blob.add("update/max_abs", DType::F64, {static_cast<std::int64_t>(maxAbs_.size())}, ByteSpan(maxAbs_.data(), maxAbs_.size() * sizeof(double)));
    for (const Tensor& tensor : totalNorms_)
        blob.add(tensor.name, tensor.dtype, tensor.shape, tensor.data);
    for (const Tensor& tensor : deltas_)
        blob.add(tensor.name, tensor.dtype, tensor.shape, tensor.data);
    if (!proofSiblings_.empty())
        blob.add("samples/proofs", DType::U8, {static_cast<std::int64_t>(proofSiblings_.size()), static_cast<std::int64_t>(tape::kDigestSize)},
                 ByteSpan(proofSiblings_.data(), proofSiblings_.size() * tape::kDigestSize));
    return blob;
}

}  // namespace zkdv
