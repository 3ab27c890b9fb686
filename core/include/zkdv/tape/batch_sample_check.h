#pragma once
// Every batch row of a transaction checked against the root's commitment of samples (tape
// format 5.7): the reader's check of every transaction at verify and ingest, and the replay's.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/tape/dataset_samples.h"
#include "zkdv/util/merkle_tree.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

// A batch row that is not the committed sample it names: which row, which sample, and the
// row's digest as recomputed from the batch bytes.
struct SampleMismatch {
    std::size_t microBatch = 0;
    std::uint64_t row = 0;
    std::uint64_t sample = 0;      // the index the transaction names for the row
    std::uint64_t leafCount = 0;   // the count the root declares
    std::size_t siblings = 0;      // the proof's length, which the index and count fix
    Digest rowDigest{};            // zkdv-sample-v1 of the row as recorded
    Digest root{};                 // the root the proof does not lead to
    bool countCommitted = false;   // whether that root commits the count (sha256-merkle-v2)

    // "micro-batch 1, row 3 is not committed sample 17 of 40: its zkdv-sample-v1 digest 3fa2…
    // and recorded proof (6 siblings) do not lead to the dataset root 9c1e… with the count 40"
    // ("row 3 …" when `microBatches` is 1; "with the count" where the root commits it).
    std::string describe(std::size_t microBatches) const;
};

// What the rows of one batch tensor share in their zkdv-sample-v1 digests: the line of the row
// shape ("F32 6\n") and a row's bytes; made once per batch when every row is digested.
struct SampleRowShape {
    std::string line;
    std::uint64_t bytes = 0;
};

// Checks every batch row of a transaction against the root's commitment of samples (spec 5.7):
// each row's zkdv-sample-v1 digest, recomputed from the batch bytes as the record holds them,
// must lead through its proof (exactly the siblings RFC 6962 gives its index and the root's
// count) to the tree root, and that tree root, under sha256-merkle-v2 counted with the root's
// count, must be the root (under v1 the tree root is the root). Needs no kernel and no torch.
// One per reader: it keeps its hashing context and buffers from one transaction to the next.
class BatchSampleCheck {
public:
    // The first row (micro-batch, then row order) that is not the sample it names; nullopt
    // when every row is, or the root declares no dataset. The record must have been read
    // against `root` (TransactionRecord::parse), which sized its indices and proofs; throws
    // FormatError when a row or a sibling it names is not there.
    std::optional<SampleMismatch> firstMismatch(const TransactionRecord& transaction, const RootRecord& root);

private:
    // Whether `treeRoot`, which a row's proof reached, is the declaration's: itself under v1,
    // counted under v2 (the counted root of the last tree root found so is kept, so a tape's
    // rows cost one more hash, not one each).
    bool leadsToRoot(const Digest& treeRoot, const DatasetDeclaration& declared);

    Sha256 hasher_;
    MerkleProof proof_;
    std::vector<SampleRowShape> rowShapes_;
    std::optional<DatasetDeclaration> countedFor_;  // the v2 declaration whose tree root is countedTreeRoot_
    Digest countedTreeRoot_{};
};

// Why the commitment whose tree has root `treeRoot` (RFC 6962's root, which a v1 document
// states and a v2 document's leaves give) over `leafCount` samples, a document the auditor
// holds, is not the one `declared` names, or nullopt when it is. Under sha256-merkle-v2 the
// declared root must be the counted root of those two; under v1 the root must be the tree root
// and the count is compared with it: a v1 root does not commit its count (merkle_tree.h), and a
// tape claiming another count could name a committed sample by another index.
std::optional<std::string> declarationMismatch(const DatasetDeclaration& declared, const Digest& treeRoot, std::uint64_t leafCount);

}  // namespace zkdv
