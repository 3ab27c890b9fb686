#include "zkdv/provenance/dataset_commitment.h"

#include <algorithm>
#include <cstring>

#include "zkdv/util/merkle_tree.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/utf8.h"

namespace zkdv {

namespace {

using nlohmann::json;

constexpr std::size_t kMaxPathBytes = 4096;

[[noreturn]] void refuse(const std::string& where, const std::string& what)
{
    throw FormatError("dataset commitment: " + where + ": " + what);
}

// A short rendering of a value from the document for a message, cut so that a hostile
// document cannot make the message huge.
std::string shown(const json& value)
{
    std::string text = toJsonText(value);
    if (text.size() > 80)
        text = text.substr(0, 77) + "...";
    return text;
}

const json& member(const json& object, const char* name, const std::string& where)
{
    auto it = object.find(name);
    if (it == object.end())
        refuse(where, std::string("missing member \"") + name + "\"");
    return *it;
}

std::string stringMember(const json& object, const char* name, const std::string& where)
{
    const json& value = member(object, name, where);
    if (!value.is_string())
        refuse(where + "." + name, "expected a string, found " + shown(value));
    return value.get<std::string>();
}

std::uint64_t unsignedMember(const json& object, const char* name, const std::string& where, std::uint64_t maximum)
{
    const json& value = member(object, name, where);
    if (!value.is_number_unsigned())
        refuse(where + "." + name, "expected a non-negative integer, found " + shown(value));
    const std::uint64_t number = value.get<std::uint64_t>();
    if (number > maximum)
        refuse(where + "." + name, std::to_string(number) + " is more than the limit of " + std::to_string(maximum));
    return number;
}

Digest digestMember(const json& object, const char* name, const std::string& where)
{
    const std::string text = stringMember(object, name, where);
    std::optional<Digest> digest = digestFromHex(text);
    if (!digest)
        refuse(where + "." + name, "expected 64 hex digits, found " + shown(json(text)));
    return *digest;
}

}  // namespace

bool commitmentPathLess(std::string_view a, std::string_view b)
{
    const int order = std::memcmp(a.data(), b.data(), std::min(a.size(), b.size()));
    return order != 0 ? order < 0 : a.size() < b.size();
}

std::string committedPathProblem(std::string_view path)
{
    if (path.empty())
        return "the path is empty";
    if (path.size() > kMaxPathBytes)
        return "the path is longer than " + std::to_string(kMaxPathBytes) + " bytes";
    if (path.find('\0') != std::string_view::npos)
        return "the path holds a NUL byte";
    if (!isValidUtf8(path))
        return "the path is not valid UTF-8";
    if (path.front() == '/')
        return "the path is absolute";
    std::size_t begin = 0;
    while (begin <= path.size()) {
        std::size_t end = path.find('/', begin);
        if (end == std::string_view::npos)
            end = path.size();
        const std::string_view component = path.substr(begin, end - begin);
        if (component.empty())
            return "the path has an empty component";
        if (component == "." || component == "..")
            return "the path has a \"" + std::string(component) + "\" component";
        begin = end + 1;
    }
    return {};
}

Digest DatasetCommitment::computeTreeRoot() const
{
    std::vector<Digest> digests;
    digests.reserve(files.size());
    for (const CommittedFile& file : files)
        digests.push_back(file.sha256);
    return MerkleTree(digests).root();
}

Digest DatasetCommitment::computeRoot() const { return merklePublishedRoot(algorithm, computeTreeRoot(), files.size()); }

std::uint64_t DatasetCommitment::totalBytes() const
{
    std::uint64_t total = 0;
    for (const CommittedFile& file : files)
        total += file.size;
    return total;
}

DatasetCommitment DatasetCommitment::of(std::vector<CommittedFile> files)
{
    if (files.empty())
        throw Error("a dataset commitment needs at least one file");
    for (const CommittedFile& file : files) {
        const std::string problem = committedPathProblem(file.path);
        if (!problem.empty())
            throw Error("cannot commit \"" + toValidUtf8(file.path) + "\": " + problem);
    }
    std::sort(files.begin(), files.end(), [](const CommittedFile& a, const CommittedFile& b) { return commitmentPathLess(a.path, b.path); });
    for (std::size_t i = 1; i < files.size(); ++i)
        if (files[i].path == files[i - 1].path)
            throw Error("\"" + files[i].path + "\" is given twice");
    DatasetCommitment commitment;
    commitment.files = std::move(files);
    commitment.root = commitment.computeRoot();
    return commitment;
}

std::string DatasetCommitment::samplePath(std::uint64_t index)
{
    std::string digits = std::to_string(index);
    return "sample/" + std::string(digits.size() < 12 ? 12 - digits.size() : 0, '0') + digits;
}

DatasetCommitment DatasetCommitment::ofSamples(const std::vector<std::pair<std::uint64_t, Digest>>& samples)
{
    if (samples.empty())
        throw Error("a dataset commitment needs at least one sample");
    if (samples.size() > kMaxLeaves)
        throw Error("a dataset commitment holds at most " + std::to_string(kMaxLeaves) + " samples");
    DatasetCommitment commitment;
    commitment.unit = std::string(kSampleUnit);
    commitment.files.reserve(samples.size());
    for (std::size_t i = 0; i < samples.size(); ++i)
        commitment.files.push_back(CommittedFile{samplePath(i), samples[i].first, samples[i].second});
    commitment.root = commitment.computeRoot();
    return commitment;
}

nlohmann::ordered_json DatasetCommitment::toJson() const
{
    nlohmann::ordered_json leaves = nlohmann::ordered_json::array();
    for (const CommittedFile& file : files)
        leaves.push_back({{"path", file.path}, {"size", file.size}, {"sha256", toHex(file.sha256)}});
    return nlohmann::ordered_json{{"format", kFormat},
            {"version", kVersion},
            {"algorithm", merkleAlgorithmName(algorithm)},
            {"unit", unit},
            {"leaf_count", files.size()},
            {"total_bytes", totalBytes()},
            {"root", toHex(root)},
            {"leaves", std::move(leaves)}};
}

DatasetCommitment DatasetCommitment::parse(std::string_view text)
{
    if (text.size() > kMaxDocumentBytes)
        throw FormatError("dataset commitment: the document is larger than " + std::to_string(kMaxDocumentBytes) + " bytes");
    const json document = parseUntrustedJson(text, "dataset commitment");
    if (!document.is_object())
        refuse("the document", "expected a JSON object, found " + shown(document));
    const std::string format = stringMember(document, "format", "the document");
    if (format != kFormat)
        refuse("format", "expected \"" + std::string(kFormat) + "\", found " + shown(json(format)));
    const json& version = member(document, "version", "the document");
    if (version != json(kVersion))
        refuse("version", "this build reads version " + std::to_string(kVersion) + ", found " + shown(version));
    const std::string algorithm = stringMember(document, "algorithm", "the document");
    const std::optional<MerkleAlgorithm> known = merkleAlgorithmNamed(algorithm);
    if (!known)
        refuse("algorithm", "expected \"" + std::string(merkleAlgorithmName(MerkleAlgorithm::V2)) + "\" or \"" +
                                std::string(merkleAlgorithmName(MerkleAlgorithm::V1)) + "\", found " + shown(json(algorithm)));
    const std::string unit = stringMember(document, "unit", "the document");
    if (unit != kUnit && unit != kSampleUnit)
        refuse("unit", "expected \"" + std::string(kUnit) + "\" or \"" + std::string(kSampleUnit) + "\", found " + shown(json(unit)));
    const std::uint64_t leafCount = unsignedMember(document, "leaf_count", "the document", kMaxLeaves);
    const std::uint64_t totalBytes = unsignedMember(document, "total_bytes", "the document", UINT64_MAX);
    DatasetCommitment commitment;
    commitment.algorithm = *known;
    commitment.unit = unit;
    commitment.root = digestMember(document, "root", "the document");
    const json& leaves = member(document, "leaves", "the document");
    if (!leaves.is_array())
        refuse("leaves", "expected an array, found " + shown(leaves));
    if (leaves.size() != leafCount)
        refuse("leaf_count", "states " + std::to_string(leafCount) + " leaves, the document lists " + std::to_string(leaves.size()));
    if (leafCount == 0)
        refuse("leaves", "a commitment holds at least one leaf");
    commitment.files.reserve(leaves.size());
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < leaves.size(); ++i) {
        const std::string where = "leaves[" + std::to_string(i) + "]";
        const json& leaf = leaves[i];
        if (!leaf.is_object())
            refuse(where, "expected an object, found " + shown(leaf));
        CommittedFile file;
        file.path = stringMember(leaf, "path", where);
        const std::string problem = committedPathProblem(file.path);
        if (!problem.empty())
            refuse(where + ".path", problem + ": " + shown(json(file.path)));
        file.size = unsignedMember(leaf, "size", where, UINT64_MAX);
        file.sha256 = digestMember(leaf, "sha256", where);
        if (!commitment.files.empty() && !commitmentPathLess(commitment.files.back().path, file.path))
            refuse(where + ".path", shown(json(file.path)) + (commitment.files.back().path == file.path ? " repeats" : " is out of order") +
                                        " (paths are sorted byte by byte, each once): it follows " + shown(json(commitment.files.back().path)));
        if (file.size > UINT64_MAX - sum)
            refuse(where + ".size", "the sizes add up to more than 2^64 - 1");
        sum += file.size;
        commitment.files.push_back(std::move(file));
    }
    if (sum != totalBytes)
        refuse("total_bytes", "states " + std::to_string(totalBytes) + ", the leaves' sizes add up to " + std::to_string(sum));
    return commitment;
}

}  // namespace zkdv
