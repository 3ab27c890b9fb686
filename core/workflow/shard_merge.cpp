#include "zkdv/workflow/shard_merge.h"

#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "zkdv/audit/pass_rule.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/run_seal.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/progress.h"
#include "zkdv/version.h"

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

// The host part of RunOwner::host ("box/pid:[4026531836]").
std::string hostOf(const std::string& owner)
{
    return owner.substr(0, owner.find('/'));
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
    Statement owner = shard.database().prepare("SELECT coalesce(owner_host, '') FROM replay_runs WHERE id = ?1");
    owner.bind(1, header.run.id);
    if (owner.step())
        header.host = hostOf(owner.text(0));
    return header;
}

// Every shard must be one of the same replay as the first: the tape, selection, seed, count,
// tolerance and program check are what make their results one run.
void requireSameReplay(const ShardHeader& first, const ShardHeader& other)
{
    auto differs = [&](const std::string& what, const std::string& mine, const std::string& theirs) {
        refuse(other.file, "is a shard of another replay than " + first.file + ": its " + what + " is " + theirs + ", not " + mine);
    };
    if (other.chainHead != first.chainHead || other.size != first.size)
        differs("tape", first.chainHead.substr(0, 16) + "… (" + std::to_string(first.size) + " bytes)",
                other.chainHead.substr(0, 16) + "… (" + std::to_string(other.size) + " bytes)");
    if (other.run.shardCount != first.run.shardCount)
        differs("shard count", std::to_string(first.run.shardCount), std::to_string(other.run.shardCount));
    if (other.run.selection != first.run.selection)
        differs("selection", first.run.selection, other.run.selection);
    if (other.run.seed != first.run.seed)
        differs("seed", std::to_string(first.run.seed), std::to_string(other.run.seed));
    if (other.run.tolerance != first.run.tolerance)
        differs("tolerance", first.run.tolerance, other.run.tolerance);
    const auto checkName = [](const StoredReplayRun& run) { return run.programCheck ? std::string(programCheckName(*run.programCheck)) : "unknown"; };
    if (checkName(other.run) != checkName(first.run))
        differs("program check", checkName(first.run), checkName(other.run));
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
    Statement rows = db.prepare("SELECT idx, selected FROM verdicts WHERE run_id = ?1 ORDER BY idx");
    rows.bind(1, header.run.id);
    std::vector<std::uint64_t> selected;
    while (rows.step()) {
        const auto index = static_cast<std::uint64_t>(rows.int64(0));
        const std::optional<unsigned> owner = owners.owner(index);
        if (!owner || *owner != header.index())
            refuse(header.file, "holds a result for transaction " + std::to_string(index) + ", which the plan of " +
                                    std::to_string(header.run.shardCount) + " shards gives " +
                                    (owner ? "to shard " + std::to_string(*owner) : std::string("to no shard")) + ", not to its " +
                                    header.shardName());
        if (rows.int64(1) != 0)
            selected.push_back(index);
    }
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

// Copies the named columns of `table`'s rows of run `fromRun` as SQLite holds them.
void copyRows(Database& from, std::int64_t fromRun, Database& to, std::int64_t toRun, const std::string& table, const std::string& columns)
{
    Statement read = from.prepare("SELECT " + columns + " FROM " + table + " WHERE run_id = ?1");
    read.bind(1, fromRun);
    const int count = read.columnCount();
    std::string placeholders = "?1";
    for (int c = 0; c < count; ++c)
        placeholders += ", ?" + std::to_string(c + 2);
    Statement write = to.prepare("INSERT INTO " + table + "(run_id, " + columns + ") VALUES(" + placeholders + ")");
    while (read.step()) {
        write.bind(1, toRun);
        for (int c = 0; c < count; ++c)
            sqlite3_bind_value(write.handle(), c + 2, sqlite3_column_value(read.handle(), c));
        write.run();
    }
}

constexpr const char* kVerdictColumns =
    "idx, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2, replay_ns, cause";
constexpr const char* kMetricColumns =
    "idx, tensor, slot, max_abs, rel_l2, cosine, max_ulp, mean_ulp, nan_mismatches, inf_mismatches, ulp_histogram, verdict, elements,"
    " bitwise_equal, note";

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

}  // namespace

bool ShardMergeResult::passed() const { return run.id != 0 && replayRunPassed(run.status, run.diverged, run.unverifiable); }
bool ShardMergeResult::failed() const { return replayRunFailed(run.diverged, run.trainersFailures); }

