#include "replay_json.h"

#include <cmath>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {

namespace {
// JSON has no infinity: a relative error over a zero reference is written as null.
nlohmann::json number(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

// The calibration a replay was given (--calibration), used or not; null without one.
nlohmann::json calibrationJson(const EnvelopeChoice& choice)
{
    if (!choice.calibration)
        return nullptr;
    const EnvelopeCalibration& c = choice.calibration->calibration;
    return {{"path", choice.calibration->path},
            {"sha256", choice.calibration->sha256},
            {"used", choice.calibrationUsed},
            {"samples", c.samples()},
            {"max_ratio", c.maxRatio()},
            {"safety_factor", kCalibrationSafetyFactor},
            {"quantile_level", c.quantileLevel()}};
}
}  // namespace

nlohmann::json comparisonJson(const TensorComparison& c)
{
    nlohmann::json json = {{"tensor", c.tensor},
                           {"slot", c.slot},
                           {"verdict", verdictName(c.verdict)},
                           {"elements", c.metrics.elements},
                           {"bitwise_equal", c.metrics.bitwiseEqual},
                           {"max_abs", number(c.metrics.maxAbs)},
                           {"relative_l2", number(c.metrics.relativeL2)},
                           {"cosine", number(c.metrics.cosine)},
                           {"max_ulp", number(c.metrics.maxUlp)},
                           {"mean_ulp", number(c.metrics.meanUlp)},
                           {"nan_mismatches", c.metrics.nanMismatches},
                           {"inf_mismatches", c.metrics.infMismatches}};
    if (!c.note.empty())
        json["note"] = c.note;
    if (!std::isnan(c.envelopeRatio))
        json["envelope_ratio"] = number(c.envelopeRatio);
    return json;
}

nlohmann::json outcomeJson(const TransactionOutcome& outcome)
{
    nlohmann::json json = {{"index", outcome.index},       {"segment", outcome.segment}, {"selected", outcome.selected},
                           {"verdict", verdictName(outcome.verdict)}, {"detail", outcome.detail}, {"replay_ns", outcome.replayNs}};
    nlohmann::json failing = nlohmann::json::array();
    for (const TensorComparison& c : outcome.comparisons)
        if (c.verdict != Verdict::Exact)
            failing.push_back(comparisonJson(c));
    json["not_exact"] = failing;
    if (outcome.verdict == Verdict::Unverifiable) {
        json["cause"] = unverifiableCauseName(outcome.cause == UnverifiableCause::None ? UnverifiableCause::Environment : outcome.cause);
        json["trainers_failure"] = blamesTrainer(outcome.cause);
    }
    return json;
}

nlohmann::json replaySummaryJson(const ReplaySummary& s)
{
    nlohmann::json failures = nlohmann::json::array();
    for (const TransactionOutcome& outcome : s.firstFailures)
        failures.push_back(outcomeJson(outcome));
    return {{"json_version", kCliJsonVersion},
            {"run_id", s.runId},
            {"tape_id", s.tapeId},
            {"status", std::string(runStatusName(s.status))},
            {"passed", s.bitForBit()},
            {"consistent_within_rounding", s.passed() && !s.bitForBit()},
            {"failed", s.failed()},
            {"device", s.device},
            {"selection", s.selection},
            {"seed", s.seed},
            {"seed_source", std::string(seedSourceName(s.seedSource))},
            {"transactions", s.transactionCount},
            {"selected", s.selected},
            {"replayed", s.replayed},
            {"verdicts", {{"exact", s.exact}, {"within_tolerance", s.withinTolerance}, {"diverged", s.diverged}, {"unverifiable", s.unverifiable}}},
            {"trainers_failures", s.trainersFailures},
            {"problem", s.problem.empty() ? nlohmann::json() : nlohmann::json(s.problem)},
            {"numeric_regime", s.regime},
            {"numeric_regime_reason", s.regimeReason.empty() ? nlohmann::json() : nlohmann::json(s.regimeReason)},
            {"kernel_profile", nlohmann::json::parse(s.kernelProfile.toJson())},
            {"determinism", nlohmann::json::parse(s.determinism.toJson())},
            {"envelope", s.envelope.envelope},
            {"envelope_source", s.envelope.source},
            {"envelope_note", s.envelope.note},
            {"calibration", calibrationJson(s.envelope)},
            {"seconds", s.seconds},
            {"worker_log", s.workerLog.empty() ? nlohmann::json() : nlohmann::json(s.workerLog)},
            {"sealed", s.sealProblem.empty()},
            {"seal_problem", s.sealProblem.empty() ? nlohmann::json() : nlohmann::json(s.sealProblem)},
            {"first_failures", failures}};
}

nlohmann::json storedRunJson(const StoredReplayRun& r)
{
    // A damaged environment in the case is left out rather than failing the whole listing.
    nlohmann::json environment;
    try {
        environment = parseUntrustedJson(r.environmentJson, "replay environment");
    } catch (const FormatError&) {
    }
    return {{"run_id", r.id},
            {"tape_id", r.tapeId},
            {"status", std::string(runStatusName(r.status))},
            {"device", r.device},
            {"libtorch", r.libtorchVersion},
            {"zkdv", r.zkdvVersion},
            {"selection", r.selection},
            {"seed", r.seed},
            {"seed_source", std::string(seedSourceName(r.seedSource))},
            {"tolerance", r.tolerance},
            {"threads", r.threads},
            {"intra_op_threads", r.intraOpThreads},
            {"started_at", r.startedAt},
            {"finished_at", r.finishedAt},
            {"problem", r.problem.empty() ? nlohmann::json() : nlohmann::json(r.problem)},
            {"environment", environment},
            {"selected", r.selectedCount},
            {"replayed", r.replayed},
            {"verdicts", {{"exact", r.exact}, {"within_tolerance", r.withinTolerance}, {"diverged", r.diverged}, {"unverifiable", r.unverifiable}}},
            {"trainers_failures", r.trainersFailures},
            // A shard's run: {index, count}; a merged run: {count}; null for a whole run.
            {"shard", r.shardCount == 0 ? nlohmann::json()
                      : r.shardIndex    ? nlohmann::json{{"index", *r.shardIndex}, {"count", r.shardCount}}
                                        : nlohmann::json{{"count", r.shardCount}, {"merged", true}}}};
}

nlohmann::json runSealJson(const RunSealCheck& seal)
{
    return {{"state", runSealStateName(seal.state)},
            {"vouched", seal.vouched()},
            {"signer", seal.signer.empty() ? nlohmann::json() : nlohmann::json(seal.signer)},
            {"sealed_at", seal.sealedAt.empty() ? nlohmann::json() : nlohmann::json(seal.sealedAt)},
            {"explanation", seal.explanation}};
}

}  // namespace zkdv::cli
