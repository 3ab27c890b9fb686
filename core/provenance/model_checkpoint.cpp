#include "zkdv/provenance/model_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kIndexName = "model.safetensors.index.json";
constexpr std::uintmax_t kMaxIndexBytes = 256u << 20;

std::string readIndex(const fs::path& path)
{
    std::error_code error;
    const std::uintmax_t size = fs::file_size(path, error);
    if (error)
        throw IoError("cannot read " + path.string() + ": " + error.message());
    if (size > kMaxIndexBytes)
        throw FormatError(path.string() + ": the index is larger than " + std::to_string(kMaxIndexBytes) + " bytes");
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof())
        throw IoError("cannot read " + path.string());
    return text.str();
}

// The index's weight_map: tensor name to shard file name.
std::map<std::string, std::string> weightMap(const fs::path& indexPath)
{
    const std::string where = indexPath.string();
    const nlohmann::json index = parseUntrustedJson(readIndex(indexPath), where);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
        throw FormatError(where + ": expected an object with a \"weight_map\" object");
    std::map<std::string, std::string> map;
    for (const auto& [name, file] : index["weight_map"].items()) {
        if (!file.is_string())
            throw FormatError(where + ": weight_map[\"" + name + "\"]: expected a file name, found " + toJsonText(file).substr(0, 80));
        const std::string shard = file.get<std::string>();
        if (shard.empty() || shard.find('/') != std::string::npos || shard.find('\\') != std::string::npos || shard == "." || shard == "..")
            throw FormatError(where + ": weight_map[\"" + name + "\"]: \"" + shard + "\" is not a file name in the folder");
        map.emplace(name, shard);
    }
    if (map.empty())
        throw FormatError(where + ": the weight_map names no tensor");
    return map;
}

}  // namespace

void ModelCheckpoint::addFile(const std::string& path, const std::string& shown)
{
    auto map = std::make_unique<MappedFile>(path);
    auto view = std::make_unique<SafetensorsView>();
    try {
        *view = SafetensorsView::parse(map->bytes());
    } catch (const FormatError& error) {
        throw FormatError(shown + ": not a valid safetensors file: " + error.what());
    }
    files_.push_back(shown);
    for (const TensorView& tensor : view->tensors())
        tensors_.push_back({tensor.name, Tensor{&tensor, shown}});
    maps_.push_back(std::move(map));
    views_.push_back(std::move(view));
}

std::unique_ptr<ModelCheckpoint> ModelCheckpoint::open(const std::string& path)
{
    std::unique_ptr<ModelCheckpoint> checkpoint(new ModelCheckpoint());
    std::error_code error;
    std::map<std::string, std::string> index;  // from model.safetensors.index.json, when there is one
    if (!fs::is_directory(path, error)) {
        checkpoint->addFile(path, path);
    } else {
        const fs::path folder(path);
        const fs::path indexPath = folder / std::string(kIndexName);
        if (fs::exists(indexPath, error)) {
            index = weightMap(indexPath);
            checkpoint->usedIndex_ = true;
            std::set<std::string> shards;
            for (const auto& entry : index)
                shards.insert(entry.second);
            for (const std::string& shard : shards)
                checkpoint->addFile((folder / shard).string(), shard);
        } else {
            std::vector<std::string> shards;
            for (fs::directory_iterator it(folder, error); !error && it != fs::directory_iterator(); it.increment(error)) {
                std::error_code statError;
                if (it->path().extension() == ".safetensors" && it->is_regular_file(statError))
                    shards.push_back(it->path().filename().string());
            }
            if (error)
                throw IoError("cannot read the folder " + path + ": " + error.message());
            if (shards.empty())
                throw Error(path + " holds no .safetensors file");
            std::sort(shards.begin(), shards.end());
            for (const std::string& shard : shards)
                checkpoint->addFile((folder / shard).string(), shard);
        }
        if (checkpoint->usedIndex_) {
            for (const auto& [name, tensor] : checkpoint->tensors_) {
                auto it = index.find(name);
                if (it == index.end())
                    throw FormatError(std::string(kIndexName) + ": tensor \"" + name + "\" of " + tensor.file + " is not in the weight_map");
                if (it->second != tensor.file)
                    throw FormatError(std::string(kIndexName) + ": tensor \"" + name + "\" is in " + tensor.file + ", the weight_map says " + it->second);
            }
        }
    }
    auto& tensors = checkpoint->tensors_;
    std::stable_sort(tensors.begin(), tensors.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (std::size_t i = 1; i < tensors.size(); ++i)
        if (tensors[i].first == tensors[i - 1].first)
            throw Error("tensor \"" + tensors[i].first + "\" is in both " + tensors[i - 1].second.file + " and " + tensors[i].second.file);
    if (checkpoint->usedIndex_) {
        std::set<std::string> present;
        for (const auto& entry : tensors)
            present.insert(entry.first);
        for (const auto& [name, shard] : index)
            if (!present.count(name))
                throw FormatError(std::string(kIndexName) + ": tensor \"" + name + "\" is not in " + shard);
    }
    for (const auto& entry : tensors)
        checkpoint->names_.push_back(entry.first);
    return checkpoint;
}

const ModelCheckpoint::Tensor* ModelCheckpoint::find(std::string_view name) const
{
    auto it = std::lower_bound(tensors_.begin(), tensors_.end(), name, [](const auto& entry, std::string_view n) { return entry.first < n; });
    return it != tensors_.end() && it->first == name ? &it->second : nullptr;
}

}  // namespace zkdv
