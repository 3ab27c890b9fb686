#pragma once
// A dataset commitment (docs/dataset-commitment.md): the files of a dataset by path, size and
// SHA-256 in commitment order, and the Merkle root over their digests; read from and written
// to its JSON document.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkdv/util/merkle_tree.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct CommittedFile {
    std::string path;  // relative, '/'-separated, no "." or ".." or empty components
    std::uint64_t size = 0;
    Digest sha256{};
};

// Commitment order: paths compared byte by byte (as memcmp, unsigned), so every platform and
// locale sorts the same files the same way.
bool commitmentPathLess(std::string_view a, std::string_view b);
// Why `path` cannot be a committed path, or "" when it can: it must be non-empty, valid UTF-8,
// relative, without "." / ".." / empty components, without NUL, at most 4096 bytes.
std::string committedPathProblem(std::string_view path);

struct DatasetCommitment {
    static constexpr std::string_view kFormat = "zkdv-dataset-commitment";
    static constexpr int kVersion = 1;
    // What this build writes: sha256-merkle-v2, whose root commits the leaf count. It reads v1
    // documents too (made before tape format 1.14), whose root is the tree's alone.
    static constexpr MerkleAlgorithm kAlgorithm = MerkleAlgorithm::V2;
    static constexpr std::string_view kUnit = "file";
    // Each leaf one training sample as the step receives it, its digest zkdv-sample-v1 (tape
    // format 5.7), its path "sample/<index, 12 digits>": what a tape's batches are bound to.
    static constexpr std::string_view kSampleUnit = "sample";
    // Bounds on documents from someone else: checked before anything is allocated per leaf.
    static constexpr std::uint64_t kMaxLeaves = 100'000'000;
    static constexpr std::uint64_t kMaxDocumentBytes = 4ull << 30;

    MerkleAlgorithm algorithm = kAlgorithm;
    std::string unit = std::string(kUnit);  // kUnit or kSampleUnit
    std::vector<CommittedFile> files;  // in commitment order
    Digest root{};                     // as the document states it (computeRoot() recomputes it)

    // The tree's root (merkle_tree.h, RFC 6962) over the files' digests in their order: the root
    // of a v1 document, the one a v2 document's root counts.
    Digest computeTreeRoot() const;
    // The root the document's algorithm publishes for its leaves: the tree root (v1), or its
    // counted root SHA-256(0x02 || leaf count || tree root) (v2).
    Digest computeRoot() const;
    std::uint64_t totalBytes() const;

    // A commitment of `files` (in any order: sorted here), with its root computed. Throws
    // Error naming the path when one is not a valid committed path or repeats.
    static DatasetCommitment of(std::vector<CommittedFile> files);
    // A commitment of samples, in the given order, from their zkdv-sample-v1 digests and sizes
    // (the bytes of their tensors). Throws Error for none.
    static DatasetCommitment ofSamples(const std::vector<std::pair<std::uint64_t, Digest>>& samples);
    // "sample/000000000017": a sample's committed path, which sorts in index order.
    static std::string samplePath(std::uint64_t index);

    // Members in the documented order (format first, leaves last), for people reading it.
    nlohmann::ordered_json toJson() const;
    // Parses a document from someone else. Throws FormatError naming the member at fault
    // (`leaves[3].sha256`) and what was expected and found: invalid JSON (with its byte
    // offset), another format or version, an algorithm other than sha256-merkle-v1 and -v2, a wrong type, a count that is not the
    // number of leaves, bad hex, a path out of order, repeated or not a valid committed path.
    // The stated root is kept as stated; comparing it with computeRoot() is the caller's check.
    static DatasetCommitment parse(std::string_view text);
};

}  // namespace zkdv
