#pragma once
// The root record: what was trained, how, and with which sealed program (spec section 3).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/tape/determinism_profile.h"
#include "zkdv/tape/dtype.h"
#include "zkdv/tape/grad_scaler.h"
#include "zkdv/tape/numeric_environment.h"
#include "zkdv/tape/dataset_samples.h"
#include "zkdv/tape/resumed_tape.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct TensorSpec {
    std::string name;
    std::vector<std::int64_t> shape;
    DType dtype = DType::F32;

    std::int64_t elementCount() const;
    std::uint64_t byteSize() const;
};

struct OptimizerGroup {
    std::vector<std::string> parameters;
    std::string optionsJson;  // the group's options as a JSON object (scheduled ones: their values when the root was written)
};

// Root member optimizer.schedule (since 1.6, spec 3.3): which numeric options may change from
// one transaction to the next, and the scheduler that changes them.
struct OptimizerSchedule {
    std::vector<std::string> options;  // scheduled options; every transaction records their values
    // The scheduler the auditor recomputes the values with ({"kind", "arguments", "base"}), as
    // JSON; empty when the values are as recorded, checked against no schedule.
    std::string schedulerJson;
    std::uint64_t epoch = 0;  // the scheduler's last_epoch when the root was written

    bool checked() const { return !schedulerJson.empty(); }
    bool schedules(const std::string& option) const;
};

struct RootRecord {
    std::string prover = "whitebox-torch";
    int formatMajor = 1;
    int formatMinor = tape::kMinorVersion;

    std::string producerName;
    std::string producerVersion;
    std::string torchVersion;
    std::string device = "cpu";
    // libtorch intra-op threads of the training process (since 1.2; 0 = not recorded). CPU
    // reductions split their work by thread count, so a replay uses the same count.
    int intraOpThreads = 0;
    // The training's numerical environment (root member `numerics`, since 1.5; absent: not
    // recorded). A replay in another environment is judged by the cross-environment regime.
    std::optional<NumericEnvironment> numerics;
    // How the device made its numbers (root member `determinism`, since 1.13; absent: not
    // recorded): the replay applies it and judges by the cross-environment regime where its
    // own differs.
    std::optional<DeterminismProfile> determinism;

    std::vector<TensorSpec> parameters;
    std::vector<TensorSpec> buffers;

    std::string optimizerContract;
    std::vector<OptimizerGroup> optimizerGroups;
    std::optional<OptimizerSchedule> optimizerSchedule;  // absent: every option is static
    // torch.amp.GradScaler's rule and starting state (root member grad_scaler, since 1.8, spec
    // 5.6); absent: no transaction's loss was scaled by one.
    std::optional<GradScalerDeclaration> gradScaler;
    // The tape this one continues (root member resumes, since 1.10, spec 3.4); absent: the
    // tape starts its run.
    std::optional<ResumedTape> resumes;
    // The dataset commitment the batches are drawn from (root member dataset, since 1.12, spec
    // 5.7); absent: transactions name no samples.
    std::optional<DatasetDeclaration> dataset;

    std::string programKind = "torchscript";
    Digest programSha256{};
    bool programEmbedded = true;
    std::string programEntry = "training_step";

    int snapshotInterval = tape::kDefaultSnapshotInterval;
    double stateCheckProbability = 0.0;
    double updateCheckProbability = 0.0;
    std::uint64_t samplingSeed = 0;
    // "splitmix64" (since 1.1); empty when a 1.0 root names no generator (spec 5.2).
    std::string samplingGenerator = "splitmix64";
    int maxInFlight = 2;
    std::string overlap = "unchecked";
    std::string metadataJson = "{}";

    std::string toJson() const;
    // Parses and validates a root payload; FormatError says which member is wrong.
    static RootRecord parse(ByteSpan payload);

    // Position of a parameter in the layout, or -1.
    int parameterIndex(const std::string& name) const;
};

}  // namespace zkdv
