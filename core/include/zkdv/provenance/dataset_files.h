#pragma once
// The files of a dataset as a commitment names them, and their SHA-256 digests computed on
// several threads: what `dataset commit` and `dataset verify FOLDER` read from disk.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/provenance/dataset_commitment.h"
#include "zkdv/util/progress.h"

namespace zkdv {

// One file to hash: the path the commitment records and where it is on disk.
struct DatasetFile {
    std::string path;  // committed path (relative, '/'-separated)
    std::string file;  // on disk
    std::uint64_t size = 0;  // when listed; the hash reads what is there
};

// Every regular file under `folder` (symbolic links to files followed, to folders not
// entered), its path relative to `folder`, in commitment order. `exclude`, when it names a
// file under `folder` (the commitment being written, or read), is left out. Throws IoError
// naming the path when the folder or a subfolder cannot be read, Error when a file's name
// cannot be a committed path (not UTF-8).
std::vector<DatasetFile> listDatasetFolder(const std::string& folder, const std::string& exclude = {});

// The files given one by one, each recorded under its path as given, made lexically normal
// ("./a//b" is "a/b"). Throws Error when a path is absolute or climbs out with "..", or is
// not a regular file (IoError when it cannot be read).
std::vector<DatasetFile> listDatasetFiles(const std::vector<std::string>& files);

// Hashes the files on `threads` threads (0: the machine's, at most 8), reporting bytes to
// `progress` from the calling thread (phase "hashing"), and returns them in the given order.
// Throws IoError naming the file that cannot be read, OperationCancelled when the sink asks
// to stop.
std::vector<CommittedFile> hashDatasetFiles(const std::vector<DatasetFile>& files, ProgressSink* progress = nullptr, unsigned threads = 0);

}  // namespace zkdv
