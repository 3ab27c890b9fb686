// The report as JSON for machines: stable snake_case keys, numbers as numbers, NaN and
// infinities as null (docs/report-schema.md, schema "zkdv-audit-report/1").

#include <cmath>

#include <nlohmann/json.hpp>

#include "zkdv/report/audit_report.h"
#include "zkdv/report/sampling_plausibility_json.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {

using json = nlohmann::ordered_json;

json number(double value)
{
    return std::isfinite(value) ? json(value) : json(nullptr);
}

json optionsOf(const std::string& text)
{
    try {
        json parsed = parseUntrustedJson(text, "optimizer group options");
        if (parsed.is_object())
            return parsed;
    } catch (const FormatError&) {
    }
    return json{{"unparsed", text}};
}

json comparisonJson(const ReportComparison& c, bool withTransaction)
{
    const DivergenceMetrics& m = c.metrics;
    std::size_t bins = kUlpHistogramBins;
    while (bins > 0 && m.ulpHistogram[bins - 1] == 0)
        --bins;
    json histogram = json::array();
    for (std::size_t b = 0; b < bins; ++b)
        histogram.push_back(m.ulpHistogram[b]);
    json out = json::object();
    if (withTransaction)
        out["transaction"] = c.transaction;
    out["tensor"] = c.tensor;
    out["slot"] = c.slot;
    out["verdict"] = verdictName(c.verdict);
    out["elements"] = m.elements;
    out["bitwise_equal"] = m.bitwiseEqual;
    out["max_abs"] = number(m.maxAbs);
    out["rel_l2"] = number(m.relativeL2);
    out["cosine"] = number(m.cosine);
    out["max_ulp"] = number(m.maxUlp);
    out["mean_ulp"] = number(m.meanUlp);
    out["nan_mismatches"] = m.nanMismatches;
    out["inf_mismatches"] = m.infMismatches;
    out["ulp_histogram"] = histogram;
    out["note"] = c.note;
    return out;
}

}  // namespace

