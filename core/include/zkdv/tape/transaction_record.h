#pragma once
// One optimizer step as recorded in a transaction record (spec section 5): a parsed view
// into the record's safetensors payload, and the builder that writes one.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/tape/autocast_setting.h"
#include "zkdv/tape/grad_scaler.h"
#include "zkdv/tape/gradient_transform.h"
#include "zkdv/tape/loss_scale.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct RootRecord;

// The most micro-batches one transaction may hold (spec 5.4): a replay runs every one of them.
inline constexpr std::size_t kMaxMicroBatches = 1024;

// One forward and backward pass of a step (spec 5.4): the batch it ran on, the loss the sealed
// program computed from it, and how the loop scaled that loss before differentiating it.
struct MicroBatch {
    const TensorView* loss = nullptr;
    std::vector<const TensorView*> batch;
    LossScale scale;
};

// Tensors point into the payload they were parsed from.
struct TransactionRecord {
    std::uint64_t index = 0;
    std::uint64_t wallTimeNs = 0;
    std::optional<Digest> stateDigest;
    // The scheduler's last_epoch at this step (metadata "schedule_epoch", since 1.6): present
    // exactly when the root's schedule names a scheduler (spec 3.3).
    std::optional<std::uint64_t> scheduleEpoch;
    // What the scheduler's steps since the transaction before read and left (since 1.9, spec
    // 3.3), with a scheduler the root names: "schedule/metrics", F64 [k], the metric each of
    // those k steps was given (ReduceLROnPlateau's step(metrics)), and "schedule/state", F64
    // [n], the scheduler's own state after them; nullptr when absent.
    const TensorView* scheduleMetrics = nullptr;
    const TensorView* scheduleState = nullptr;
    // The loss widened to double (exact for every floating dtype); with several micro-batches
    // the sum of their scaled losses (their mean, for losses divided by their number).
    double loss = 0.0;
    const TensorView* lossTensor = nullptr;    // the first micro-batch's
    std::vector<const TensorView*> batch;      // every micro-batch's tensors, in order
    // The step's forward and backward passes, in order: one, or since 1.7 several, whose
    // gradients accumulate before the optimizer step (gradient accumulation).
    std::vector<MicroBatch> microBatches;
    // The autocast every forward pass ran under (metadata "autocast", since 1.7, section 5.5).
    AutocastSetting autocast;
    std::vector<const TensorView*> optimizerValues;  // "optimizer/<option>", F64 [groups]
    std::vector<double> updateL2;                    // per layout parameter
    std::vector<double> updateMaxAbs;                // per layout parameter
    std::vector<const TensorView*> deltas;           // per layout parameter, or empty
    // What the step did to the gradients before the optimizer used them (metadata
    // "gradient_transforms", since 1.7, section 5.1), in order, and for each clip_grad_norm_
    // the total norm it computed ("gradients/total_norm/<k>"; nullptr for other kinds).
    std::vector<GradientTransform> gradientTransforms;
    std::vector<const TensorView*> totalNorms;
    // The GradScaler state the step used and whether it skipped the optimizer step (metadata
    // "grad_scaler", since 1.8, section 5.6): present exactly when the root declares one. Every
    // micro-batch's scaled loss was multiplied by the scale, and gradientTransforms holds its
    // one unscale_.
    std::optional<GradScalerStep> gradScaler;
    // The committed sample behind each batch row, per micro-batch (metadata "samples", since
    // 1.12, section 5.7), present exactly when the root declares a dataset, and their Merkle
    // proofs laid end to end ("samples/proofs", U8 [S, 32]; nullptr when S is 0).
    std::vector<std::vector<std::uint64_t>> samples;
    const TensorView* sampleProofs = nullptr;

    // The first group's value of `option` ("lr"), if recorded.
    std::optional<double> optimizerValue(const std::string& option) const;
    // Every group's value of `option`, or empty when the record holds none.
    std::vector<double> optimizerGroupValues(const std::string& option) const;
    // The values of schedule/metrics and schedule/state (empty when absent).
    std::vector<double> scheduleMetricValues() const;
    std::vector<double> scheduleStateValues() const;
    double updateNorm() const;  // L2 norm over all parameters' updates

    // Checks the payload against the spec and the tape's root (layout sizes, delta shapes
    // and dtypes); throws FormatError with the offset inside the payload.
    static TransactionRecord parse(const SafetensorsView& view, const RootRecord& root);
    // The same into `into`, reusing its vectors' storage (for readers of many records).
    static void parse(const SafetensorsView& view, const RootRecord& root, TransactionRecord& into);
};

// Writes the safetensors payload of a transaction record.
class TransactionRecordBuilder {
public:
    TransactionRecordBuilder(std::uint64_t index, std::uint64_t wallTimeNs);
    void setStateDigest(const Digest& digest);
    void setScheduleEpoch(std::uint64_t epoch);
    // schedule/metrics and schedule/state (spec 3.3, since 1.9); an empty vector writes none.
    void setScheduleInputs(std::vector<double> metrics, std::vector<double> state);
    // Tensor bytes are referenced, not copied; keep them alive until the record is written.
    void setLoss(DType dtype, ByteSpan scalar);
    void addBatchTensor(DType dtype, std::vector<std::int64_t> shape, ByteSpan data);
    // Another forward and backward pass (spec 5.4): its loss, then its batch with addBatchTensor.
    // The first call after setLoss starts the second micro-batch.
    void addMicroBatch(DType lossDtype, ByteSpan loss, LossScale scale = {});
    // How the first (or only) micro-batch's loss was scaled.
    void setLossScale(LossScale scale);
    void setAutocast(AutocastSetting setting);
    void setOptimizerValue(const std::string& option, const std::vector<double>& perGroup);
    void setUpdateFingerprints(std::vector<double> l2, std::vector<double> maxAbs);
    void addDelta(const std::string& parameter, DType dtype, std::vector<std::int64_t> shape, ByteSpan data);
    // A gradient transform the step applied, in order; `totalNorm` is clip_grad_norm_'s result
    // (a scalar of `dtype`), empty for other kinds.
    void addGradientTransform(const GradientTransform& transform, DType dtype = DType::F32, ByteSpan totalNorm = {});
    void setGradScaler(GradScalerStep step);
    // The committed sample of each batch row, per micro-batch, and their proofs' siblings in
    // that order (section 5.7); copied.
    void setSamples(std::vector<std::vector<std::uint64_t>> samples, std::vector<Digest> proofSiblings);

    // The record's payload, tensors in the spec's order; valid while this builder lives.
    SafetensorsBuilder blob() const;

private:
    struct Tensor {
        std::string name;
        DType dtype;
        std::vector<std::int64_t> shape;
        ByteSpan data;
    };
    std::uint64_t index_;
    std::uint64_t wallTimeNs_;
    std::optional<Digest> stateDigest_;
    std::optional<std::uint64_t> scheduleEpoch_;
    std::vector<double> scheduleMetrics_, scheduleState_;
    struct Micro {
        Tensor loss;
        std::vector<Tensor> batch;
        LossScale scale;
    };
    std::vector<Micro> micro_;
    AutocastSetting autocast_;
    std::vector<std::pair<std::string, std::vector<double>>> optimizerValues_;
    std::vector<double> l2_, maxAbs_;
    std::vector<Tensor> deltas_;
    std::vector<GradientTransform> transforms_;
    std::vector<Tensor> totalNorms_;
    std::optional<GradScalerStep> gradScaler_;
    std::vector<std::vector<std::uint64_t>> samples_;
    std::vector<Digest> proofSiblings_;
};

}  // namespace zkdv
