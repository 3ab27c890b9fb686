#include <cstdio>

#include "command_runner.h"
#include "terminal_progress.h"
#include "torch_commands.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/tape/tape_format.h"

namespace zkdv::cli {

int runDemo(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit demo --out FILE [--steps N] [--optimizer NAME] [--device cpu|cuda] [options]",
                          "Trains a small CNN with BatchNorm, built from TorchScript source and sealed, on a synthetic\n"
                          "but learnable image task, and records every step into a tape through the ZKDV recorder,\n"
                          "as a trainer using ZKDV would. --synthetic writes a tape from a plain-C++ softmax\n"
                          "classifier instead (fast, for large benchmark tapes; its program cannot be replayed).");
    parser.addOption("out", "FILE", "tape to write (refuses to replace an existing file without --overwrite)");
    parser.addOption("steps", "N", "number of transactions (default 2000)");
    parser.addOption("optimizer", "NAME", "torch.optim class name of the optimizer (default Adam)");
    parser.addOption("device", "DEV", "cpu (default), cuda or cuda:N");
    parser.addOption("seed", "S", "seed of the data, the initial weights and the sampling policy (default 7)");
    parser.addOption("snapshot-interval", "K",
                     "full-state snapshot every K transactions (default " + std::to_string(tape::kDefaultSnapshotInterval) + ")");
    parser.addOption("batch-size", "B", "examples per batch (default 32)");
    parser.addOption("update-check", "P", "probability of recording full deltas (default 0.01)");
    parser.addOption("state-check", "P", "probability of recording a state digest (default 0.01)");
    parser.addOption("signing-key", "KEY", "sign the tape with this PEM private key (ECDSA P-256 or Ed25519; zkdv-audit keygen makes one)");
    parser.addFlag("synthetic", "the plain-C++ softmax classifier instead of the libtorch CNN");
    parser.addFlag("overwrite", "replace FILE if it exists");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("demo", parser, argc, argv, [&]() {
        if (!parser.has("out"))
            throw UsageError("--out FILE is required");
        const std::string path = parser.value("out");
        TerminalProgress progress(!parser.has("quiet"));
        const int interval = static_cast<int>(parser.unsignedValue("snapshot-interval", tape::kDefaultSnapshotInterval));
        const int batchSize = static_cast<int>(parser.unsignedValue("batch-size", 32));
        if (interval < 1 || interval > 1000000)
            throw UsageError("--snapshot-interval must be between 1 and 1000000");
        if (batchSize < 1 || batchSize > 65536)
            throw UsageError("--batch-size must be between 1 and 65536");

        // The options both demos share, each starting from its own defaults.
        const auto fillCommonOptions = [&](auto& options) {
            options.steps = parser.unsignedValue("steps", options.steps);
            options.seed = parser.unsignedValue("seed", options.seed);
            options.snapshotInterval = interval;
            options.batchSize = batchSize;
            options.updateCheckProbability = parser.doubleValue("update-check", options.updateCheckProbability, 0.0, 1.0);
            options.stateCheckProbability = parser.doubleValue("state-check", options.stateCheckProbability, 0.0, 1.0);
            options.overwrite = parser.has("overwrite");
            options.progress = &progress;
        };

        if (parser.has("synthetic")) {
            if (parser.has("signing-key"))
                throw UsageError("--signing-key signs the CNN demo's tapes, recorded by the recorder; not --synthetic");
            SyntheticDemoOptions options;
            fillCommonOptions(options);
            SyntheticDemoResult result = writeSyntheticDemoTape(path, options);
            progress.finish();
            std::printf("%s: %llu transactions, loss %.4f -> %.4f, %llu bytes, chain head %s\n", path.c_str(),
                        static_cast<unsigned long long>(result.transactions), result.firstLoss, result.lastLoss,
                        static_cast<unsigned long long>(result.bytes), toHex(result.chainHead).c_str());
            return kExitOk;
        }

        CnnDemoOptions options;
        fillCommonOptions(options);
        options.optimizer = parser.value("optimizer", options.optimizer);
        options.device = parser.value("device", options.device);
        options.signingKeyFile = parser.value("signing-key", "");
        CnnDemoResult result = runCnnDemo(path, options);
        progress.finish();
        std::printf("%s: %llu transactions with %s on %s in %.1f s; mean loss over 50 steps %.4f at the start, %.4f at the end; "
                    "chain head %s\n",
                    path.c_str(), static_cast<unsigned long long>(result.transactions), options.optimizer.c_str(), options.device.c_str(),
                    result.seconds, result.firstLoss, result.lastLoss, toHex(result.chainHead).c_str());
        return kExitOk;
    });
}

}  // namespace zkdv::cli
