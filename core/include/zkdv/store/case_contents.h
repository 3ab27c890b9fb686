#pragma once
// What reports and the CLI show of a case besides its tapes and runs: the model layout and
// optimizer groups of a tape, its recorded losses, how many transactions carry sampled
// checks, and a run's verdicts beside the training values. The SQL stays in core/store.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/unverifiable_cause.h"
#include "zkdv/audit/verdict.h"
#include "zkdv/tape/sampling_plausibility.h"

namespace zkdv {

class Database;

// One tensor of a tape's model, as its root record declares it.
struct StoredTensor {
    bool buffer = false;  // false: a parameter
    std::string name;
    std::string dtype;
    std::string shapeJson;  // "[3, 4]"
};

// Parameters first, then buffers, each in the model's order.
std::vector<StoredTensor> loadModelLayout(Database& db, std::int64_t tapeId);
// The options JSON of each optimizer group, in group order.
std::vector<std::string> loadOptimizerGroupOptions(Database& db, std::int64_t tapeId);

// The losses the trainer recorded, by transaction index (transactions without one left out).
struct RecordedLosses {
    std::vector<std::uint64_t> indexes;
    std::vector<double> losses;
};
RecordedLosses loadRecordedLosses(Database& db, std::int64_t tapeId);

// Transactions of every tape of the case that carry full deltas or a state digest.
struct SampledCheckCounts {
    std::int64_t withDeltas = 0;
    std::int64_t withStateDigest = 0;
};
SampledCheckCounts countSampledChecks(Database& db);

struct CaseTape;
// Whether one tape's sampled checks are as many as the probabilities its root declares make
// likely (zkdv/tape/sampling_plausibility.h); none when the case's copy of the root does not
// parse.
std::optional<SamplingPlausibility> tapeSamplingPlausibility(Database& db, const CaseTape& tape);

// One verdict of a run with what the tape recorded for that transaction (NaN where the tape
// has no value).
struct RunTransaction {
    std::uint64_t index = 0;
    std::uint64_t segment = 0;
    bool selected = true;
    Verdict verdict = Verdict::Unverifiable;
    UnverifiableCause cause = UnverifiableCause::None;  // whose failure, when unverifiable
    std::string detail;
    double loss = 0.0;
    std::optional<double> recordedLearningRate;
    double updateNorm = 0.0;
    std::uint64_t replayNs = 0;
};
// The run's verdicts in transaction order.
std::vector<RunTransaction> loadRunTransactions(Database& db, std::int64_t tapeId, std::int64_t runId);

}  // namespace zkdv
