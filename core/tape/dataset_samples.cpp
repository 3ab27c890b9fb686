#include "zkdv/tape/dataset_samples.h"

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

Digest sampleDigest(const std::vector<const TensorView*>& batch, std::uint64_t row)
{
    Sha256 hasher;
    hasher.update(std::string_view("zkdv-sample-v1\n"));
    for (const TensorView* tensor : batch) {
        if (tensor->shape.empty() || tensor->shape.front() < 0 || row >= static_cast<std::uint64_t>(tensor->shape.front()))
            throw FormatError(tensor->name + " has no row " + std::to_string(row));
        std::string line(dtypeName(tensor->dtype));
        std::uint64_t rowBytes = dtypeSize(tensor->dtype);
        for (std::size_t d = 1; d < tensor->shape.size(); ++d) {
            line += ' ' + std::to_string(tensor->shape[d]);
            rowBytes *= static_cast<std::uint64_t>(tensor->shape[d]);
        }
        line += '\n';
        hasher.update(std::string_view(line));
        hasher.update(ByteSpan(tensor->data.data + row * rowBytes, static_cast<std::size_t>(rowBytes)));
    }
    return hasher.finish();
}

std::optional<std::string> batchSampleProblem(const TransactionRecord& transaction, const RootRecord& root)
{
    if (!root.dataset)
        return std::nullopt;
    const std::uint8_t* sibling = transaction.sampleProofs ? transaction.sampleProofs->data.data : nullptr;
    for (std::size_t m = 0; m < transaction.samples.size(); ++m) {
        const std::string where = transaction.microBatches.size() > 1 ? "micro-batch " + std::to_string(m) + ", row " : std::string("row ");
        for (std::size_t row = 0; row < transaction.samples[m].size(); ++row) {
            MerkleProof proof;
            proof.leafIndex = transaction.samples[m][row];
            proof.leafCount = root.dataset->leafCount;
            proof.siblings.resize(merkleProofLength(proof.leafIndex, proof.leafCount));
            for (Digest& digest : proof.siblings) {
                std::copy(sibling, sibling + tape::kDigestSize, digest.begin());
                sibling += tape::kDigestSize;
            }
            if (!verifyMerkleProof(root.dataset->root, sampleDigest(transaction.microBatches[m].batch, row), proof))
                return "the batch is not the committed samples it names: " + where + std::to_string(row) + " is not committed sample " +
                       std::to_string(proof.leafIndex) + " (its digest and proof do not lead to the dataset root " + toHex(root.dataset->root) + ")";
        }
    }
    return std::nullopt;
}

}  // namespace zkdv
