#pragma once
// Whether a model's weights are a state a tape records: snapshot k (snapshot 0: the starting
// point a tape may claim is a published checkpoint), or the final state (the model that was
// shipped). What `zkdv-audit match-weights` runs.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/provenance/model_checkpoint.h"
#include "zkdv/provenance/name_mapping.h"
#include "zkdv/provenance/weight_comparison.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/progress.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

// The tape cannot say what the model should equal (no such snapshot, a final state it does
// not hold and its digest cannot be computed from weights alone, a corrupt tape): not a
// verdict on the model. what() says why.
class WeightMatchUnavailable : public Error {
public:
    using Error::Error;
};

struct WeightMatchRequest {
    bool final = false;            // the final state; otherwise snapshot `snapshot`
    std::uint64_t snapshot = 0;    // before_transaction of the snapshot
    bool requireBuffers = false;   // a buffer the model lacks fails the match
    ProgressSink* progress = nullptr;
};

enum class WeightReference {
    Snapshot,          // a snapshot the tape holds, compared tensor by tensor
    FinalStateDigest,  // the state digest the last transaction recorded, over the model's parameters
};
std::string_view weightReferenceName(WeightReference reference);  // "snapshot", "final-state-digest"

struct WeightMatch {
    WeightReference reference = WeightReference::Snapshot;
    std::uint64_t beforeTransaction = 0;  // the state after this many transactions
    bool finalState = false;              // it is the tape's final state
    std::string tapeStatus;               // "sealed", "unsealed", "truncated"
    std::uint64_t transactions = 0;
    NameMapping mapping;
    std::vector<WeightComparison> tensors;  // layout order, then the model's extras
    // FinalStateDigest: the recorded digest and the one of the model's parameters (absent
    // when a parameter's name, dtype or shape already differs).
    std::optional<Digest> recordedDigest;
    std::optional<Digest> modelDigest;

    bool equal() const;
    std::uint64_t failing() const;  // tensors that count against the match
};

// Reads the tape at `tapePath` (scanTape: every record checked) and compares `model` with
// the state `request` names. Throws WeightMatchUnavailable when the tape holds no such state
// (it names the snapshots there are, or why the final state cannot be told), IoError /
// NotATapeError when the tape cannot be read, Error when the names match ambiguously.
// --final reads the tape twice when the final state is a snapshot: once to learn where
// the final state is, once to compare it.
WeightMatch matchWeights(const std::string& tapePath, const ModelCheckpoint& model, const WeightMatchRequest& request);

}  // namespace zkdv
