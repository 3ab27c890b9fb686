#pragma once
// Batches bound to a dataset commitment (spec 5.7, since 1.12). The root may declare a
// commitment of *samples* (docs/dataset-commitment.md, unit "sample"): a Merkle root over the
// digests of every sample as the training step receives it. Each transaction then names, per
// micro-batch, the committed sample behind each row of its batch, with the Merkle proofs, and
// an auditor checks from the tape alone that every row is the committed sample it claims to be.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/tape/safetensors.h"
#include "zkdv/util/merkle_tree.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct RootRecord;
struct TransactionRecord;

// Root member `dataset`: the commitment the batches are drawn from.
struct DatasetDeclaration {
    // sha256-merkle-v2 from format 1.14 on, whose root commits the count; sha256-merkle-v1 in
    // 1.12 and 1.13 tapes, whose count is the writer's claim (spec 5.7).
    MerkleAlgorithm algorithm = MerkleAlgorithm::V2;
    Digest root{};                // the commitment's published root under `algorithm`
    std::uint64_t leafCount = 0;  // how many samples it commits

    // Whether the root commits the count (v2), so that a tape cannot claim another count.
    bool countCommitted() const { return algorithm == MerkleAlgorithm::V2; }
};

// The most rows one micro-batch may bind (a bound on a hostile tape's work, not on training).
inline constexpr std::size_t kMaxSampleRows = 1u << 20;

// A sample's digest, "zkdv-sample-v1": SHA-256 over "zkdv-sample-v1\n", then for each batch
// tensor in order the line "<dtype> <dim1> <dim2> …\n" (the row's shape: the tensor's without
// its first dimension) and the row's bytes, little-endian, in row-major order. Every tensor
// must have a first dimension of at least `row + 1`; throws FormatError otherwise.
Digest sampleDigest(const std::vector<const TensorView*>& batch, std::uint64_t row);

// The rows of a batch: its tensors' common first dimension. Throws FormatError (naming the
// tensor) when a tensor is a scalar or the first dimensions differ.
std::uint64_t batchRows(const std::vector<const TensorView*>& batch);

// Why the transaction's batch rows are not the committed samples it names, or nullopt when each
// row's digest leads through its proof to the root: "the batch is not the committed samples it
// names: row 3 is not committed sample 17 of 40: …" (BatchSampleCheck, batch_sample_check.h,
// which the tape reader runs on every transaction). nullopt too for a tape without a dataset.
std::optional<std::string> batchSampleProblem(const TransactionRecord& transaction, const RootRecord& root);

}  // namespace zkdv