ShardMergeResult mergeShards(CaseStore& store, const std::vector<std::string>& shardFiles, ProgressSink* progress)
{
    if (shardFiles.empty())
        throw ShardMergeRefused("not merged: no shard case was given");
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
        if (!headers.empty())
            requireSameReplay(headers.front(), header);
        if (auto [it, fresh] = byIndex.emplace(header.index(), file); !fresh)
            refuse(file, "holds " + header.shardName() + ", as " + it->second + " does: the same shard twice");
        headers.push_back(std::move(header));
    }
    const ShardHeader& first = headers.front();
    const unsigned count = first.run.shardCount;
    std::string missing;
    unsigned missingCount = 0;
    for (unsigned i = 0; i < count; ++i)
        if (!byIndex.count(i)) {
            if (++missingCount <= 5)
                missing += (missing.empty() ? "" : ", ") + std::to_string(i);
        }
    if (missingCount > 0)
        throw ShardMergeRefused("not merged: the shards of " + std::to_string(count) + " (selection " + first.run.selection + ", seed " +
                                std::to_string(first.run.seed) + ") lack shard" + (missingCount > 1 ? "s " : " ") + missing +
                                (missingCount > 5 ? " and " + std::to_string(missingCount - 5) + " more" : std::string()) +
                                "; give every shard case; the case is unchanged");

    const std::vector<CaseTape> tapes = store.tapes();
    const auto tape = std::find_if(tapes.begin(), tapes.end(), [&](const CaseTape& t) { return t.chainHead == first.chainHead && t.size == first.size; });
    if (tape == tapes.end())
        refuse(first.file, "is a shard of a tape this case does not hold (chain head " + first.chainHead.substr(0, 16) + "…, " +
                               std::to_string(first.size) + " bytes); ingest that tape, or merge into the case the shards were made from");

    ReplayRequest request;
    request.tapeId = tape->id;
    request.seed = first.run.seed;
    ShardedReplay sharded;
    try {
        request.selection = SelectionSpec::parse(first.run.selection);
        sharded = planShardedReplay(store, request, count);
    } catch (const Error& error) {
        refuse(first.file, std::string("names a selection this case cannot plan: ") + error.what());
    }
    const PlanOwners owners(sharded);
    std::sort(headers.begin(), headers.end(), [](const ShardHeader& a, const ShardHeader& b) { return a.index() < b.index(); });

    // The merger vouches for the merged run with its own seal, so it takes only shards a key
    // it trusts sealed.
    std::optional<AuditorKey> key;
    std::string sealProblem;
    try {
        key = AuditorKey::loadOrCreate();
    } catch (const Error& error) {
        sealProblem = error.what();
    }
    std::vector<TrustedKey> trusted;
    std::optional<PublicKey> ownKey;
    try {
        trusted = readTrustedKeys();
        ownKey = key ? std::optional<PublicKey>(key->publicKey()) : AuditorKey::existingPublicKey();
    } catch (const Error& error) {
        throw ShardMergeRefused(std::string("not merged: the keys that vouch for shards cannot be read: ") + error.what());
    }

    // Pass 2: each shard read in one transaction, its seal checked and its rows copied under
    // the same snapshot, all inside one write transaction of the case.
    Database& db = store.database();
    BusyTimeout wait(db, ReplayStore::kLongWriteWaitMs);
    SqlTransaction transaction(db);
    Statement insertRun = db.prepare(
        "INSERT INTO replay_runs(tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
        " finished_at, status, intra_op_threads, selected_count, environment, problem, seed_source, program_check, shard_count)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'finished', ?11, ?12, ?13, ?14, 'given', ?15, ?16)");
    std::string startedAt = first.run.startedAt, finishedAt = first.run.finishedAt;
    std::int64_t threads = 0;
    std::uint64_t selectedCount = 0;
    for (const ShardHeader& header : headers) {
        startedAt = std::min(startedAt, header.run.startedAt);
        finishedAt = std::max(finishedAt, header.run.finishedAt);
        threads += header.run.threads;
        selectedCount += header.run.selectedCount;
    }
    const std::string problems = distinctJoined(headers, [](const ShardHeader& h) { return h.run.problem; });
    insertRun.bind(1, tape->id)
        .bind(2, distinctJoined(headers, [](const ShardHeader& h) { return h.run.device; }))
        .bind(3, distinctJoined(headers, [](const ShardHeader& h) { return h.run.libtorchVersion; }))
        .bind(4, std::string(kVersion))
        .bind(5, first.run.selection)
        .bind(6, static_cast<std::int64_t>(first.run.seed))
        .bind(7, first.run.tolerance)
        .bind(8, threads)
        .bind(9, startedAt)
        .bind(10, finishedAt)
        .bind(11, first.run.intraOpThreads)
        .bind(12, static_cast<std::int64_t>(selectedCount))
        .bind(13, first.run.environmentJson);
    if (problems.empty())
        insertRun.bindNull(14);
    else
        insertRun.bind(14, problems);
    if (first.run.programCheck)
        insertRun.bind(15, std::string(programCheckName(*first.run.programCheck)));
    else
        insertRun.bindNull(15);
    insertRun.bind(16, static_cast<std::int64_t>(count));
    insertRun.run();
    const std::int64_t runId = db.lastInsertRowId();

    std::vector<MergedShard> merged;
    for (const ShardHeader& header : headers) {
        report(progress, headers.size() + merged.size(), steps, "merging shards");
        std::unique_ptr<CaseStore> shard = openShard(header.file);
        Database& shardDb = shard->database();
        shardDb.exec("BEGIN");
        const ShardHeader again = readHeader(*shard, header.file);
        if (again.run.id != header.run.id || again.index() != header.index() || again.chainHead != header.chainHead ||
            again.run.selection != header.run.selection || again.run.seed != header.run.seed)
            refuse(header.file, "changed while the merge read it");
        const RunSealCheck seal = checkRunSeal(shardDb, header.run.id, ownKey, trusted);
        if (!seal.vouched())
            refuse(header.file, "holds " + header.shardName() + " whose seal is " + runSealStateName(seal.state) + ": " + seal.explanation);
        requireItsPart(shardDb, header, sharded, owners);
        copyRows(shardDb, header.run.id, db, runId, "verdicts", kVerdictColumns);
        copyRows(shardDb, header.run.id, db, runId, "metrics", kMetricColumns);
        shardDb.exec("ROLLBACK");  // read only: ends the read transaction
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
    if (key)
        sealRun(db, runId, *key, trusted);
    transaction.commit();
    report(progress, steps, steps, "merging shards");

    ShardMergeResult result;
    for (StoredReplayRun& run : ReplayStore(db).runs(tape->id))
        if (run.id == runId)
            result.run = std::move(run);
    result.shards = std::move(merged);
    result.sealProblem = sealProblem;
    return result;
}

}  // namespace zkdv
