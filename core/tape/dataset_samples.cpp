#include "zkdv/tape/dataset_samples.h"

#include <algorithm>
#include <string>

#include "zkdv/tape/batch_sample_check.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/error.h"
#include "zkdv/util/merkle_tree.h"

namespace zkdv {

std::uint64_t batchRows(const std::vector<const TensorView*>& batch)
{
    if (batch.empty())
        throw FormatError("the batch holds no tensor, so no sample");
    const std::int64_t rows = batch.front()->shape.empty() ? -1 : batch.front()->shape.front();
    for (const TensorView* tensor : batch) {
        if (tensor->shape.empty())
            throw FormatError(tensor->name + " is a scalar: a batch bound to samples holds them along its first dimension");
        if (tensor->shape.front() != rows)
            throw FormatError(tensor->name + " has " + std::to_string(tensor->shape.front()) + " rows, " + batch.front()->name + " " +
                              std::to_string(rows) + ": every batch tensor holds one row per sample");
    }
    if (rows < 1 || static_cast<std::uint64_t>(rows) > kMaxSampleRows)
        throw FormatError("a batch bound to samples holds 1 to " + std::to_string(kMaxSampleRows) + " rows, not " + std::to_string(rows));
    return static_cast<std::uint64_t>(rows);
}

std::optional<std::string> declarationMismatch(const DatasetDeclaration& declared, const Digest& treeRoot, std::uint64_t leafCount)
{
    const auto samples = [](std::uint64_t count) { return std::to_string(count) + (count == 1 ? " sample" : " samples"); };
    if (declared.countCommitted()) {
        if (declared.root == merkleCountedRoot(treeRoot, leafCount)) {
            if (declared.leafCount == leafCount)
                return std::nullopt;
            return "the tape names this commitment's root with a count of " + samples(declared.leafCount) + ", the commitment holds " +
                   samples(leafCount) + ", which the root commits: the tape contradicts its own root";
        }
        if (declared.root == merkleCountedRoot(treeRoot, declared.leafCount))
            return "the tape's batches are bound to this commitment's samples counted as " + samples(declared.leafCount) +
                   ", the commitment holds " + samples(leafCount) + ": its root commits the other count, so it is not this commitment's";
        return "the tape's batches are bound to another commitment (root " + toHex(declared.root).substr(0, 16) + "…, " +
               samples(declared.leafCount) + "), not this one";
    }
    if (declared.root != treeRoot)
        return "the tape's batches are bound to another commitment (root " + toHex(declared.root).substr(0, 16) + "…, " +
               samples(declared.leafCount) + "), not this one";
    if (declared.leafCount != leafCount)
        return "the tape names this commitment's root with a count of " + samples(declared.leafCount) + ", the commitment holds " +
               samples(leafCount) + ": a sha256-merkle-v1 root (format 1.12, 1.13) does not commit its count, and with another count a proof can "
               "name a sample by another index";
    return std::nullopt;
}

namespace {

void rowShapes(const std::vector<const TensorView*>& batch, std::vector<SampleRowShape>& shapes)
{
    shapes.resize(batch.size());
    for (std::size_t t = 0; t < batch.size(); ++t) {
        const TensorView& tensor = *batch[t];
        SampleRowShape& shape = shapes[t];
        shape.line = dtypeName(tensor.dtype);
        shape.bytes = dtypeSize(tensor.dtype);
        for (std::size_t d = 1; d < tensor.shape.size(); ++d) {
            shape.line += ' ' + std::to_string(tensor.shape[d]);
            shape.bytes *= static_cast<std::uint64_t>(tensor.shape[d]);
        }
        shape.line += '\n';
    }
}

// zkdv-sample-v1 of one row, the row shapes made by the caller (once per batch when it digests
// every row). The one computation of the digest: the recorder, the reader and the replay all
// come here.
Digest digestRow(const std::vector<const TensorView*>& batch, const std::vector<SampleRowShape>& shapes, std::uint64_t row, Sha256& hasher)
{
    // Checked before the first byte is hashed, so a refusal leaves the caller's context clean.
    for (std::size_t t = 0; t < batch.size(); ++t) {
        const TensorView& tensor = *batch[t];
        const std::uint64_t bytes = shapes[t].bytes;
        if (tensor.shape.empty() || tensor.shape.front() < 0 || row >= static_cast<std::uint64_t>(tensor.shape.front()) ||
            (bytes != 0 && row >= tensor.data.size / bytes))
            throw FormatError(tensor.name + " has no row " + std::to_string(row));
    }
    hasher.update(std::string_view("zkdv-sample-v1\n"));
    for (std::size_t t = 0; t < batch.size(); ++t) {
        hasher.update(std::string_view(shapes[t].line));
        hasher.update(ByteSpan(batch[t]->data.data + row * shapes[t].bytes, static_cast<std::size_t>(shapes[t].bytes)));
    }
    return hasher.finish();
}

}  // namespace

Digest sampleDigest(const std::vector<const TensorView*>& batch, std::uint64_t row)
{
    std::vector<SampleRowShape> shapes;
    rowShapes(batch, shapes);
    Sha256 hasher;
    return digestRow(batch, shapes, row, hasher);
}

std::string SampleMismatch::describe(std::size_t microBatches) const
{
    const std::string where = microBatches > 1 ? "micro-batch " + std::to_string(microBatch) + ", row " : std::string("row ");
    return where + std::to_string(row) + " is not committed sample " + std::to_string(sample) + " of " + std::to_string(leafCount) +
           ": its zkdv-sample-v1 digest " + toHex(rowDigest).substr(0, 16) + "… and recorded proof (" + std::to_string(siblings) +
           (siblings == 1 ? " sibling" : " siblings") + ") do not lead to the dataset root " + toHex(root) +
           (countCommitted ? " with the count " + std::to_string(leafCount) + " (sha256-merkle-v2: the root commits its count)" : std::string());
}

bool BatchSampleCheck::leadsToRoot(const Digest& treeRoot, const DatasetDeclaration& declared)
{
    if (!declared.countCommitted())
        return treeRoot == declared.root;
    if (countedFor_ && countedFor_->root == declared.root && countedFor_->leafCount == declared.leafCount && countedTreeRoot_ == treeRoot)
        return true;
    if (merklePublishedRoot(MerkleAlgorithm::V2, treeRoot, declared.leafCount) != declared.root)
        return false;
    countedFor_ = declared;
    countedTreeRoot_ = treeRoot;
    return true;
}

std::optional<SampleMismatch> BatchSampleCheck::firstMismatch(const TransactionRecord& transaction, const RootRecord& root)
{
    if (!root.dataset)
        return std::nullopt;
    const std::uint8_t* sibling = transaction.sampleProofs ? transaction.sampleProofs->data.data : nullptr;
    const std::uint8_t* const siblingsEnd = sibling ? sibling + transaction.sampleProofs->data.size : nullptr;
    proof_.leafCount = root.dataset->leafCount;
    for (std::size_t m = 0; m < transaction.samples.size(); ++m) {
        const std::vector<const TensorView*>& batch = transaction.microBatches[m].batch;
        rowShapes(batch, rowShapes_);
        for (std::size_t row = 0; row < transaction.samples[m].size(); ++row) {
            proof_.leafIndex = transaction.samples[m][row];
            proof_.siblings.resize(merkleProofLength(proof_.leafIndex, proof_.leafCount));
            // The reader sized the tensor from these indices; a record not read so is refused, not overrun.
            if (static_cast<std::size_t>(siblingsEnd - sibling) < proof_.siblings.size() * tape::kDigestSize)
                throw FormatError("tensor \"samples/proofs\" holds fewer siblings than the named samples' proofs need");
            for (Digest& digest : proof_.siblings) {
                std::copy(sibling, sibling + tape::kDigestSize, digest.begin());
                sibling += tape::kDigestSize;
            }
            const Digest digest = digestRow(batch, rowShapes_, row, hasher_);
            const std::optional<Digest> treeRoot = merkleProofRoot(digest, proof_, hasher_);
            if (!treeRoot || !leadsToRoot(*treeRoot, *root.dataset)) {
                SampleMismatch mismatch;
                mismatch.microBatch = m;
                mismatch.row = row;
                mismatch.sample = proof_.leafIndex;
                mismatch.leafCount = proof_.leafCount;
                mismatch.siblings = proof_.siblings.size();
                mismatch.rowDigest = digest;
                mismatch.root = root.dataset->root;
                mismatch.countCommitted = root.dataset->countCommitted();
                return mismatch;
            }
        }
    }
    return std::nullopt;
}

std::optional<std::string> batchSampleProblem(const TransactionRecord& transaction, const RootRecord& root)
{
    BatchSampleCheck check;
    if (const std::optional<SampleMismatch> mismatch = check.firstMismatch(transaction, root))
        return "the batch is not the committed samples it names: " + mismatch->describe(transaction.microBatches.size());
    return std::nullopt;
}

}  // namespace zkdv
