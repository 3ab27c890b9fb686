#include "zkdv/provenance/provenance_json.h"

#include <cmath>

namespace zkdv {

namespace {

nlohmann::json shapeJson(const std::vector<std::int64_t>& shape, bool present)
{
    return present ? nlohmann::json(shape) : nlohmann::json(nullptr);
}

nlohmann::json comparisonJson(const WeightComparison& c)
{
    const bool values = c.finding == WeightFinding::ValuesDiffer;
    auto orNull = [](const std::string& text) { return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text); };
    return {{"tape_name", orNull(c.tapeName)},
            {"model_name", orNull(c.modelName)},
            {"role", orNull(c.role)},
            {"finding", weightFindingName(c.finding)},
            {"fails", c.fails},
            {"tape_dtype", orNull(c.tapeDtype)},
            {"model_dtype", orNull(c.modelDtype)},
            {"tape_shape", shapeJson(c.tapeShape, !c.tapeDtype.empty())},
            {"model_shape", shapeJson(c.modelShape, !c.modelDtype.empty())},
            {"elements", c.elements},
            {"differing_elements", c.differingElements},
            {"max_abs_diff", values && std::isfinite(c.maxAbsDiff) ? nlohmann::json(c.maxAbsDiff) : nlohmann::json(nullptr)},
            {"non_finite_differences", c.nonFiniteDifferences}};
}

}  // namespace

nlohmann::json datasetCommitmentJson(const DatasetCommitment& commitment, const std::string& output)
{
    return {{"output", output},
            {"algorithm", merkleAlgorithmName(commitment.algorithm)},
            {"leaf_count", commitment.files.size()},
            {"total_bytes", commitment.totalBytes()},
            {"root", toHex(commitment.root)}};
}

nlohmann::json datasetVerificationJson(const DatasetVerification& verification, const std::string& path, const std::string& folder)
{
    nlohmann::json differences = nullptr;
    if (verification.folder) {
        differences = nlohmann::json::array();
        for (const DatasetDifference& difference : verification.folder->differences)
            differences.push_back({{"path", difference.path}, {"finding", datasetFindingName(difference.finding)}, {"detail", difference.detail}});
    }
    const bool checkedFolder = verification.folder.has_value();
    return {{"commitment", path},
            {"ok", verification.ok()},
            {"algorithm", merkleAlgorithmName(verification.commitment.algorithm)},
            {"leaf_count", verification.commitment.files.size()},
            {"stated_root", toHex(verification.commitment.root)},
            {"computed_root", toHex(verification.computedRoot)},
            {"root_matches", verification.rootMatches()},
            {"folder", checkedFolder ? nlohmann::json(folder) : nlohmann::json(nullptr)},
            {"files_hashed", checkedFolder ? nlohmann::json(verification.folder->filesHashed) : nlohmann::json(nullptr)},
            {"differences", differences}};
}

nlohmann::json weightMatchJson(const WeightMatch& match, const std::string& tape, const std::string& model, const ModelCheckpoint& checkpoint)
{
    nlohmann::json tensors = nlohmann::json::array();
    for (const WeightComparison& c : match.tensors)
        tensors.push_back(comparisonJson(c));
    auto digest = [](const std::optional<Digest>& d) { return d ? nlohmann::json(toHex(*d)) : nlohmann::json(nullptr); };
    return {{"tape", tape},
            {"model", model},
            {"model_files", checkpoint.files()},
            {"equal", match.equal()},
            {"tape_status", match.tapeStatus},
            {"transactions", match.transactions},
            {"reference", weightReferenceName(match.reference)},
            {"before_transaction", match.beforeTransaction},
            {"final_state", match.finalState},
            {"name_mapping", {{"kind", match.mapping.kind == NameMapping::Kind::Same              ? "same"
                                       : match.mapping.kind == NameMapping::Kind::ModelAddsPrefix ? "model-adds-prefix"
                                                                                                    : "model-drops-prefix"},
                              {"prefix", match.mapping.prefix},
                              {"description", match.mapping.describe()}}},
            {"failing", match.failing()},
            {"recorded_state_digest", digest(match.recordedDigest)},
            {"model_state_digest", digest(match.modelDigest)},
            {"tensors", tensors}};
}

}  // namespace zkdv
