#include <cstdio>

#include "command_runner.h"
#include "commands.h"
#include "terminal_progress.h"
#include "zkdv/demo/synthetic_demo.h"

namespace zkdv::cli {

int runDemo(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit demo --out FILE [--steps N] [options]",
                          "Trains a small softmax classifier with SGD and momentum on a synthetic, learnable task\n"
                          "and records every step into a tape, as a trainer using ZKDV would.");
    parser.addOption("out", "FILE", "tape to write (refuses to replace an existing file without --overwrite)");
    parser.addOption("steps", "N", "number of transactions (default 2000)");
    parser.addOption("seed", "S", "seed of the data and of the sampling policy (default 7)");
    parser.addOption("snapshot-interval", "K", "full-state snapshot every K transactions (default 12)");
    parser.addOption("batch-size", "B", "examples per batch (default 32)");
    parser.addOption("update-check", "P", "probability of recording full deltas (default 0.01)");
    parser.addOption("state-check", "P", "probability of recording a state digest (default 0.01)");
    parser.addFlag("overwrite", "replace FILE if it exists");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("demo", parser, argc, argv, [&]() {
        if (!parser.has("out"))
            throw UsageError("--out FILE is required");
        TerminalProgress progress(!parser.has("quiet"));
        SyntheticDemoOptions options;
        options.steps = parser.unsignedValue("steps", options.steps);
        options.seed = parser.unsignedValue("seed", options.seed);
        options.snapshotInterval = static_cast<int>(parser.unsignedValue("snapshot-interval", 12));
        options.batchSize = static_cast<int>(parser.unsignedValue("batch-size", 32));
        options.updateCheckProbability = parser.doubleValue("update-check", options.updateCheckProbability, 0.0, 1.0);
        options.stateCheckProbability = parser.doubleValue("state-check", options.stateCheckProbability, 0.0, 1.0);
        options.overwrite = parser.has("overwrite");
        options.progress = &progress;
        if (options.snapshotInterval < 1 || options.snapshotInterval > 1000000)
            throw UsageError("--snapshot-interval must be between 1 and 1000000");
        if (options.batchSize < 1 || options.batchSize > 65536)
            throw UsageError("--batch-size must be between 1 and 65536");
        const std::string path = parser.value("out");
        SyntheticDemoResult result = writeSyntheticDemoTape(path, options);
        progress.finish();
        std::printf("%s: %llu transactions, loss %.4f -> %.4f, %llu bytes, chain head %s\n", path.c_str(),
                    static_cast<unsigned long long>(result.transactions), result.firstLoss, result.lastLoss,
                    static_cast<unsigned long long>(result.bytes), toHex(result.chainHead).c_str());
        return kExitOk;
    });
}

}  // namespace zkdv::cli
