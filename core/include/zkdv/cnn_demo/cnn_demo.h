#pragma once
// The default example: a small CNN with BatchNorm, built from TorchScript source, sealed,
// and trained on a synthetic but learnable image task through the recorder, so the tape
// is a real libtorch training run.

#include <cstdint>
#include <string>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/progress.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct CnnDemoOptions {
    std::uint64_t steps = 2000;
    std::string optimizer = "Adam";
    std::string device = "cpu";
    int batchSize = 32;
    std::uint64_t seed = 7;
    double updateCheckProbability = 0.01;
    double stateCheckProbability = 0.01;
    int snapshotInterval = tape::kDefaultSnapshotInterval;
    int maxInFlight = 2;
    bool overwrite = false;
    std::string signingKeyFile;  // RecorderOptions::signingKeyFile
    bool record = true;  // false: the same training loop without a recorder (for overhead benchmarks)
    ProgressSink* progress = nullptr;
};

struct CnnDemoResult {
    std::uint64_t transactions = 0;
    double firstLoss = 0;      // mean over the first 50 steps
    double lastLoss = 0;       // mean over the last 50 steps
    double seconds = 0;        // wall time of the training loop
    std::size_t snapshotPoolHighWater = 0;
    Digest chainHead{};
};

// Throws Error for an unknown optimizer or a device that is not present.
CnnDemoResult runCnnDemo(const std::string& path, const CnnDemoOptions& options);

}  // namespace zkdv
