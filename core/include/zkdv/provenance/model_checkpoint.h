#pragma once
// A published or deployed model's weights read from safetensors: one file, or a folder of
// shards as Hugging Face writes them (with or without model.safetensors.index.json). The
// files are mapped, not copied; every tensor is checked as a tape's blobs are.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/tape/safetensors.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

class ModelCheckpoint {
public:
    struct Tensor {
        const TensorView* view = nullptr;  // into the mapped file
        std::string file;                  // the shard that holds it
    };

    // Opens `path`, a .safetensors file or a folder. A folder with
    // model.safetensors.index.json reads the shards its weight_map names (file names in the
    // folder, no paths), and each tensor must be in the shard the index says and every
    // tensor of those shards in the index; a folder without one reads every *.safetensors
    // file in it (not below it). Throws IoError when a file cannot be read, FormatError
    // naming the file (and byte offset) when one is not valid safetensors or the index is
    // not a valid index, Error when a tensor name repeats across shards or nothing is found.
    static std::unique_ptr<ModelCheckpoint> open(const std::string& path);

    // Sorted by name.
    const std::vector<std::string>& names() const { return names_; }
    // nullptr when absent.
    const Tensor* find(std::string_view name) const;
    const std::vector<std::string>& files() const { return files_; }
    bool usedIndex() const { return usedIndex_; }

private:
    ModelCheckpoint() = default;
    void addFile(const std::string& path, const std::string& shown);

    std::vector<std::unique_ptr<MappedFile>> maps_;
    std::vector<std::unique_ptr<SafetensorsView>> views_;
    std::vector<std::string> files_;
    std::vector<std::string> names_;
    std::vector<std::pair<std::string, Tensor>> tensors_;  // sorted by name
    bool usedIndex_ = false;
};

}  // namespace zkdv
