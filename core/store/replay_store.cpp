#include "zkdv/store/replay_store.h"

#include "run_row.h"

#include <chrono>
#include <cstring>
#include <limits>
#include <ctime>

#include "zkdv/store/database.h"
#include "zkdv/store/run_owner.h"
#include "zkdv/store/run_seal.h"
#include "zkdv/store/transaction_count.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/utc_time.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/version.h"

namespace zkdv {

namespace {

Digest digestFromBlob(ByteSpan blob)
{
    Digest digest{};
    if (blob.size == digest.size())
        std::memcpy(digest.data(), blob.data, digest.size());
    return digest;
}

RecordRef refFromRow(const Statement& row)
{
    RecordRef ref;
    ref.index = static_cast<std::uint64_t>(row.int64(0));
    ref.offset = static_cast<std::uint64_t>(row.int64(1));
    ref.frameSize = static_cast<std::uint64_t>(row.int64(2));
    ref.digest = digestFromBlob(row.blob(3));
    return ref;
}

// The histogram without its trailing empty bins, as little-endian u64 counts.
std::vector<std::uint8_t> histogramBlob(const UlpHistogram& histogram)
{
    std::size_t used = histogram.size();
    while (used > 0 && histogram[used - 1] == 0)
        --used;
    std::vector<std::uint8_t> blob(used * 8);
    for (std::size_t i = 0; i < used; ++i)
        writeLittleEndian<std::uint64_t>(blob.data() + 8 * i, histogram[i]);
    return blob;
}

UlpHistogram histogramFromBlob(ByteSpan blob)
{
    UlpHistogram histogram{};
    for (std::size_t i = 0; i < histogram.size() && 8 * i + 8 <= blob.size; ++i)
        histogram[i] = readLittleEndian<std::uint64_t>(blob.data + 8 * i);
    return histogram;
}

}  // namespace

std::string interruptedRunProblem(const RunOwner& owner)
{
    return "the replay process (" + owner.describe() +
           ") ended before the run finished: it was killed or crashed, or the machine restarted; the verdicts it stored are kept";
}

void ReplayStore::markInterruptedRuns()
{
    std::vector<std::pair<std::int64_t, RunOwner>> gone;
    {
        Statement running = db_.prepare(
            "SELECT id, owner_host, coalesce(owner_boot_id, ''), coalesce(owner_pid, 0), coalesce(owner_start_time, 0)"
            " FROM replay_runs WHERE status = 'running' AND owner_host IS NOT NULL");
        while (running.step()) {
            RunOwner owner{running.text(1), running.text(2), running.int64(3), running.int64(4)};
            if (owner.isGone())
                gone.emplace_back(running.int64(0), owner);
        }
    }
    if (gone.empty())
        return;
    SqlTransaction transaction(db_);
    Statement mark = db_.prepare(
        "UPDATE replay_runs SET status = 'interrupted', finished_at = ?1, problem = ?2 WHERE id = ?3 AND status = 'running'");
    for (const auto& [id, owner] : gone)
        mark.bind(1, utcNow()).bind(2, interruptedRunProblem(owner)).bind(3, id).run();
    transaction.commit();
}

SelectionInput ReplayStore::selectionInput(std::int64_t tapeId, bool withUpdateNorms)
{
    SelectionInput input;
    Statement tape = db_.prepare(
        "SELECT transaction_count, snapshot_interval, (SELECT count(*) FROM tensors WHERE tape_id = ?1 AND kind = 'parameter')"
        " FROM tapes WHERE id = ?1");
    tape.bind(1, tapeId);
    if (!tape.step())
        return input;
    input.transactionCount = checkedTransactionCount(db_, tapeId, tape.int64(0), CountCheck::CountRows);  // it reads every row next
    input.snapshotInterval = static_cast<std::uint64_t>(std::max<std::int64_t>(1, tape.int64(1)));
    input.parameterCount = static_cast<std::size_t>(tape.int64(2));
    input.hasSampledCheck.assign(input.transactionCount, false);
    if (withUpdateNorms)
        input.updateL2.assign(input.transactionCount * input.parameterCount, 0.0);
    Statement rows = db_.prepare(withUpdateNorms
                                     ? "SELECT idx, has_deltas OR has_state_digest, fingerprints FROM transactions WHERE tape_id = ?1"
                                     : "SELECT idx, has_deltas OR has_state_digest FROM transactions WHERE tape_id = ?1");
    rows.bind(1, tapeId);
    while (rows.step()) {
        const auto index = static_cast<std::uint64_t>(rows.int64(0));
        if (index >= input.transactionCount)
            continue;
        input.hasSampledCheck[index] = rows.int64(1) != 0;
        if (withUpdateNorms) {
            // fingerprints: per parameter (l2, max_abs) as native doubles, written by ingest.
            const ByteSpan blob = rows.blob(2);
            const std::size_t pairs = std::min(input.parameterCount, blob.size / (2 * sizeof(double)));
            for (std::size_t p = 0; p < pairs; ++p)
                std::memcpy(&input.updateL2[index * input.parameterCount + p], blob.data + 2 * p * sizeof(double), sizeof(double));
        }
    }
    return input;
}

std::vector<std::uint64_t> ReplayStore::snapshotTransactions(std::int64_t tapeId)
{
    Statement rows = db_.prepare("SELECT before_transaction FROM snapshots WHERE tape_id = ?1 ORDER BY before_transaction");
    rows.bind(1, tapeId);
    std::vector<std::uint64_t> result;
    while (rows.step())
        result.push_back(static_cast<std::uint64_t>(rows.int64(0)));
    return result;
}

std::vector<std::uint64_t> ReplayStore::transactionWallTimes(std::int64_t tapeId)
{
    Statement rows = db_.prepare("SELECT idx, wall_time_ns FROM transactions WHERE tape_id = ?1 ORDER BY idx");
    rows.bind(1, tapeId);
    std::vector<std::uint64_t> result;
    while (rows.step()) {
        const std::int64_t index = rows.int64(0);
        // A hostile case's index must not make this allocate: indices past the rows are skipped.
        if (index < 0 || static_cast<std::uint64_t>(index) != result.size())
            continue;
        const std::int64_t ns = rows.isNull(1) ? 0 : rows.int64(1);
        result.push_back(ns > 0 ? static_cast<std::uint64_t>(ns) : 0);
    }
    return result;
}

std::optional<RecordRef> ReplayStore::transactionRecord(std::int64_t tapeId, std::uint64_t index)
{
    Statement row = db_.prepare(
        "SELECT record_index, record_offset, record_length, record_digest FROM transactions WHERE tape_id = ?1 AND idx = ?2");
    row.bind(1, tapeId).bind(2, static_cast<std::int64_t>(index));
    if (!row.step())
        return std::nullopt;
    return refFromRow(row);
}

std::optional<RecordRef> ReplayStore::snapshotRecord(std::int64_t tapeId, std::uint64_t beforeTransaction)
{
    Statement row = db_.prepare(
        "SELECT record_index, record_offset, record_length, record_digest FROM snapshots WHERE tape_id = ?1 AND before_transaction = ?2");
    row.bind(1, tapeId).bind(2, static_cast<std::int64_t>(beforeTransaction));
    if (!row.step())
        return std::nullopt;
    return refFromRow(row);
}

std::optional<std::vector<std::uint8_t>> ReplayStore::programBytes(const std::string& sha256Hex)
{
    Statement row = db_.prepare("SELECT content FROM programs WHERE sha256 = ?1 AND content IS NOT NULL");
    row.bind(1, sha256Hex);
    if (!row.step())
        return std::nullopt;
    const ByteSpan blob = row.blob(0);
    return std::vector<std::uint8_t>(blob.begin(), blob.end());
}

std::optional<std::vector<std::uint8_t>> ReplayStore::embeddedPayload(std::int64_t tapeId, std::uint64_t recordIndex)
{
    Statement row = db_.prepare("SELECT content FROM payloads WHERE tape_id = ?1 AND record_index = ?2");
    row.bind(1, tapeId).bind(2, static_cast<std::int64_t>(recordIndex));
    if (!row.step())
        return std::nullopt;
    const ByteSpan blob = row.blob(0);
    return std::vector<std::uint8_t>(blob.begin(), blob.end());
}

std::int64_t ReplayStore::beginRun(const ReplayRunInfo& info)
{
    BusyTimeout wait(db_, kLongWriteWaitMs);
    SqlTransaction transaction(db_);
    RunRowFacts facts;
    facts.status = std::string(storedRunStatusName(RunStatus::Running));
    facts.startedAt = utcNow();
    // The process that will store this run's results: while it lives the run is `running`.
    facts.owner = RunOwner::current();
    if (info.shard) {
        facts.shardIndex = static_cast<std::int64_t>(info.shard->index);
        facts.shardCount = static_cast<std::int64_t>(info.shard->count);
    }
    const std::int64_t id = insertRunRow(db_, info, facts);
    transaction.commit();
    return id;
}

void ReplayStore::storeOutcomes(std::int64_t runId, const std::vector<TransactionOutcome>& outcomes)
{
    if (!pending_.empty() && pendingRun_ != runId) {  // another run's, kept: store them first
        BusyTimeout wait(db_, kLongWriteWaitMs);
        SqlTransaction transaction(db_);
        writePending();
        transaction.commit();
        pending_.clear();
    }
    pendingRun_ = runId;
    pending_.insert(pending_.end(), outcomes.begin(), outcomes.end());
    if (pending_.empty())
        return;
    try {
        BusyTimeout wait(db_, kBatchWriteWaitMs);
        SqlTransaction transaction(db_);
        writePending();
        transaction.commit();
        pending_.clear();
    } catch (const DatabaseError& error) {
        // Locked by another writer: the transaction rolled back and the outcomes stay
        // pending, for the next batch or finishRun().
        if (!error.busy())
            throw;
    }
}

// Inserts the pending outcomes inside the caller's transaction; the caller clears them once
// it has committed.
void ReplayStore::writePending()
{
    const std::int64_t runId = pendingRun_;
    const std::vector<TransactionOutcome>& outcomes = pending_;
    Statement verdict = db_.prepare(
        "INSERT OR REPLACE INTO verdicts(run_id, idx, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp,"
        " worst_rel_l2, replay_ns, cause) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
    Statement metric = db_.prepare(
        "INSERT OR REPLACE INTO metrics(run_id, idx, tensor, slot, max_abs, rel_l2, cosine, max_ulp, mean_ulp, nan_mismatches,"
        " inf_mismatches, ulp_histogram, verdict, elements, bitwise_equal, note)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)");
    for (const TransactionOutcome& outcome : outcomes) {
        const TensorComparison* worst = outcome.worst();
        verdict.bind(1, runId)
            .bind(2, static_cast<std::int64_t>(outcome.index))
            .bind(3, verdictName(outcome.verdict))
            .bind(4, outcome.detail)
            .bind(5, static_cast<std::int64_t>(outcome.segment))
            .bind(6, outcome.selected ? 1 : 0);
        if (worst) {
            verdict.bind(7, worst->tensor).bind(8, worst->slot).bind(9, worst->metrics.maxUlp).bind(10, worst->metrics.relativeL2);
        } else {
            verdict.bindNull(7).bindNull(8).bindNull(9).bindNull(10);
        }
        verdict.bind(11, static_cast<std::int64_t>(outcome.replayNs));
        if (outcome.verdict == Verdict::Unverifiable)
            verdict.bind(12, unverifiableCauseName(outcome.cause == UnverifiableCause::None ? UnverifiableCause::Environment : outcome.cause));
        else
            verdict.bindNull(12);
        verdict.run();
        for (const TensorComparison& comparison : outcome.comparisons) {
            const DivergenceMetrics& m = comparison.metrics;
            const std::vector<std::uint8_t> histogram = histogramBlob(m.ulpHistogram);
            metric.bind(1, runId)
                .bind(2, static_cast<std::int64_t>(outcome.index))
                .bind(3, comparison.tensor)
                .bind(4, comparison.slot)
                .bind(5, m.maxAbs)
                .bind(6, m.relativeL2)
                .bind(7, m.cosine)
                .bind(8, m.maxUlp)
                .bind(9, m.meanUlp)
                .bind(10, static_cast<std::int64_t>(m.nanMismatches))
                .bind(11, static_cast<std::int64_t>(m.infMismatches))
                .bindBlob(12, ByteSpan(histogram))
                .bind(13, verdictName(comparison.verdict))
                .bind(14, static_cast<std::int64_t>(m.elements))
                .bind(15, m.bitwiseEqual ? 1 : 0)
                .bind(16, comparison.note);
            metric.run();
        }
    }
}

std::string ReplayStore::finishRun(std::int64_t runId, RunStatus status, const std::string& problem)
{
    // The key is read before the write lock is taken; a run whose key cannot be had is
    // stored all the same, unsigned, since its results are worth keeping even if no report
    // can be made from them.
    std::optional<AuditorKey> key;
    std::vector<TrustedKey> trusted;
    std::string sealProblem;
    try {
        key = AuditorKey::loadOrCreate();
    } catch (const Error& error) {
        sealProblem = error.what();
    }
    try {
        trusted = readTrustedKeys();
    } catch (const Error&) {
        // Only the earlier runs this user sealed count for the seal's record of earlier failures.
    }
    BusyTimeout wait(db_, kLongWriteWaitMs);
    SqlTransaction transaction(db_);
    if (!pending_.empty())
        writePending();
    Statement update = db_.prepare("UPDATE replay_runs SET status = ?1, finished_at = ?2, problem = ?3 WHERE id = ?4");
    update.bind(1, std::string(storedRunStatusName(status))).bind(2, utcNow());
    if (problem.empty())
        update.bindNull(3);
    else
        update.bind(3, problem);
    update.bind(4, runId).run();
    if (key)
        sealRun(db_, runId, *key, trusted);
    transaction.commit();
    pending_.clear();
    return sealProblem;
}

std::vector<StoredReplayRun> ReplayStore::runs(std::int64_t tapeId)
{
    Statement rows = db_.prepare(
        "SELECT r.id, r.tape_id, r.device, coalesce(r.libtorch_version, ''), coalesce(r.zkdv_version, ''), r.selection_spec,"
        " coalesce(r.seed, 0), coalesce(r.tolerance, ''), coalesce(r.threads, 0), coalesce(r.intra_op_threads, 0), r.started_at,"
        " coalesce(r.finished_at, ''), r.status, coalesce(r.problem, ''), coalesce(r.environment, '{}'), coalesce(r.selected_count, 0),"
        " (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id),"
        " (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id AND v.verdict = 'exact'),"
        " (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id AND v.verdict = 'within-tolerance'),"
        " (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id AND v.verdict = 'diverged'),"
        " (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id AND v.verdict = 'unverifiable'),"
        " coalesce(r.owner_host, ''), coalesce(r.owner_boot_id, ''), coalesce(r.owner_pid, 0), coalesce(r.owner_start_time, 0),"
        " (SELECT count(*) FROM verdicts v WHERE v.run_id = r.id AND v.verdict = 'unverifiable'"
        "  AND coalesce(v.cause, 'environment') <> 'environment'),"
        " coalesce(r.seed_source, ''), coalesce(r.program_check, ''), r.shard_index, coalesce(r.shard_count, 0)"
        " FROM replay_runs r WHERE ?1 = 0 OR r.tape_id = ?1 ORDER BY r.id DESC");
    rows.bind(1, tapeId);
    std::vector<StoredReplayRun> result;
    while (rows.step()) {
        StoredReplayRun run;
        run.id = rows.int64(0);
        run.tapeId = rows.int64(1);
        run.device = rows.text(2);
        run.libtorchVersion = rows.text(3);
        run.zkdvVersion = rows.text(4);
        run.selection = rows.text(5);
        run.seed = static_cast<std::uint64_t>(rows.int64(6));
        run.seedSource = seedSourceFromName(rows.text(26));
        run.programCheck = programCheckFromName(rows.text(27));
        run.tolerance = rows.text(7);
        run.threads = static_cast<int>(rows.int64(8));
        run.intraOpThreads = static_cast<int>(rows.int64(9));
        run.startedAt = rows.text(10);
        run.finishedAt = rows.text(11);
        // A name no zkdv writes (a row edited by hand) counts as a failed run.
        run.status = runStatusFromName(rows.text(12)).value_or(RunStatus::Failed);
        run.problem = rows.text(13);
        run.environmentJson = rows.text(14);
        run.selectedCount = static_cast<std::uint64_t>(rows.int64(15));
        run.replayed = static_cast<std::uint64_t>(rows.int64(16));
        run.exact = static_cast<std::uint64_t>(rows.int64(17));
        run.withinTolerance = static_cast<std::uint64_t>(rows.int64(18));
        run.diverged = static_cast<std::uint64_t>(rows.int64(19));
        run.unverifiable = static_cast<std::uint64_t>(rows.int64(20));
        run.trainersFailures = static_cast<std::uint64_t>(rows.int64(25));
        if (!rows.isNull(28))
            run.shardIndex = static_cast<unsigned>(rows.int64(28));
        run.shardCount = static_cast<unsigned>(rows.int64(29));
        if (run.status == RunStatus::Running) {
            // A reader may not write, so it shows a run whose process is gone as what the next
            // writable open will record (CaseStore).
            RunOwner owner{rows.text(21), rows.text(22), rows.int64(23), rows.int64(24)};
            if (owner.isGone()) {
                run.status = RunStatus::Interrupted;
                run.problem = interruptedRunProblem(owner);
            }
        }
        result.push_back(std::move(run));
    }
    return result;
}

std::vector<StoredVerdict> ReplayStore::verdicts(std::int64_t runId)
{
    Statement rows = db_.prepare(
        "SELECT idx, coalesce(segment, 0), selected, verdict, coalesce(detail, ''), coalesce(worst_tensor, ''), coalesce(worst_slot, ''),"
        " coalesce(worst_max_ulp, 0), coalesce(worst_rel_l2, 0), coalesce(replay_ns, 0), coalesce(cause, '')"
        " FROM verdicts WHERE run_id = ?1 ORDER BY idx");
    rows.bind(1, runId);
    std::vector<StoredVerdict> result;
    while (rows.step()) {
        StoredVerdict v;
        v.index = static_cast<std::uint64_t>(rows.int64(0));
        v.segment = static_cast<std::uint64_t>(rows.int64(1));
        v.selected = rows.int64(2) != 0;
        v.verdict = verdictOrUnverifiable(rows.text(3));
        v.detail = rows.text(4);
        v.worstTensor = rows.text(5);
        v.worstSlot = rows.text(6);
        v.worstMaxUlp = rows.real(7);
        v.worstRelativeL2 = rows.real(8);
        v.replayNs = static_cast<std::uint64_t>(rows.int64(9));
        if (v.verdict == Verdict::Unverifiable)
            v.cause = unverifiableCauseOrEnvironment(rows.text(10));
        result.push_back(std::move(v));
    }
    return result;
}

namespace {

// The columns of a metrics row, in the order metricFromRow reads them (after idx).
constexpr const char* kMetricColumns =
    "SELECT idx, tensor, slot, coalesce(verdict, 'exact'), max_abs, rel_l2, cosine, max_ulp, mean_ulp, coalesce(nan_mismatches, 0),"
    " coalesce(inf_mismatches, 0), ulp_histogram, coalesce(elements, 0), coalesce(bitwise_equal, 0), coalesce(note, '') FROM metrics";

// SQLite stores a NaN as NULL, so NULL reads back as NaN.
double realOrNan(const Statement& row, int column)
{
    return row.isNull(column) ? std::numeric_limits<double>::quiet_NaN() : row.real(column);
}

TensorComparison metricFromRow(const Statement& row)
{
    TensorComparison c;
    c.tensor = row.text(1);
    c.slot = row.text(2);
    c.verdict = verdictOrUnverifiable(row.text(3));
    c.metrics.maxAbs = realOrNan(row, 4);
    c.metrics.relativeL2 = realOrNan(row, 5);
    c.metrics.cosine = realOrNan(row, 6);
    c.metrics.maxUlp = realOrNan(row, 7);
    c.metrics.meanUlp = realOrNan(row, 8);
    c.metrics.nanMismatches = static_cast<std::uint64_t>(row.int64(9));
    c.metrics.infMismatches = static_cast<std::uint64_t>(row.int64(10));
    c.metrics.ulpHistogram = histogramFromBlob(row.blob(11));
    c.metrics.elements = static_cast<std::uint64_t>(row.int64(12));
    c.metrics.bitwiseEqual = row.int64(13) != 0;
    c.note = row.text(14);
    return c;
}

}  // namespace

std::vector<TensorComparison> ReplayStore::comparisons(std::int64_t runId, std::uint64_t index)
{
    Statement rows = db_.prepare(std::string(kMetricColumns) + " WHERE run_id = ?1 AND idx = ?2 ORDER BY tensor, slot");
    rows.bind(1, runId).bind(2, static_cast<std::int64_t>(index));
    std::vector<TensorComparison> result;
    while (rows.step())
        result.push_back(metricFromRow(rows));
    return result;
}

void ReplayStore::forEachComparison(std::int64_t runId, const std::function<void(std::uint64_t, TensorComparison&&)>& visit)
{
    Statement rows = db_.prepare(std::string(kMetricColumns) + " WHERE run_id = ?1 ORDER BY idx, tensor, slot");
    rows.bind(1, runId);
    while (rows.step())
        visit(static_cast<std::uint64_t>(rows.int64(0)), metricFromRow(rows));
}

}  // namespace zkdv