std::string renderReportJson(const ReportData& r)
{
    json out = json::object();
    out["schema"] = "zkdv-audit-report/1";
    out["generated_at"] = r.generatedAt;
    out["zkdv_version"] = r.zkdvVersion;
    out["case_path"] = r.casePath;
    out["conclusion"] = {{"passed", r.passed()},
                         {"confirms_tape", r.confirmsTape()},
                         {"headline", r.headline},
                         {"warnings", r.warnings},
                         {"outcome", std::string(auditOutcomeName(r.outcome))}};
    out["tape"] = {{"id", r.tapeId},
                   {"path", r.tapePath},
                   {"chain_head", r.chainHead},
                   {"file_sha256", r.fileSha256.empty() ? json() : json(r.fileSha256)},
                   {"status", r.tapeStatus},
                   {"record_count", r.recordCount},
                   {"transaction_count", r.transactionCount},
                   {"snapshot_count", r.snapshotCount},
                   {"producer", r.producer},
                   {"signature",
                    {{"trust", signatureTrustName(r.signatureTrust)},
                     {"required", r.signerRequired},
                     {"key_id", r.signerKeyId.empty() ? json() : json(r.signerKeyId)},
                     {"algorithm", r.signerAlgorithm.empty() ? json() : json(r.signerAlgorithm)},
                     {"trusted_key_file", r.trustedKeyFile.empty() ? json() : json(r.trustedKeyFile)}}},
                   {"trained_on", r.trainedOn},
                   {"sampling_plausibility", samplingPlausibilityJson(r.tapeSampling)},
                   {"run",
                    {{"transactions_before", r.runTransactionsBefore},
                     {"link", std::string(tapeLinkStatusName(r.runLink))},
                     {"forked_with", r.forkedWith},
                     {"link_text", r.runLinkText},
                     {"tapes", r.runTapes}}}};
    out["program"] = {{"kind", r.programKind}, {"sha256", r.programSha256}, {"present", r.programPresent}, {"check", r.programCheck ? std::string(programCheckName(*r.programCheck)) : std::string("not-checked")},
                      {"check_detail", r.programCheckDetail.empty() ? nlohmann::json() : nlohmann::json(r.programCheckDetail)}};
    out["model"] = {{"parameter_count", r.parameterCount},
                    {"parameter_elements", r.parameterElements},
                    {"buffer_count", r.bufferCount},
                    {"layout", r.layout}};
    json groups = json::array();
    for (const std::string& group : r.optimizerGroups)
        groups.push_back(optionsOf(group));
    json schedule = nullptr;
    if (!r.scheduledOptions.empty())
        schedule = {{"options", r.scheduledOptions},
                    {"scheduler", r.schedulerKind.empty() ? json(nullptr) : json(r.schedulerKind)},
                    {"checked", !r.schedulerKind.empty()}};
    out["optimizer"] = {{"contract", r.optimizerContract}, {"groups", groups}, {"schedule", schedule}, {"schedule_statement", r.scheduleStatement}};
    out["replay"] = {{"run_id", r.runId},
                     {"status", r.runStatus ? nlohmann::json(std::string(runStatusName(*r.runStatus))) : nlohmann::json("not replayed")},
                     {"device", r.device},
                     {"libtorch_version", r.libtorchVersion},
                     {"cuda_version", r.cudaVersion},
                     {"operating_system", r.operatingSystem},
                     {"numeric_regime", r.numericRegime},
                     {"numeric_regime_reason", r.numericRegimeReason},
                     {"kernel_profile", r.kernelProfile},
                     {"determinism", r.replayDeterminism},
                     {"training_determinism", r.trainingDeterminism},
                     {"envelope", r.envelope ? json(*r.envelope) : json(nullptr)},
                     {"envelope_source", r.envelopeSource},
                     {"envelope_note", r.envelopeNote},
                     {"calibration", r.calibration ? json{{"path", r.calibration->path},
                                                          {"sha256", r.calibration->sha256},
                                                          {"used", r.calibration->used},
                                                          {"samples", r.calibration->samples},
                                                          {"max_ratio", r.calibration->maxRatio},
                                                          {"safety_factor", r.calibration->safetyFactor},
                                                          {"quantile_level", r.calibration->quantileLevel}}
                                                   : json(nullptr)},
                     {"zkdv_version", r.replayZkdvVersion},
                     {"selection", r.selection},
                     {"seed", r.seed},
                     {"seed_source", std::string(seedSourceName(r.seedSource))},
                     {"tolerance", r.tolerance},
                     {"redo_command", r.redoCommand},
                     {"selected_count", r.selectedCount},
                     {"replayed_count", r.replayedCount},
                     {"problem", r.runProblem},
                     {"seal", {{"state", runSealStateName(r.seal.state)},
                               {"vouched", r.seal.vouched()},
                               {"signer", r.seal.signer.empty() ? json(nullptr) : json(r.seal.signer)},
                               {"sealed_at", r.seal.sealedAt.empty() ? json(nullptr) : json(r.seal.sealedAt)},
                               {"explanation", r.seal.explanation},
                               {"payload_version", r.seal.payloadVersion}}}};
    out["replay"]["shard"] = r.shard ? json({{"index", r.shard->index}, {"count", r.shard->count}}) : json(nullptr);
    json shards = json::array();
    for (const MergedShard& shard : r.mergedShards)
        shards.push_back({{"index", shard.index},
                          {"file", shard.file},
                          {"run", shard.shardRunId},
                          {"host", shard.host},
                          {"device", shard.device},
                          {"libtorch_version", shard.libtorchVersion},
                          {"signer", shard.signer},
                          {"sealed_at", shard.sealedAt},
                          {"started_at", shard.startedAt},
                          {"finished_at", shard.finishedAt},
                          {"replayed", shard.replayed}});
    out["replay"]["merged_shards"] = shards;
    out["counts"] = {{"exact", r.exact}, {"within_tolerance", r.withinTolerance}, {"diverged", r.diverged}, {"unverifiable", r.unverifiable},
                     {"trainers_failures", r.trainersFailures}};
    out["comparison_count"] = r.comparisonCount;
    json otherRuns = json::array();
    for (const ReportOtherRun& other : r.otherRuns)
        otherRuns.push_back({{"id", other.id},
                             {"status", std::string(runStatusName(other.status))},
                             {"selection", other.selection},
                             {"seed", other.seed},
                             {"seed_source", std::string(seedSourceName(other.seedSource))},
                             {"device", other.device},
                             {"started_at", other.startedAt},
                             {"replayed", other.replayed},
                             {"counts", {{"exact", other.exact}, {"within_tolerance", other.withinTolerance}, {"diverged", other.diverged},
                                         {"unverifiable", other.unverifiable}, {"trainers_failures", other.trainersFailures}}},
                             {"vouched", other.vouched},
                             {"seal_state", runSealStateName(other.sealState)},
                             {"failed_when_sealed", other.finding ? json(other.finding->failed()) : json(nullptr)},
                             {"diverged_transactions", other.divergedTransactions}});
    out["other_runs"] = otherRuns;
    json vanished = json::array();
    for (const ReportVanishedFailure& v : r.vanishedFailures)
        vanished.push_back({{"id", v.runId}, {"now", v.now}});
    out["vanished_failures"] = vanished;
    out["unvouched_rows"] = r.unvouchedRows;
    if (r.sampling) {
        const SamplingStatement& s = *r.sampling;
        out["sampling"] = {{"population", s.population},
                           {"sampled", s.sampled},
                           {"failures", s.failures},
                           {"upper_95", number(s.upper95)},
                           {"upper_99", number(s.upper99)},
                           {"bad_upper_95", s.badUpper95},
                           {"bad_upper_99", s.badUpper99},
                           {"clopper_pearson_95", number(s.clopperPearson95)},
                           {"clopper_pearson_99", number(s.clopperPearson99)},
                           {"method", s.method},
                           {"sentence", s.sentence}};
    } else {
        out["sampling"] = nullptr;
    }
    out["sampling_note"] = r.samplingNote;
    json worst = json::array();
    for (const ReportComparison& c : r.worstDivergences)
        worst.push_back(comparisonJson(c, true));
    out["worst_divergences"] = worst;
    json transactions = json::array();
    for (const ReportTransaction& t : r.transactions) {
        json comparisons = json::array();
        for (const ReportComparison& c : t.comparisons)
            comparisons.push_back(comparisonJson(c, false));
        transactions.push_back({{"index", t.index},
                                {"segment", t.segment},
                                {"selected", t.selected},
                                {"verdict", verdictName(t.verdict)},
                                {"cause", t.verdict == Verdict::Unverifiable ? json(unverifiableCauseName(t.cause)) : json(nullptr)},
                                {"detail", t.detail},
                                {"loss", number(t.loss)},
                                {"learning_rate", t.recordedLearningRate ? number(*t.recordedLearningRate) : json(nullptr)},
                                {"update_norm", number(t.updateNorm)},
                                {"replay_ns", t.replayNs},
                                {"comparisons", comparisons}});
    }
    out["transactions"] = transactions;
    json notes = json::array();
    for (std::size_t i = 0; i < r.auditorNotes.size(); ++i) {
        const TransactionNote& note = r.auditorNotes[i];
        notes.push_back({{"index", note.index},
                         {"flag", transactionFlagName(note.flag)},
                         {"note", note.note},
                         {"author", note.author},
                         {"updated_at", note.updatedAt},
                         {"signed_by", i < r.auditorNoteSigners.size() ? r.auditorNoteSigners[i] : std::string("unsigned")}});
    }
    out["auditor_notes"] = notes;
    return toJsonText(out, 2) + "\n";
}

}  // namespace zkdv
