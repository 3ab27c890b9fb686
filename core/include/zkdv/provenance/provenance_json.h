#pragma once
// A dataset commitment, its check and a weight match as JSON (docs/cli-json.md): the one
// description `zkdv-audit dataset|match-weights --json` prints and zkdv.provenance returns.

#include <string>

#include <nlohmann/json.hpp>

#include "zkdv/provenance/dataset_commitment_file.h"
#include "zkdv/provenance/weight_match.h"

namespace zkdv {

// {"output", "algorithm", "leaf_count", "total_bytes", "root"}.
nlohmann::json datasetCommitmentJson(const DatasetCommitment& commitment, const std::string& output);
// {"commitment", "ok", "algorithm", "leaf_count", "stated_root", "computed_root", "root_matches", "folder",
// "files_hashed", "differences": [{"path", "finding", "detail"}] or null without a folder}.
nlohmann::json datasetVerificationJson(const DatasetVerification& verification, const std::string& path, const std::string& folder);
// {"tape", "model", "model_files", "equal", …, "tensors": [{"tape_name", "finding", …}]}.
nlohmann::json weightMatchJson(const WeightMatch& match, const std::string& tape, const std::string& model, const ModelCheckpoint& checkpoint);

}  // namespace zkdv
