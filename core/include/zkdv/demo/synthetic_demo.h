#pragma once
// An example tape from a small softmax classifier trained in plain C++ with SGD and
// momentum: real, learnable training, without libtorch, for trying the audit tools.

#include <cstdint>
#include <string>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/progress.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct SyntheticDemoOptions {
    std::uint64_t steps = 2000;
    int batchSize = 32;
    int features = 16;
    int classes = 4;
    double learningRate = 0.05;
    double momentum = 0.9;
    double updateCheckProbability = 0.01;
    double stateCheckProbability = 0.01;
    std::uint64_t seed = 7;
    int snapshotInterval = tape::kDefaultSnapshotInterval;
    bool overwrite = false;
    bool seal = true;
    ProgressSink* progress = nullptr;  // reports transactions written; may cancel
};

struct SyntheticDemoResult {
    std::uint64_t transactions = 0;
    double firstLoss = 0.0;
    double lastLoss = 0.0;
    std::uint64_t bytes = 0;
    Digest chainHead{};
};

SyntheticDemoResult writeSyntheticDemoTape(const std::string& path, const SyntheticDemoOptions& options);

}  // namespace zkdv
