#pragma once
// A tape's links to the world checked and kept in its case: the dataset commitment against
// the data, snapshot 0 against a published starting checkpoint, the final state against the
// shipped model (docs/dataset-commitment.md, docs/weight-matching.md), each outcome stored
// (zkdv/store/provenance_checks.h) and said in the words the workstation shows.

#include <cstdint>
#include <optional>
#include <string>

#include "zkdv/store/provenance_checks.h"
#include "zkdv/util/progress.h"

namespace zkdv {

class CaseStore;

// Checks the commitment at `commitment` (its root against its leaves) and, given `folder`,
// the data there against it, and stores the outcome with tape `tapeId`. Throws what
// verifyDataset throws (nothing is stored then), OperationCancelled when `progress` asks.
ProvenanceCheck checkTapeDataset(CaseStore& store, std::int64_t tapeId, const std::string& commitment, const std::optional<std::string>& folder,
                                 ProgressSink* progress = nullptr);

// Matches the model at `model` (a .safetensors file or a folder of shards) with the tape's
// snapshot 0 (`StartCheckpoint`) or final state (`FinalModel`) and stores the outcome.
// Throws WeightMatchUnavailable when the tape holds no such state, IoError / FormatError
// when the tape or the model cannot be read (nothing is stored then), Error for the kind
// `Dataset`.
ProvenanceCheck checkTapeWeights(CaseStore& store, std::int64_t tapeId, const std::string& model, ProvenanceKind kind,
                                 ProgressSink* progress = nullptr);

// What is checked, for a label: "Dataset", "Start checkpoint", "Final model".
std::string provenanceKindLabel(ProvenanceKind kind);
// The check in plain words: "Final state matches model.safetensors (sha256 1a2b3c4d…)",
// "Snapshot 0 differs from start.safetensors (sha256 …): 2 tensors differ: fc.weight, fc.bias";
// nullopt: "not checked".
std::string provenanceCheckText(const std::optional<ProvenanceCheck>& check);

}  // namespace zkdv
