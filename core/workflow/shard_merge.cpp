#include "zkdv/workflow/shard_merge.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "zkdv/audit/pass_rule.h"
#include "zkdv/replay/planned_audit_request.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/planned_audits.h"
#include "zkdv/store/run_seal.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/progress.h"

namespace zkdv {

namespace {

[[noreturn]] void refuse(const std::string& file, const std::string& why)
{
    throw ShardMergeRefused("not merged: " + file + " " + why + "; the case is unchanged");
}

// What pass 1 reads of a shard case, and pass 2 finds again unchanged.
struct ShardHeader {
    std::string file;
    StoredReplayRun run;
    std::string chainHead;
    std::uint64_t size = 0;
    std::string host;

    unsigned index() const { return *run.shardIndex; }
    std::string shardName() const { return "shard " + std::to_string(*run.shardIndex) + "/" + std::to_string(run.shardCount); }
};

// The calibration a shard's run replayed with: its digest as the run's environment records it
// (sealed with the run), "" for none.
std::string calibrationDigest(const std::string& environmentJson)
{
    try {
        const nlohmann::json environment = parseUntrustedJson(environmentJson, "the shard run's environment");
        const auto calibration = environment.find("calibration");
        if (calibration == environment.end() || !calibration->is_object())
            return "";
        const auto sha256 = calibration->find("sha256");
        return sha256 != calibration->end() && sha256->is_string() ? sha256->get<std::string>() : std::string("unreadable");
    } catch (const FormatError&) {
        return "unreadable";
    }
}

// What a shard's run says it replayed, in the terms of a planned audit.
PlannedAudit claimedAudit(const ShardHeader& header)
{
    PlannedAudit claimed;
    claimed.chainHead = header.chainHead;
    claimed.tapeSize = header.size;
    claimed.selection = header.run.selection;
    claimed.seed = header.run.seed;
    claimed.shardCount = header.run.shardCount;
    claimed.tolerance = header.run.tolerance;
    claimed.calibrationSha256 = calibrationDigest(header.run.environmentJson);
    claimed.programCheck = header.run.programCheck;
    return claimed;
}

// A shard of another audit than the one asked for: "shard 2 (FILE): seed 17, the planned audit's is 42".
void requirePlannedAudit(const PlannedAudit& planned, const ShardHeader& header)
{
    const std::string difference = plannedAuditDifference(planned, claimedAudit(header));
    if (!difference.empty())
        throw ShardMergeRefused("not merged: shard " + std::to_string(header.index()) + " (" + header.file + "): " + difference +
                                "; it is a shard of another audit than the one planned (planned audit " +
                                (planned.id != 0 ? std::to_string(planned.id) + ", " + planned.plannedAt : std::string("stated now")) +
                                "); the case is unchanged");
}

std::unique_ptr<CaseStore> openShard(const std::string& file)
{
    std::error_code error;
    if (!std::filesystem::is_regular_file(file, error))
        refuse(file, "does not exist or is not a file");
    try {
        return std::make_unique<CaseStore>(file, CaseStore::Access::ReadOnly);
    } catch (const Error& failure) {
        refuse(file, std::string("cannot be read as a shard case: ") + failure.what());
    }
}

ShardHeader readHeader(CaseStore& shard, const std::string& file)
{
    ShardHeader header;
    header.file = file;
    const std::vector<StoredReplayRun> runs = ReplayStore(shard.database()).runs();
    if (runs.empty())
        refuse(file, "holds no replay run: its shard's replay never started, or it is not a shard case");
    if (runs.size() != 1)
        refuse(file, "holds " + std::to_string(runs.size()) + " runs, where a shard case holds the one run of its shard "
                     "(zkdv-audit replay --shard I/N --into FILE)");
    header.run = runs.front();
    const std::string runName = "its run " + std::to_string(header.run.id);
    if (!header.run.shardIndex || header.run.shardCount == 0 || *header.run.shardIndex >= header.run.shardCount)
        refuse(file, "is not a shard case: " + runName + " replayed a whole selection, not a shard of one (--shard I/N)");
    if (header.run.status != RunStatus::Finished)
        refuse(file, "holds " + header.shardName() + " unfinished (" + std::string(runStatusName(header.run.status)) +
                         (header.run.problem.empty() ? std::string() : ": " + header.run.problem) + "); replay that shard again");
    const std::optional<CaseTape> tape = shard.tape(header.run.tapeId);
    if (!tape)
        refuse(file, runName + " names tape " + std::to_string(header.run.tapeId) + ", which the file does not hold");
    header.chainHead = tape->chainHead;
    header.size = tape->size;
    header.host = runOwnerHost(shard.database(), header.run.id);
    return header;
}

// What the planned audit leaves open must still be one for all shards: with a calibration each
// node derives its envelope, and the merged run stores one tolerance.
void requireSameTolerance(const ShardHeader& first, const ShardHeader& other)
{
    if (other.run.tolerance != first.run.tolerance)
        refuse(other.file, "is a shard of another replay than " + first.file + ": its tolerance is " + other.run.tolerance + ", not " +
                               first.run.tolerance + " (a calibration gives nodes of other environments other envelopes)");
}

std::string sameFileKey(const std::string& file)
{
    std::error_code error;
    const std::filesystem::path canonical = std::filesystem::weakly_canonical(file, error);
    return error ? file : canonical.string();
}

// Which shard the plan gives each replayed transaction, for saying where a stray result belongs.
class PlanOwners {
public:
    explicit PlanOwners(const ShardedReplay& sharded)
    {
        for (const ReplayShard& shard : sharded.shards.shards)
            for (std::size_t s : shard.segments) {
                const ReplaySegment& segment = sharded.plan.segments[s];
                bySnapshot_[segment.snapshot] = {segment.lastTransaction, shard.index};
            }
        for (std::uint64_t index : sharded.unplannable)
            bySnapshot_.emplace(index, std::make_pair(index, 0u));
    }
    std::optional<unsigned> owner(std::uint64_t transaction) const
    {
        auto it = bySnapshot_.upper_bound(transaction);
        if (it == bySnapshot_.begin())
            return std::nullopt;
        --it;
        if (transaction > it->second.first)
            return std::nullopt;
        return it->second.second;
    }

private:
    std::map<std::uint64_t, std::pair<std::uint64_t, unsigned>> bySnapshot_;  // snapshot → (last, shard)
};

// The shard holds results for exactly its part of the plan: every selected transaction the
// plan gives it, once, and nothing outside its segments.
void requireItsPart(Database& db, const ShardHeader& header, const ShardedReplay& sharded, const PlanOwners& owners)
{
    const std::vector<std::uint64_t> expected = sharded.shardSelected(header.index());
    std::vector<std::uint64_t> selected;
    for (const StoredVerdict& verdict : ReplayStore(db).verdicts(header.run.id)) {
        const std::uint64_t index = verdict.index;
        const std::optional<unsigned> owner = owners.owner(index);
        if (!owner || *owner != header.index())
            refuse(header.file, "holds a result for transaction " + std::to_string(index) + ", which the plan of " +
                                    std::to_string(header.run.shardCount) + " shards gives " +
                                    (owner ? "to shard " + std::to_string(*owner) : std::string("to no shard")) + ", not to its " +
                                    header.shardName());
        if (verdict.selected)
            selected.push_back(index);
    }
    std::sort(selected.begin(), selected.end());
    if (selected == expected)
        return;
    std::vector<std::uint64_t> missing, extra;
    std::set_difference(expected.begin(), expected.end(), selected.begin(), selected.end(), std::back_inserter(missing));
    std::set_difference(selected.begin(), selected.end(), expected.begin(), expected.end(), std::back_inserter(extra));
    if (!missing.empty())
        refuse(header.file, "lacks the result of transaction " + std::to_string(missing.front()) + " (and " +
                                std::to_string(missing.size() - 1) + " more) that its " + header.shardName() + " of selection " +
                                header.run.selection + " must replay");
    refuse(header.file, "reports transaction " + std::to_string(extra.front()) + " as selected, which selection " + header.run.selection +
                            " with seed " + std::to_string(header.run.seed) + " does not choose");
}

std::string distinctJoined(const std::vector<ShardHeader>& headers, std::string (*field)(const ShardHeader&))
{
    std::vector<std::string> values;
    for (const ShardHeader& header : headers) {
        std::string value = field(header);
        if (!value.empty() && std::find(values.begin(), values.end(), value) == values.end())
            values.push_back(std::move(value));
    }
    std::string joined;
    for (const std::string& value : values)
        joined += (joined.empty() ? "" : ", ") + value;
    return joined;
}

void report(ProgressSink* progress, std::uint64_t done, std::uint64_t total, std::string_view phase)
{
    if (!progress)
        return;
    if (progress->cancelRequested())
        throw OperationCancelled();
    progress->report(done, total, phase);
}

// The keys the merge trusts: the merger's own (which seals the merged run) and their trusted ones.
struct MergeKeys {
    std::optional<AuditorKey> key;
    std::string sealProblem;  // why the merged run will be stored unsigned
    std::optional<PublicKey> ownKey;
    std::vector<TrustedKey> trusted;
};

MergeKeys mergeKeys()
{
    MergeKeys keys;
    try {
        keys.key = AuditorKey::loadOrCreate();
    } catch (const Error& error) {
        keys.sealProblem = error.what();
    }
    try {
        keys.trusted = readTrustedKeys();
        keys.ownKey = keys.key ? std::optional<PublicKey>(keys.key->publicKey()) : AuditorKey::existingPublicKey();
    } catch (const Error& error) {
        throw ShardMergeRefused(std::string("not merged: the keys that vouch for shards cannot be read: ") + error.what());
    }
    return keys;
}

// The audit the shards must be of: stated now, or planned in the case and signed by a key the
// merger trusts; never read from a shard.
PlannedAudit auditAskedFor(CaseStore& store, const ShardMergeAudit& asked, const MergeKeys& keys)
{
    if (asked.stated) {
        try {
            return plannedAuditOf(store, *asked.stated, asked.statedShards);
        } catch (const Error& error) {
            throw ShardMergeRefused(std::string("not merged: the audit stated cannot be planned on this case: ") + error.what() +
                                    "; the case is unchanged");
        }
    }
    std::optional<PlannedAudit> planned =
        asked.plannedId != 0 ? plannedAudit(store.database(), asked.plannedId) : newestPlannedAudit(store.database(), asked.tapeId);
    if (planned) {
        const std::string problem = plannedAuditSealProblem(store.database(), *planned, keys.ownKey, keys.trusted);
        if (!problem.empty())
            throw ShardMergeRefused("not merged: planned audit " + std::to_string(planned->id) + " of case " + store.path() + " is " + problem +
                                    ", so it cannot say which audit was asked for; plan the job again, or state the audit with "
                                    "--select, --seed and --shards; the case is unchanged");
        return *planned;
    }
    if (asked.plannedId != 0)
        throw ShardMergeRefused("not merged: case " + store.path() + " holds no planned audit " + std::to_string(asked.plannedId) +
                                "; the case is unchanged");
    throw ShardMergeRefused("not merged: case " + store.path() + " holds no planned audit" +
                            (asked.tapeId != 0 ? " of tape " + std::to_string(asked.tapeId) : std::string()) +
                            " to hold the shards to (zkdv-audit slurm-script and kubernetes-job record one when they plan the job); "
                            "state the audit you asked for with --select, --seed and --shards, and --tolerance and --calibration as "
                            "the shards were to replay; the case is unchanged");
}

}  // namespace

bool ShardMergeResult::passed() const { return run.id != 0 && replayRunPassed(run.status, run.diverged, run.unverifiable); }
bool ShardMergeResult::bitForBit() const
{
    return run.id != 0 && replayRunBitForBit(run.status, run.diverged, run.unverifiable, run.withinTolerance);
}
bool ShardMergeResult::failed() const { return replayRunFailed(run.diverged, run.trainersFailures); }

ShardMergeResult mergeShards(CaseStore& store, const std::vector<std::string>& shardFiles, const ShardMergeAudit& asked, ProgressSink* progress)
{
    if (shardFiles.empty())
        throw ShardMergeRefused("not merged: no shard case was given");
    // The merger vouches for the merged run with its own seal, so it takes only a planned audit
    // and shards a key it trusts sealed.
    MergeKeys keys = mergeKeys();
    PlannedAudit audit = auditAskedFor(store, asked, keys);
    const std::uint64_t steps = 2 * shardFiles.size();

    // Pass 1, cheap: what each file claims to be, so a mix-up is refused before any copying.
    std::vector<ShardHeader> headers;
    std::map<std::string, std::string> seenFiles;   // same file given twice
    std::map<unsigned, std::string> byIndex;
    const std::string caseKey = sameFileKey(store.path());
    for (const std::string& file : shardFiles) {
        report(progress, headers.size(), steps, "checking shards");
        const std::string key = sameFileKey(file);
        if (key == caseKey)
            refuse(file, "is the case being merged into, not a shard of it");
        if (auto [it, fresh] = seenFiles.emplace(key, file); !fresh)
            refuse(file, "is given twice (also as " + it->second + ")");
        std::unique_ptr<CaseStore> shard = openShard(file);
        ShardHeader header = readHeader(*shard, file);
        requirePlannedAudit(audit, header);
        if (!headers.empty())
            requireSameTolerance(headers.front(), header);
        if (auto [it, fresh] = byIndex.emplace(header.index(), file); !fresh)
            refuse(file, "holds " + header.shardName() + ", as " + it->second + " does: the same shard twice");
        headers.push_back(std::move(header));
    }
    const ShardHeader& first = headers.front();
    const unsigned count = audit.shardCount;
    std::string missing;
    unsigned missingCount = 0;
    for (unsigned i = 0; i < count; ++i)
        if (!byIndex.count(i)) {
            if (++missingCount <= 5)
                missing += (missing.empty() ? "" : ", ") + std::to_string(i);
        }
    if (missingCount > 0)
        throw ShardMergeRefused("not merged: the shards of " + std::to_string(count) + " (selection " + audit.selection + ", seed " +
                                std::to_string(audit.seed) + ") lack shard" + (missingCount > 1 ? "s " : " ") + missing +
                                (missingCount > 5 ? " and " + std::to_string(missingCount - 5) + " more" : std::string()) +
                                "; give every shard case; the case is unchanged");

    ReplayRequest request;
    request.tapeId = audit.tapeId;
    request.seed = audit.seed;
    ShardedReplay sharded;
    try {
        request.selection = SelectionSpec::parse(audit.selection);
        sharded = planShardedReplay(store, request, count);
    } catch (const Error& error) {
        throw ShardMergeRefused(std::string("not merged: the planned audit's selection cannot be planned on this case: ") + error.what() +
                                "; the case is unchanged");
    }
    const PlanOwners owners(sharded);
    std::sort(headers.begin(), headers.end(), [](const ShardHeader& a, const ShardHeader& b) { return a.index() < b.index(); });

    // Pass 2: each shard read in one transaction, its seal checked and its rows copied under
    // the same snapshot, all inside one write transaction of the case.
    Database& db = store.database();
    BusyTimeout wait(db, ReplayStore::kLongWriteWaitMs);
    SqlTransaction transaction(db);
    if (audit.id == 0)  // stated now: the merged run names it like a planned one
        storePlannedAudit(db, audit, keys.key ? &*keys.key : nullptr);
    MergedRunRow row;
    row.info.tapeId = audit.tapeId;
    row.info.device = distinctJoined(headers, [](const ShardHeader& h) { return h.run.device; });
    row.info.libtorchVersion = distinctJoined(headers, [](const ShardHeader& h) { return h.run.libtorchVersion; });
    row.info.selection = audit.selection;
    row.info.seed = audit.seed;
    row.info.seedSource = audit.seedSource;
    row.info.tolerance = first.run.tolerance;
    row.info.intraOpThreads = first.run.intraOpThreads;
    row.info.environmentJson = first.run.environmentJson;
    row.info.programCheck = audit.programCheck.value_or(ProgramCheck::Missing);  // a planned audit always has one
    row.shardCount = count;
    row.plannedAuditId = audit.id;
    row.startedAt = first.run.startedAt;
    row.finishedAt = first.run.finishedAt;
    std::int64_t threads = 0;
    for (const ShardHeader& header : headers) {
        row.startedAt = std::min(row.startedAt, header.run.startedAt);
        row.finishedAt = std::max(row.finishedAt, header.run.finishedAt);
        threads += header.run.threads;
        row.info.selectedCount += header.run.selectedCount;
    }
    row.info.threads = static_cast<unsigned>(threads);
    row.problem = distinctJoined(headers, [](const ShardHeader& h) { return h.run.problem; });
    const std::int64_t runId = insertMergedRun(db, row);

    std::vector<MergedShard> merged;
    for (const ShardHeader& header : headers) {
        report(progress, headers.size() + merged.size(), steps, "merging shards");
        std::unique_ptr<CaseStore> shard = openShard(header.file);
        Database& shardDb = shard->database();
        const ShardReadSnapshot snapshot(shardDb);
        const ShardHeader again = readHeader(*shard, header.file);
        if (again.run.id != header.run.id || again.index() != header.index() || again.run.tolerance != header.run.tolerance ||
            !plannedAuditDifference(audit, claimedAudit(again)).empty())
            refuse(header.file, "changed while the merge read it");
        const RunSealCheck seal = checkRunSeal(shardDb, header.run.id, keys.ownKey, keys.trusted);
        if (!seal.vouched())
            refuse(header.file, "holds " + header.shardName() + " whose seal is " + runSealStateName(seal.state) + ": " + seal.explanation);
        requireItsPart(shardDb, header, sharded, owners);
        copyRunResults(shardDb, header.run.id, db, runId);
        MergedShard entry;
        entry.index = header.index();
        entry.file = header.file;
        entry.shardRunId = header.run.id;
        entry.host = header.host;
        entry.device = header.run.device;
        entry.libtorchVersion = header.run.libtorchVersion;
        entry.signer = seal.signer;
        entry.sealedAt = seal.sealedAt;
        entry.startedAt = header.run.startedAt;
        entry.finishedAt = header.run.finishedAt;
        entry.replayed = header.run.replayed;
        merged.push_back(std::move(entry));
    }
    storeMergedShards(db, runId, merged);
    if (keys.key)
        sealRun(db, runId, *keys.key, keys.trusted);
    transaction.commit();
    report(progress, steps, steps, "merging shards");

    ShardMergeResult result;
    for (StoredReplayRun& run : ReplayStore(db).runs(audit.tapeId))
        if (run.id == runId)
            result.run = std::move(run);
    result.audit = std::move(audit);
    result.shards = std::move(merged);
    result.sealProblem = keys.sealProblem;
    return result;
}

}  // namespace zkdv
