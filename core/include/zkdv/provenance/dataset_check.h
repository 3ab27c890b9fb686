#pragma once
// A dataset commitment checked against itself (its root recomputed from its leaves) and
// against a folder (every file rehashed): what `dataset verify` reports.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/provenance/dataset_commitment.h"
#include "zkdv/util/progress.h"

namespace zkdv {

enum class DatasetFinding {
    Changed,  // on disk, with another size or digest than committed
    Missing,  // committed, not on disk
    Extra,    // on disk, not committed
};
std::string_view datasetFindingName(DatasetFinding finding);  // "changed", "missing", "extra"

struct DatasetDifference {
    std::string path;
    DatasetFinding finding = DatasetFinding::Changed;
    std::string detail;  // for a change: the committed and the found size and digest
};

struct DatasetFolderCheck {
    std::uint64_t filesHashed = 0;
    std::uint64_t bytesHashed = 0;
    std::vector<DatasetDifference> differences;  // in commitment order of their paths
};

// Rehashes every committed file found under `folder` (dataset_files.h) and lists the files
// that differ, are missing or are extra (those last only unless `ignoreExtra`). `exclude`
// is left out of the folder's files (the commitment itself, when it lies there).
DatasetFolderCheck checkDatasetFolder(const DatasetCommitment& commitment, const std::string& folder, const std::string& exclude,
                                      bool ignoreExtra, ProgressSink* progress = nullptr, unsigned threads = 0);

}  // namespace zkdv
