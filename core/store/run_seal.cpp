#include "zkdv/store/run_seal.h"

#include "legacy_program_check.h"
#include "row_digest.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/audit/pass_rule.h"
#include "zkdv/store/database.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/utc_time.h"

namespace zkdv {

namespace {

// What a seal covers, by payload version. The columns are named, not `*`, so a later
// migration that adds a column leaves earlier seals valid; a seal over more columns gets a
// new version and tag, and the old version's queries stay as they were.
constexpr std::string_view kSealTagV1 = "zkdv replay run seal 1\n";
constexpr std::string_view kSealTagV2 = "zkdv replay run seal 2\n";
// Version 3 adds the run's seed_source (case schema 10): whether zkdv drew the audit seed or
// the auditor gave it, which the report's bound rests on.
constexpr std::string_view kSealTagV3 = "zkdv replay run seal 3\n";
// Version 4 adds the run's program_check (case schema 13): whether the program that ran is
// the one the tape commits to, which the report states from that column alone.
constexpr std::string_view kSealTagV4 = "zkdv replay run seal 4\n";
// Version 5 adds the run's shard (case schema 16): which shard of how many a shard's run
// replayed, and for a merged run the shards it was merged from, which its report names.
constexpr std::string_view kSealTagV5 = "zkdv replay run seal 5\n";
// Version 6 adds the planned audit a merged run was checked against (case schema 17): the
// tape, selection, seed and its source, shard count, tolerance, calibration digest and program
// check the auditor fixed when the job was planned, which the merge held every shard to.
constexpr std::string_view kSealTagV6 = "zkdv replay run seal 6\n";
// Version 7 signs the seal's own time (sealed_at) beside the rows, which reports print; the
// rows covered are version 6's.
constexpr std::string_view kSealTagV7 = "zkdv replay run seal 7\n";
constexpr int kLatestPayloadVersion = 7;

std::string_view sealTag(int version)
{
    return version == 1 ? kSealTagV1 : version == 2 ? kSealTagV2 : version == 3 ? kSealTagV3 : version == 4 ? kSealTagV4
         : version == 5 ? kSealTagV5 : version == 6 ? kSealTagV6 : kSealTagV7;
}

constexpr const char* kTapeQuery =
    "SELECT t.chain_head, t.size, t.status, t.transaction_count, t.program_sha256"
    " FROM replay_runs r JOIN tapes t ON t.id = r.tape_id WHERE r.id = ?1";
constexpr const char* kRunQuery =
    "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
    " finished_at, status, intra_op_threads, selected_count, environment, problem FROM replay_runs WHERE id = ?1";
constexpr const char* kRunQueryV3 =
    "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
    " finished_at, status, intra_op_threads, selected_count, environment, problem, seed_source FROM replay_runs WHERE id = ?1";
constexpr const char* kRunQueryV4 =
    "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
    " finished_at, status, intra_op_threads, selected_count, environment, problem, seed_source, program_check FROM replay_runs"
    " WHERE id = ?1";
constexpr const char* kRunQueryV5 =
    "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
    " finished_at, status, intra_op_threads, selected_count, environment, problem, seed_source, program_check, shard_index,"
    " shard_count FROM replay_runs WHERE id = ?1";
constexpr const char* kRunQueryV6 =
    "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
    " finished_at, status, intra_op_threads, selected_count, environment, problem, seed_source, program_check, shard_index,"
    " shard_count, planned_audit_id FROM replay_runs WHERE id = ?1";
constexpr const char* kPlannedAuditQuery =
    "SELECT p.id, t.chain_head, t.size, p.selection_spec, p.seed, p.seed_source, p.shard_count, p.tolerance, p.calibration_sha256,"
    " p.program_check, p.planned_at FROM replay_runs r JOIN planned_audits p ON p.id = r.planned_audit_id"
    " JOIN tapes t ON t.id = p.tape_id WHERE r.id = ?1";
constexpr const char* kMergedShardQuery =
    "SELECT shard_index, file, shard_run_id, host, device, libtorch_version, signer, sealed_at, started_at, finished_at, replayed"
    " FROM merged_shards WHERE run_id = ?1 ORDER BY shard_index";
constexpr const char* kVerdictQuery =
    "SELECT idx, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2, replay_ns"
    " FROM verdicts WHERE run_id = ?1 ORDER BY idx";
constexpr const char* kMetricQuery =
    "SELECT idx, tensor, slot, max_abs, rel_l2, cosine, max_ulp, mean_ulp, nan_mismatches, inf_mismatches, ulp_histogram,"
    " verdict, elements, bitwise_equal, note FROM metrics WHERE run_id = ?1 ORDER BY idx, tensor, slot";
// Version 2: the verdicts with their cause, and the tape's ingested rows a report prints. Not
// the path (a moved tape is located again) nor the file SHA-256 (a later ingest may add it).
constexpr const char* kVerdictQueryV2 =
    "SELECT idx, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2, replay_ns, cause"
    " FROM verdicts WHERE run_id = ?1 ORDER BY idx";
constexpr const char* kTapeQueryV2 =
    "SELECT t.chain_head, t.size, t.status, t.format_major, t.format_minor, t.root_json, t.producer, t.optimizer_contract,"
    " t.snapshot_interval, t.program_sha256, t.program_kind, t.record_count, t.transaction_count, t.snapshot_count"
    " FROM replay_runs r JOIN tapes t ON t.id = r.tape_id WHERE r.id = ?1";
constexpr const char* kLayoutQuery =
    "SELECT n.kind, n.position, n.name, n.dtype, n.shape FROM replay_runs r JOIN tensors n ON n.tape_id = r.tape_id"
    " WHERE r.id = ?1 ORDER BY n.kind, n.position";
constexpr const char* kGroupQuery =
    "SELECT g.group_index, g.options, g.parameters FROM replay_runs r JOIN optimizer_groups g ON g.tape_id = r.tape_id"
    " WHERE r.id = ?1 ORDER BY g.group_index";
constexpr const char* kTransactionQuery =
    "SELECT x.idx, x.loss, x.lr, x.update_norm FROM replay_runs r JOIN transactions x ON x.tape_id = r.tape_id"
    " WHERE r.id = ?1 ORDER BY x.idx";

Digest runContentDigest(Database& db, std::int64_t runId, int version)
{
    Sha256 hash;
    hash.update(sealTag(version));
    putU64(hash, static_cast<std::uint64_t>(runId));
    if (version == 1) {
        hashRows(hash, db, kTapeQuery, runId, 'T');
        hashRows(hash, db, kRunQuery, runId, 'R');
        hashRows(hash, db, kVerdictQuery, runId, 'V');
        hashRows(hash, db, kMetricQuery, runId, 'M');
        return hash.finish();
    }
    hashRows(hash, db, kTapeQueryV2, runId, 'T');
    hashRows(hash, db, kLayoutQuery, runId, 'L');
    hashRows(hash, db, kGroupQuery, runId, 'G');
    hashRows(hash, db, kTransactionQuery, runId, 'X');
    hashRows(hash, db,
             version >= 6   ? kRunQueryV6
             : version >= 5 ? kRunQueryV5
             : version >= 4 ? kRunQueryV4
             : version >= 3 ? kRunQueryV3
                            : kRunQuery,
             runId, 'R');
    hashRows(hash, db, kVerdictQueryV2, runId, 'V');
    hashRows(hash, db, kMetricQuery, runId, 'M');
    if (version >= 5)
        hashRows(hash, db, kMergedShardQuery, runId, 'S');
    if (version >= 6)
        hashRows(hash, db, kPlannedAuditQuery, runId, 'P');
    return hash.finish();
}

// Version 1 signs the tag and the content digest; version 2 the finding too, with its length;
// version 7 the time it was sealed too, with its length.
std::vector<std::uint8_t> signedMessage(int version, const Digest& content, std::string_view finding, std::string_view sealedAt)
{
    const std::string_view tag = sealTag(version);
    std::vector<std::uint8_t> message(tag.begin(), tag.end());
    message.insert(message.end(), content.begin(), content.end());
    auto put = [&](std::string_view text) {
        for (int i = 0; i < 8; ++i)
            message.push_back(static_cast<std::uint8_t>(static_cast<std::uint64_t>(text.size()) >> (8 * i)));
        message.insert(message.end(), text.begin(), text.end());
    };
    if (version >= 2)
        put(finding);
    if (version >= 7)
        put(sealedAt);
    return message;
}

std::string findingText(const RunFinding& finding)
{
    return toJsonText(nlohmann::json{{"status", finding.status},
                                     {"replayed", finding.replayed},
                                     {"diverged", finding.diverged},
                                     {"unverifiable", finding.unverifiable},
                                     {"trainers_failures", finding.trainersFailures},
                                     {"earlier_failed_runs", finding.earlierFailedRuns}});
}

std::optional<RunFinding> parseFinding(const std::string& text)
{
    try {
        const nlohmann::json json = parseUntrustedJson(text, "run seal finding");
        RunFinding finding;
        finding.status = json.at("status").get<std::string>();
        finding.replayed = json.at("replayed").get<std::uint64_t>();
        finding.diverged = json.at("diverged").get<std::uint64_t>();
        finding.unverifiable = json.at("unverifiable").get<std::uint64_t>();
        finding.trainersFailures = json.at("trainers_failures").get<std::uint64_t>();
        finding.earlierFailedRuns = json.at("earlier_failed_runs").get<std::vector<std::int64_t>>();
        return finding;
    } catch (const FormatError&) {
        return std::nullopt;
    } catch (const nlohmann::json::exception&) {
        return std::nullopt;
    }
}

// What the run's rows say now.
RunFinding currentFinding(Database& db, std::int64_t runId)
{
    RunFinding finding;
    Statement run = db.prepare("SELECT status FROM replay_runs WHERE id = ?1");
    run.bind(1, runId);
    if (run.step())
        finding.status = run.text(0);
    Statement counts = db.prepare(
        "SELECT count(*), coalesce(sum(verdict = 'diverged'), 0), coalesce(sum(verdict = 'unverifiable'), 0),"
        " coalesce(sum(verdict = 'unverifiable' AND coalesce(cause, 'environment') <> 'environment'), 0)"
        " FROM verdicts WHERE run_id = ?1");
    counts.bind(1, runId);
    if (counts.step()) {
        finding.replayed = static_cast<std::uint64_t>(counts.int64(0));
        finding.diverged = static_cast<std::uint64_t>(counts.int64(1));
        finding.unverifiable = static_cast<std::uint64_t>(counts.int64(2));
        finding.trainersFailures = static_cast<std::uint64_t>(counts.int64(3));
    }
    return finding;
}

}  // namespace

bool RunFinding::failed() const { return replayRunFailed(diverged, trainersFailures) || !earlierFailedRuns.empty(); }

const char* runSealStateName(RunSealCheck::State state)
{
    switch (state) {
    case RunSealCheck::State::Vouched: return "vouched";
    case RunSealCheck::State::UntrustedSigner: return "untrusted-signer";
    case RunSealCheck::State::Altered: return "altered";
    case RunSealCheck::State::Unsigned: return "unsigned";
    }
    return "unsigned";
}

void sealRun(Database& db, std::int64_t runId, const AuditorKey& key, const std::vector<TrustedKey>& trusted)
{
    RunFinding finding = currentFinding(db, runId);
    // The tape's earlier runs that had failed, by their own trusted seals (an unsigned row
    // claiming a failure is no evidence against the tape).
    Statement earlier = db.prepare(
        "SELECT e.id FROM replay_runs r JOIN replay_runs e ON e.tape_id = r.tape_id AND e.id < r.id WHERE r.id = ?1 ORDER BY e.id");
    earlier.bind(1, runId);
    std::vector<std::int64_t> earlierRuns;
    while (earlier.step())
        earlierRuns.push_back(earlier.int64(0));
    for (std::int64_t id : earlierRuns) {
        const RunSealCheck check = checkRunSeal(db, id, key.publicKey(), trusted);
        if (check.finding && replayRunFailed(check.finding->diverged, check.finding->trainersFailures))
            finding.earlierFailedRuns.push_back(id);
        else if (check.finding)  // it passed on its own, but recorded an earlier failure itself
            for (std::int64_t failed : check.finding->earlierFailedRuns)
                if (std::find(finding.earlierFailedRuns.begin(), finding.earlierFailedRuns.end(), failed) == finding.earlierFailedRuns.end())
                    finding.earlierFailedRuns.push_back(failed);
    }
    std::sort(finding.earlierFailedRuns.begin(), finding.earlierFailedRuns.end());
    const std::string found = findingText(finding);
    const Digest content = runContentDigest(db, runId, kLatestPayloadVersion);
    const std::string sealedAt = utcNow();
    const Signature signature = key.sign(ByteSpan(signedMessage(kLatestPayloadVersion, content, found, sealedAt)));
    Statement insert = db.prepare(
        "INSERT OR REPLACE INTO run_seals(run_id, content_sha256, public_key, signature, sealed_at, payload_version, found)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    insert.bind(1, runId)
        .bindBlob(2, ByteSpan(content.data(), content.size()))
        .bindBlob(3, ByteSpan(key.publicKey().data(), key.publicKey().size()))
        .bindBlob(4, ByteSpan(signature.data(), signature.size()))
        .bind(5, sealedAt)
        .bind(6, static_cast<std::int64_t>(kLatestPayloadVersion))
        .bind(7, found)
        .run();
}

RunSealCheck checkRunSeal(Database& db, std::int64_t runId, const std::optional<PublicKey>& ownKey, const std::vector<TrustedKey>& trusted)
{
    RunSealCheck check;
    Statement row = db.prepare(
        "SELECT content_sha256, public_key, signature, sealed_at, payload_version, coalesce(found, '') FROM run_seals WHERE run_id = ?1");
    row.bind(1, runId);
    if (!row.step()) {
        check.state = RunSealCheck::State::Unsigned;
        check.explanation = "run " + std::to_string(runId) +
                            " carries no seal (it was stored by a zkdv older than case schema 7, did not finish, or its replay had no signing key), "
                            "so its results cannot be vouched for; replay the selection again to check the tape";
        return check;
    }
    const ByteSpan storedContent = row.blob(0), storedKey = row.blob(1), storedSignature = row.blob(2);
    check.sealedAt = row.text(3);
    const std::int64_t version = row.int64(4);
    const std::string found = row.text(5);
    PublicKey key{};
    Signature signature{};
    Digest stored{};
    const bool wellFormed = storedContent.size == stored.size() && storedKey.size == key.size() && storedSignature.size == signature.size() &&
                            version >= 1 && version <= kLatestPayloadVersion;
    if (wellFormed) {
        std::memcpy(key.data(), storedKey.data, key.size());
        std::memcpy(signature.data(), storedSignature.data, signature.size());
        std::memcpy(stored.data(), storedContent.data, stored.size());
        check.signer = keyFingerprint(key);
        check.payloadVersion = static_cast<int>(version);
    }
    const std::optional<std::string> trustedNote = wellFormed ? trustedSignerNote(key, ownKey, trusted) : std::nullopt;
    // The signature over what the seal row stores, whatever the rows say now: it tells a seal
    // row forged or damaged from rows changed under an intact seal, whose finding then stands.
    const bool signatureHolds = wellFormed && verifySignature(key, ByteSpan(signedMessage(check.payloadVersion, stored, found, check.sealedAt)), signature);
    std::optional<RunFinding> signedFinding;
    if (signatureHolds && check.payloadVersion >= 2 && trustedNote)
        signedFinding = parseFinding(found);
    // A version 1 seal was made before causes were stored: a cause on its rows was added since.
    bool causeAdded = false;
    if (wellFormed && check.payloadVersion == 1) {
        Statement causes = db.prepare("SELECT count(*) FROM verdicts WHERE run_id = ?1 AND cause IS NOT NULL");
        causes.bind(1, runId);
        causeAdded = causes.step() && causes.int64(0) > 0;
    }
    // Likewise a seed source on a run sealed before version 3 (it would claim a drawn seed).
    if (wellFormed && check.payloadVersion < 3)
        causeAdded = causeAdded ||
                     db.queryInt64("SELECT seed_source IS NOT NULL FROM replay_runs WHERE id = " + std::to_string(runId)).value_or(0) != 0;
    // And a program check on a run sealed before version 4 other than the one its sealed
    // problem text gives (it would claim the program matched).
    if (wellFormed && check.payloadVersion < 4) {
        Statement legacy = db.prepare("SELECT coalesce(program_check, '') = " ZKDV_LEGACY_PROGRAM_CHECK_SQL " FROM replay_runs WHERE id = ?1");
        legacy.bind(1, runId);
        causeAdded = causeAdded || !legacy.step() || legacy.int64(0) == 0;
    }
    // And a shard, or shards merged from, on a run sealed before version 5 (it would pass a
    // part of a selection for the whole, or name shards its signer never checked).
    if (wellFormed && check.payloadVersion < 5) {
        const std::string id = std::to_string(runId);
        causeAdded = causeAdded ||
                     db.queryInt64("SELECT (shard_index IS NOT NULL OR shard_count IS NOT NULL) FROM replay_runs WHERE id = " + id).value_or(0) != 0 ||
                     db.queryInt64("SELECT count(*) FROM merged_shards WHERE run_id = " + id).value_or(0) != 0;
    }
    // And a planned audit on a run sealed before version 6 (it would claim its shards were held
    // to an audit its signer never checked them against).
    if (wellFormed && check.payloadVersion < 6)
        causeAdded = causeAdded ||
                     db.queryInt64("SELECT planned_audit_id IS NOT NULL FROM replay_runs WHERE id = " + std::to_string(runId)).value_or(0) != 0;
    const bool rowsHold = wellFormed && !causeAdded && runContentDigest(db, runId, check.payloadVersion) == stored;
    if (!signatureHolds || !rowsHold) {
        check.state = RunSealCheck::State::Altered;
        check.finding = signedFinding;
        std::string stillStands;
        if (signedFinding && signedFinding->failed())
            stillStands = "; when it was sealed it had found the tape at fault (" + std::to_string(signedFinding->diverged) + " diverged, " +
                    std::to_string(signedFinding->trainersFailures) + " unreplayable by the tape's own program or tape" +
                    (signedFinding->earlierFailedRuns.empty() ? std::string() : ", and earlier failed runs") + "), which still stands";
        check.explanation = "run " + std::to_string(runId) + "'s results in the case were changed after zkdv " +
                            (check.signer.empty() ? std::string("sealed them") : "sealed them with key " + check.signer) +
                            " (its rows or its seal no longer match the signature), so none of them can be trusted" + stillStands;
        return check;
    }
    check.finding = signedFinding;
    if (trustedNote) {
        check.state = RunSealCheck::State::Vouched;
        check.signer += *trustedNote;
        check.explanation = ownKey && *ownKey == key ? "sealed by this user's zkdv when the run ended, and unchanged since"
                                                     : "sealed by a trusted auditor's zkdv when the run ended, and unchanged since";
        return check;
    }
    check.state = RunSealCheck::State::UntrustedSigner;
    check.explanation = "run " + std::to_string(runId) + " was sealed by key " + check.signer +
                        ", which is not this user's and not in their trusted-keys file (" + (configFolder() / "trusted-keys").string() +
                        "), so its results cannot be vouched for; replay the selection here, or trust that auditor's key";
    return check;
}

RunSealCheck checkRunSeal(Database& db, std::int64_t runId)
{
    return checkRunSeal(db, runId, AuditorKey::existingPublicKey(), readTrustedKeys());
}

}  // namespace zkdv
