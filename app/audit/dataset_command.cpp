// zkdv-audit dataset commit / verify: a dataset's files bound by one Merkle root
// (docs/dataset-commitment.md).

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "command_runner.h"
#include "commands.h"
#include "terminal_progress.h"
#include "zkdv/provenance/dataset_commitment_file.h"
#include "zkdv/provenance/provenance_json.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {

namespace {

constexpr const char* kDatasetUsage = R"(usage: zkdv-audit dataset commit FOLDER|FILE... -o FILE [--json]
       zkdv-audit dataset verify COMMITMENT [FOLDER] [--json]

Binds a training dataset to one Merkle root over its files' SHA-256 digests
(docs/dataset-commitment.md).
  commit   hash every file (in parallel) and write the commitment
  verify   recompute a commitment's root from its leaves and, given the folder, rehash
           its files and name each one that differs, is missing or is extra
Exit status: 0 ok, 1 a check failed, 2 usage error or unreadable input.
)";

unsigned threadsOption(const ArgumentParser& parser)
{
    return static_cast<unsigned>(std::min<std::uint64_t>(parser.unsignedValue("threads", 0), 256));
}

int runCommit(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit dataset commit FOLDER|FILE... -o FILE [--json] [--overwrite] [--threads N] [--quiet]",
                          "Hashes a dataset's files with SHA-256 (on several threads, progress on stderr) and writes\n"
                          "its commitment: the files by relative path ('/'-separated, sorted byte by byte), size\n"
                          "and digest, and the Merkle root over the digests in that order. One FOLDER: every\n"
                          "regular file under it (the output file left out), by its path relative to FOLDER.\n"
                          "FILEs: each by its relative path as given. Exit 0 when written, 2 otherwise.");
    parser.setPositionals("FOLDER|FILE", "the dataset's folder, or its files", 1, true);
    parser.addOption("out", "FILE", "the commitment to write (also -o FILE; required)");
    parser.addShortAlias('o', "out");
    parser.addFlag("overwrite", "replace FILE if it exists");
    parser.addOption("threads", "N", "hashing threads (default: the machine's, at most 8)");
    parser.addFlag("json", "print the result as JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("dataset commit", parser, argc, argv, [&]() {
        const std::string out = parser.value("out");
        if (out.empty())
            throw UsageError("-o FILE is required");
        TerminalProgress progress(!parser.has("quiet"));
        const DatasetCommitment commitment = commitDataset(parser.positionals(), out, parser.has("overwrite"), &progress, threadsOption(parser));
        progress.finish();
        if (parser.has("json")) {
            const nlohmann::json result = datasetCommitmentJson(commitment, out);
            std::printf("%s\n", toJsonText(result, 2).c_str());
        } else {
            std::printf("%s: %zu files, %llu bytes, root %s (%s)\n", out.c_str(), commitment.files.size(),
                        static_cast<unsigned long long>(commitment.totalBytes()), toHex(commitment.root).c_str(),
                        std::string(merkleAlgorithmName(commitment.algorithm)).c_str());
        }
        return kExitOk;
    });
}

int runDatasetVerify(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit dataset verify COMMITMENT [FOLDER] [--json] [--ignore-extra] [--threads N] [--quiet]",
                          "Checks a dataset commitment: its root against the one its leaves give (an edited\n"
                          "digest, count or order is caught here), then, given FOLDER, every file in it against\n"
                          "the commitment, naming each file that changed, is missing or is extra. Exit 0 when\n"
                          "everything agrees, 1 when something differs, 2 when the commitment or the folder\n"
                          "cannot be read or the commitment is not a valid one.");
    parser.setPositionals("COMMITMENT [FOLDER]", "the commitment (JSON) and the dataset's folder", 1, true);
    parser.addFlag("ignore-extra", "do not count files in FOLDER that the commitment does not list");
    parser.addOption("threads", "N", "hashing threads (default: the machine's, at most 8)");
    parser.addFlag("json", "print the result as JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("dataset verify", parser, argc, argv, [&]() {
        const std::vector<std::string>& inputs = parser.positionals();
        if (inputs.size() > 2)
            throw UsageError("unexpected argument \"" + inputs[2] + "\"");
        const std::string& path = inputs.front();
        TerminalProgress progress(!parser.has("quiet") && inputs.size() == 2);
        const DatasetVerification verification = verifyDataset(path, inputs.size() == 2 ? std::optional<std::string>(inputs[1]) : std::nullopt,
                                                               parser.has("ignore-extra"), &progress, threadsOption(parser));
        progress.finish();
        const DatasetCommitment& commitment = verification.commitment;
        const Digest& computed = verification.computedRoot;
        const bool rootMatches = verification.rootMatches();
        const std::optional<DatasetFolderCheck>& folder = verification.folder;
        const bool ok = verification.ok();
        if (parser.has("json")) {
            const nlohmann::json result = datasetVerificationJson(verification, path, inputs.size() == 2 ? inputs[1] : std::string());
            std::printf("%s\n", toJsonText(result, 2).c_str());
            return ok ? kExitOk : kExitCheckFailed;
        }
        std::printf("%s: %zu %s, root %s (%s%s)\n", path.c_str(), commitment.files.size(),
                    commitment.unit == DatasetCommitment::kSampleUnit ? "samples" : "files", toHex(commitment.root).c_str(),
                    std::string(merkleAlgorithmName(commitment.algorithm)).c_str(),
                    commitment.algorithm == MerkleAlgorithm::V1 ? ": the root does not commit the count" : "");
        if (rootMatches)
            std::printf("  root: matches the leaves\n");
        else
            std::printf("  root: DIFFERS: the leaves give %s (the commitment was edited)\n", toHex(computed).c_str());
        if (folder) {
            std::printf("  folder %s: %llu files rehashed, %zu difference(s)\n", inputs[1].c_str(), static_cast<unsigned long long>(folder->filesHashed),
                        folder->differences.size());
            for (const DatasetDifference& difference : folder->differences)
                std::printf("  %-7s %s: %s\n", std::string(datasetFindingName(difference.finding)).c_str(), difference.path.c_str(), difference.detail.c_str());
        }
        std::printf("%s\n", ok ? "OK" : "FAILED");
        return ok ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace

int runDataset(int argc, char** argv)
{
    const std::string action = argc >= 3 ? argv[2] : "";
    // The action takes the command's place, so its options are parsed from argv[3..].
    if (action == "commit")
        return runCommit(argc - 1, argv + 1);
    if (action == "verify")
        return runDatasetVerify(argc - 1, argv + 1);
    if (action == "--help" || action == "-h") {
        std::fputs(kDatasetUsage, stdout);
        return kExitOk;
    }
    std::fprintf(stderr, "zkdv-audit dataset: %s\n\n%s", action.empty() ? "missing ACTION (commit or verify)" : ("unknown action \"" + action + "\"").c_str(),
                 kDatasetUsage);
    return kExitUsage;
}

}  // namespace zkdv::cli
