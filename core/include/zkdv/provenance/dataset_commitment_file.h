#pragma once
// A dataset commitment's document on disk, and a dataset committed or checked from its
// files: what `zkdv-audit dataset`, zkdv.provenance and the workstation all run.

#include <optional>
#include <string>
#include <vector>

#include "zkdv/provenance/dataset_check.h"
#include "zkdv/provenance/dataset_commitment.h"
#include "zkdv/util/progress.h"

namespace zkdv {

// Reads and parses the document at `path`. Its size is checked against
// DatasetCommitment::kMaxDocumentBytes before anything is read. Throws IoError when it
// cannot be read, FormatError starting with the path when it is not a valid commitment.
DatasetCommitment readDatasetCommitmentFile(const std::string& path);

// Hashes `inputs` (one folder: every file under it, `output` left out; otherwise the files
// as given; dataset_files.h) on `threads` threads and writes their commitment to `output`,
// refusing to replace an existing file unless `overwrite`. Throws Error when there is no
// file to commit or `output` exists, IoError when a file cannot be read or written,
// OperationCancelled when `progress` asks to stop (nothing is written then).
DatasetCommitment commitDataset(const std::vector<std::string>& inputs, const std::string& output, bool overwrite,
                                ProgressSink* progress = nullptr, unsigned threads = 0);

// A commitment checked against itself and, when given, against its folder.
struct DatasetVerification {
    DatasetCommitment commitment;
    Digest treeRoot{};      // the leaves' tree root (RFC 6962), what a v2 root counts
    Digest computedRoot{};  // the root the document's algorithm gives its leaves
    std::optional<DatasetFolderCheck> folder;

    bool rootMatches() const { return computedRoot == commitment.root; }
    bool ok() const { return rootMatches() && (!folder || folder->differences.empty()); }
};

// Reads the commitment at `path`, recomputes its root and, given `folder`, rehashes the
// files there (leaving the document out when it lies in the folder).
DatasetVerification verifyDataset(const std::string& path, const std::optional<std::string>& folder, bool ignoreExtra,
                                  ProgressSink* progress = nullptr, unsigned threads = 0);

}  // namespace zkdv
