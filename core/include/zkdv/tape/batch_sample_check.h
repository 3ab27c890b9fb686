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

    // "micro-batch 1, row 3 is not committed sample 17 of 40: its zkdv-sample-v1 digest 3fa2…
    // and recorded proof (6 siblings) do not lead to the dataset root 9c1e…" ("row 3 …" when
    // `microBatches` is 1).
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
// count) to the root. Needs no kernel and no torch. One per reader: it keeps its hashing
// context and buffers from one transaction to the next.
class BatchSampleCheck {
public:
    // The first row (micro-batch, then row order) that is not the sample it names; nullopt
    // when every row is, or the root declares no dataset. The record must have been read
    // against `root` (TransactionRecord::parse), which sized its indices and proofs; throws
    // FormatError when a row or a sibling it names is not there.
    std::optional<SampleMismatch> firstMismatch(const TransactionRecord& transaction, const RootRecord& root);

private:
    Sha256 hasher_;
    MerkleProof proof_;
    std::vector<SampleRowShape> rowShapes_;
};

// Why the commitment with `root` over `leafCount` samples (a commitment document the auditor
// holds) is not the one `declared` names, or nullopt when it is. The count is compared with
// the root: a root does not commit its count (merkle_tree.h), and a tape claiming another
// count could name a committed sample by another index.
std::optional<std::string> declarationMismatch(const DatasetDeclaration& declared, const Digest& root, std::uint64_t leafCount);

}  // namespace zkdv
