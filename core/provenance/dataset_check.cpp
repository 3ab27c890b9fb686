#include "zkdv/provenance/dataset_check.h"

#include <algorithm>

#include "zkdv/provenance/dataset_files.h"

namespace zkdv {

std::string_view datasetFindingName(DatasetFinding finding)
{
    switch (finding) {
    case DatasetFinding::Changed:
        return "changed";
    case DatasetFinding::Missing:
        return "missing";
    case DatasetFinding::Extra:
        return "extra";
    }
    return "changed";
}

DatasetFolderCheck checkDatasetFolder(const DatasetCommitment& commitment, const std::string& folder, const std::string& exclude,
                                      bool ignoreExtra, ProgressSink* progress, unsigned threads)
{
    const std::vector<DatasetFile> onDisk = listDatasetFolder(folder, exclude);
    // Both lists are in commitment order: one merge pass pairs them.
    std::vector<DatasetFile> toHash;
    std::vector<const CommittedFile*> committedOfHashed;
    DatasetFolderCheck check;
    std::size_t c = 0, d = 0;
    const auto& committed = commitment.files;
    while (c < committed.size() || d < onDisk.size()) {
        if (d == onDisk.size() || (c < committed.size() && commitmentPathLess(committed[c].path, onDisk[d].path))) {
            check.differences.push_back({committed[c].path, DatasetFinding::Missing, "committed, not in " + folder});
            ++c;
        } else if (c == committed.size() || commitmentPathLess(onDisk[d].path, committed[c].path)) {
            if (!ignoreExtra)
                check.differences.push_back({onDisk[d].path, DatasetFinding::Extra, "in " + folder + ", not committed"});
            ++d;
        } else {
            toHash.push_back(onDisk[d]);
            committedOfHashed.push_back(&committed[c]);
            ++c;
            ++d;
        }
    }
    const std::vector<CommittedFile> hashed = hashDatasetFiles(toHash, progress, threads);
    for (std::size_t i = 0; i < hashed.size(); ++i) {
        const CommittedFile& expected = *committedOfHashed[i];
        const CommittedFile& found = hashed[i];
        check.bytesHashed += found.size;
        if (found.size != expected.size || found.sha256 != expected.sha256)
            check.differences.push_back({found.path, DatasetFinding::Changed,
                                         "committed " + std::to_string(expected.size) + " bytes, sha256 " + toHex(expected.sha256) + "; found " +
                                             std::to_string(found.size) + " bytes, sha256 " + toHex(found.sha256)});
    }
    check.filesHashed = hashed.size();
    std::stable_sort(check.differences.begin(), check.differences.end(),
                     [](const DatasetDifference& a, const DatasetDifference& b) { return commitmentPathLess(a.path, b.path); });
    return check;
}

}  // namespace zkdv
