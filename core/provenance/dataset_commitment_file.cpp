#include "zkdv/provenance/dataset_commitment_file.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "zkdv/provenance/dataset_files.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

DatasetCommitment readDatasetCommitmentFile(const std::string& path)
{
    std::error_code error;
    if (!std::filesystem::is_regular_file(path, error))
        throw IoError("cannot read " + path + ": not a regular file" + (error ? " (" + error.message() + ")" : std::string()));
    const std::uintmax_t size = std::filesystem::file_size(path, error);
    if (error)
        throw IoError("cannot read " + path + ": " + error.message());
    if (size > DatasetCommitment::kMaxDocumentBytes)
        throw FormatError(path + ": larger than the " + std::to_string(DatasetCommitment::kMaxDocumentBytes) + " bytes a commitment may have");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw IoError("cannot open " + path);
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return DatasetCommitment::parse(text.str());
    } catch (const FormatError& problem) {
        throw FormatError(path + ": " + problem.what());
    }
}

DatasetCommitment commitDataset(const std::vector<std::string>& inputs, const std::string& output, bool overwrite, ProgressSink* progress,
                                unsigned threads)
{
    if (inputs.empty())
        throw Error("no file to commit");
    std::error_code error;
    if (!overwrite && std::filesystem::exists(output, error))
        throw Error(output + " exists; it is replaced only when asked (--overwrite, overwrite=True)");
    const std::vector<DatasetFile> files = inputs.size() == 1 && std::filesystem::is_directory(inputs.front(), error)
                                               ? listDatasetFolder(inputs.front(), output)
                                               : listDatasetFiles(inputs);
    if (files.empty())
        throw Error("no file to commit in " + inputs.front());
    const DatasetCommitment commitment = DatasetCommitment::of(hashDatasetFiles(files, progress, threads));
    std::ofstream file(output, std::ios::binary | std::ios::trunc);
    file << toJsonText(commitment.toJson(), 2) << '\n';
    file.close();
    if (!file)
        throw IoError("cannot write " + output);
    return commitment;
}

DatasetVerification verifyDataset(const std::string& path, const std::optional<std::string>& folder, bool ignoreExtra, ProgressSink* progress,
                                  unsigned threads)
{
    DatasetVerification verification;
    verification.commitment = readDatasetCommitmentFile(path);
    verification.treeRoot = verification.commitment.computeTreeRoot();
    verification.computedRoot =
        merklePublishedRoot(verification.commitment.algorithm, verification.treeRoot, verification.commitment.files.size());
    if (folder && verification.commitment.unit != DatasetCommitment::kUnit)
        throw FormatError(path + " commits samples, not files: a tape's batches are checked against it (zkdv-audit replay), not a folder");
    if (folder)
        verification.folder = checkDatasetFolder(verification.commitment, *folder, path, ignoreExtra, progress, threads);
    return verification;
}

}  // namespace zkdv
