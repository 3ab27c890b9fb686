#include "summary_json.h"

#include <algorithm>
#include <cmath>

#include "zkdv/util/json_text.h"
#include "zkdv/workflow/tape_summary_text.h"

namespace zkdv::cli {

using nlohmann::json;

std::string samplingPlausibilityLines(const SamplingPlausibility& p)
{
    std::string lines = "  sampled checks: " + p.text() + "\n";
    if (p.implausible())
        lines += "  FINDING: " + p.finding() + "\n";
    return lines;
}

nlohmann::json summaryJson(const TapeSummary& summary)
{
    json out = {
        {"path", summary.path},
        {"status", std::string(tapeStatusName(summary.status))},
        {"complete", summary.complete()},
        {"format", std::to_string(summary.formatMajor) + "." + std::to_string(summary.formatMinor)},
        {"file_size", summary.fileSize},
        {"valid_bytes", summary.validBytes},
        {"records", summary.recordCount},
        {"transactions", summary.transactionCount},
        {"snapshots", summary.snapshotCount},
        {"skipped_unknown_records", summary.unknownRecordCount},
        {"chain_head", toHex(summary.chainHead)},
    };
    if (summary.fileSha256)
        out["file_sha256"] = toHex(*summary.fileSha256);
    // null when the scan did not reach a root (docs/cli-json.md: members are never left out)
    out["sampling_guarantee"] =
        summary.root ? json(std::string(samplingGuaranteeName(samplingGuaranteeOf(summary.root->formatMinor)))) : json();
    // null when the scan did not reach a root, like sampling_guarantee
    out["final_state"] = summary.root ? json(summary.finalStateOnTape ? "snapshot" : "absent") : json();
    out["sampling_plausibility"] = samplingPlausibilityJson(summary.samplingPlausibility());
    // The commitment of samples the batches are bound to (spec 5.7); whether its root commits the
    // count (sha256-merkle-v2, 1.14) or the count is the tape's claim (v1, 1.12 and 1.13).
    out["dataset"] = summary.root && summary.root->dataset
                         ? json{{"algorithm", std::string(merkleAlgorithmName(summary.root->dataset->algorithm))},
                                {"root", toHex(summary.root->dataset->root)},
                                {"leaf_count", summary.root->dataset->leafCount},
                                {"count_committed", summary.root->dataset->countCommitted()}}
                         : json();
    // Who signed the tape, the signature verified against it (spec 7.1); null when unsigned.
    out["signer"] = summary.signer ? json{{"key_id", summary.signer->keyId}, {"algorithm", keyAlgorithmName(summary.signer->algorithm)}} : json();
    if (summary.problem) {
        const TapeProblem& problem = *summary.problem;
        const auto optional = [](const auto& value) { return value ? json(*value) : json(); };
        out["problem"] = {{"record", problem.recordIndex},
                          {"byte_offset", problem.byteOffset},
                          {"message", problem.message},
                          {"record_type", problem.recordType ? json(std::string(tape::recordTypeName(*problem.recordType))) : json()},
                          {"transaction", optional(problem.transactionIndex)},
                          {"frame_offset", optional(problem.frameOffset)}};
    } else {
        out["problem"] = nullptr;
    }
    return out;
}

// The root's optimizer.schedule as the spec writes it (section 3.3), null when every option is static.
nlohmann::json scheduleJson(const RootRecord& root)
{
    if (!root.optimizerSchedule)
        return nullptr;
    const OptimizerSchedule& schedule = *root.optimizerSchedule;
    json out = {{"options", schedule.options}, {"scheduler", nullptr}};
    if (schedule.checked()) {
        out["scheduler"] = parseUntrustedJson(schedule.schedulerJson, "optimizer schedule");
        out["epoch"] = schedule.epoch;
    }
    return out;
}

nlohmann::json rootJson(const RootRecord& root)
{
    auto specs = [](const std::vector<TensorSpec>& list) {
        json array = json::array();
        for (const TensorSpec& spec : list)
            array.push_back({{"name", spec.name}, {"shape", spec.shape}, {"dtype", std::string(dtypeName(spec.dtype))}});
        return array;
    };
    json groups = json::array();
    for (const OptimizerGroup& group : root.optimizerGroups)
        groups.push_back({{"parameters", group.parameters}, {"options", parseUntrustedJson(group.optionsJson, "optimizer group options")}});
    return {
        {"producer",
         {{"name", root.producerName},
          {"version", root.producerVersion},
          {"torch_version", root.torchVersion},
          {"device", root.device},
          {"intra_op_threads", root.intraOpThreads > 0 ? json(root.intraOpThreads) : json()}}},
        {"model", {{"parameters", specs(root.parameters)}, {"buffers", specs(root.buffers)}}},
        {"optimizer", {{"contract", root.optimizerContract}, {"groups", groups}, {"schedule", scheduleJson(root)}}},
        {"program", {{"kind", root.programKind}, {"sha256", toHex(root.programSha256)}, {"embedded", root.programEmbedded}, {"entry", root.programEntry}}},
        {"replay_snapshot_interval", root.snapshotInterval},
        {"sampling", {{"state_check_probability", root.stateCheckProbability}, {"update_check_probability", root.updateCheckProbability}, {"seed", root.samplingSeed}, {"generator", root.samplingGenerator.empty() ? json() : json(root.samplingGenerator)}}},
        {"max_in_flight", root.maxInFlight},
        {"overlap", root.overlap},
        {"metadata", parseUntrustedJson(root.metadataJson, "run metadata")},
        {"numerics", root.numerics ? json::parse(root.numerics->toJson()) : json()},
        {"determinism", root.determinism ? json::parse(root.determinism->toJson()) : json()},
        {"grad_scaler", root.gradScaler ? json::parse(gradScalerDeclarationJson(*root.gradScaler)) : json()},
        {"resumes", root.resumes ? json{{"chain_head", toHex(root.resumes->chainHead)},
                                        {"size", root.resumes->size},
                                        {"transactions", root.resumes->transactionsBefore},
                                        {"state_digest", toHex(root.resumes->stateDigest)}}
                                 : json()},
    };
}

nlohmann::json caseTapeJson(const CaseTape& tape)
{
    return {
        {"id", tape.id},
        {"path", tape.path},
        {"chain_head", tape.chainHead},
        {"file_sha256", tape.fileSha256.empty() ? nlohmann::json() : nlohmann::json(tape.fileSha256)},
        {"size", tape.size},
        {"status", tape.status},
        {"producer", tape.producer},
        {"optimizer", tape.optimizerContract},
        {"program", {{"sha256", tape.programSha256}, {"kind", tape.programKind}, {"present", tape.programPresent}}},
        {"replay_snapshot_interval", tape.snapshotInterval},
        {"records", tape.recordCount},
        {"transactions", tape.transactionCount},
        {"snapshots", tape.snapshotCount},
        {"embedded", tape.embedded},
        {"ingested_at", tape.ingestedAt},
        // Verified at ingest; trust is the reader's keyring's (verify --json's signature_trust).
        {"signer", tape.isSigned() ? json{{"key_id", tape.signerKeyId}, {"algorithm", tape.signerAlgorithm}} : json()},
        {"run",
         {{"transactions_before", tape.transactionsBefore},
          {"link", std::string(tapeLinkStatusName(tape.link.status))},
          {"continues_tape", tape.link.previousTapeId ? json(tape.link.previousTapeId) : json()},
          {"problem", tape.link.problem.empty() ? json() : json(tape.link.problem)},
          {"forked_with", tape.link.forkedWith}}},
    };
}

std::string summaryLine(const TapeSummary& summary)
{
    std::string line = tapeCountsText(summary);
    if (summary.problem)
        line += "\n  " + summary.problem->describe();
    return line;
}

std::string finalStateText(const TapeSummary& summary)
{
    const std::uint64_t n = summary.transactionCount;
    if (summary.finalStateOnTape)
        return "on the tape (the snapshot before transaction " + std::to_string(n) + ")";
    const std::string version = std::to_string(summary.formatMajor) + "." + std::to_string(summary.formatMinor);
    const auto interval = static_cast<std::uint64_t>(summary.root ? std::max(1, summary.root->snapshotInterval) : 1);
    const std::uint64_t since = n / interval * interval;
    const std::string unchecked = since + 1 == n ? "transaction " + std::to_string(since)
                                                 : "transactions " + std::to_string(since) + "-" + std::to_string(n - 1);
    return "not on the tape: " + unchecked + " changed the state after the last snapshot, which a replay compares with no snapshot, only with " +
           "their own checks" +
           (tape::hasFinalSnapshot(summary.formatMinor) ? std::string(" (the tape is not sealed)")
                                                        : " (format " + version + " predates the final snapshot of format 1.5: weaker)");
}

}  // namespace zkdv::cli
