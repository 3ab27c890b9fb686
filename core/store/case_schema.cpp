#include "zkdv/store/case_schema.h"

#include "legacy_program_check.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <sqlite3.h>

#include "normalized_sql.h"

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"
#include "zkdv/version.h"

namespace zkdv {

namespace {

// One step forward: the script takes a case at the previous entry's version (0 for an empty
// file) to `version`. Entries are only ever appended; a released script never changes,
// because cases in the field were built by it.
struct Migration {
    int version;
    const char* script;
};

static_assert(CaseSchema::kApplicationId == 1514882134, "migration 1 spells the application id out");

const Migration kMigrations[] = {
    {1, R"sql(
CREATE TABLE case_info(
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE tapes(
    id INTEGER PRIMARY KEY,
    file_sha256 TEXT NOT NULL UNIQUE,
    chain_head TEXT NOT NULL,
    path TEXT NOT NULL,
    size INTEGER NOT NULL,
    status TEXT NOT NULL CHECK(status IN ('sealed','unsealed','truncated')),
    format_major INTEGER NOT NULL,
    format_minor INTEGER NOT NULL,
    root_json TEXT NOT NULL,
    producer TEXT,
    optimizer_contract TEXT,
    snapshot_interval INTEGER,
    program_sha256 TEXT,
    program_kind TEXT,
    record_count INTEGER NOT NULL,
    transaction_count INTEGER NOT NULL,
    snapshot_count INTEGER NOT NULL,
    embedded INTEGER NOT NULL DEFAULT 0,
    ingested_at TEXT NOT NULL
);

CREATE TABLE tensors(
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK(kind IN ('parameter','buffer')),
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    dtype TEXT NOT NULL,
    shape TEXT NOT NULL,
    PRIMARY KEY(tape_id, kind, position)
);

CREATE TABLE optimizer_groups(
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    group_index INTEGER NOT NULL,
    options TEXT NOT NULL,
    parameters TEXT NOT NULL,
    PRIMARY KEY(tape_id, group_index)
);

CREATE TABLE programs(
    sha256 TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    source TEXT NOT NULL CHECK(source IN ('embedded','file')),
    path TEXT,
    tape_id INTEGER REFERENCES tapes(id) ON DELETE SET NULL,
    record_offset INTEGER,
    content BLOB
);

CREATE TABLE transactions(
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    segment INTEGER NOT NULL,
    loss REAL,
    lr REAL,
    update_norm REAL,
    max_update REAL,
    fingerprints BLOB,
    has_deltas INTEGER NOT NULL,
    has_state_digest INTEGER NOT NULL,
    state_digest BLOB,
    wall_time_ns INTEGER,
    record_index INTEGER NOT NULL,
    record_offset INTEGER NOT NULL,
    record_length INTEGER NOT NULL,
    record_digest BLOB NOT NULL,
    PRIMARY KEY(tape_id, idx)
) WITHOUT ROWID;

CREATE TABLE snapshots(
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    before_transaction INTEGER NOT NULL,
    record_index INTEGER NOT NULL,
    record_offset INTEGER NOT NULL,
    record_length INTEGER NOT NULL,
    record_digest BLOB NOT NULL,
    PRIMARY KEY(tape_id, before_transaction)
) WITHOUT ROWID;

CREATE TABLE payloads(
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    record_index INTEGER NOT NULL,
    content BLOB NOT NULL,
    PRIMARY KEY(tape_id, record_index)
);

CREATE TABLE replay_runs(
    id INTEGER PRIMARY KEY,
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    device TEXT NOT NULL,
    libtorch_version TEXT,
    zkdv_version TEXT,
    selection_spec TEXT NOT NULL,
    seed INTEGER,
    tolerance TEXT,
    threads INTEGER,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL CHECK(status IN ('running','finished','cancelled','failed'))
);

CREATE TABLE verdicts(
    run_id INTEGER NOT NULL REFERENCES replay_runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    verdict TEXT NOT NULL CHECK(verdict IN ('exact','within-tolerance','diverged','unverifiable')),
    detail TEXT,
    PRIMARY KEY(run_id, idx)
) WITHOUT ROWID;

CREATE INDEX verdicts_by_idx ON verdicts(idx);

CREATE TABLE metrics(
    run_id INTEGER NOT NULL REFERENCES replay_runs(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    tensor TEXT NOT NULL,
    slot TEXT NOT NULL,
    max_abs REAL,
    rel_l2 REAL,
    cosine REAL,
    max_ulp REAL,
    mean_ulp REAL,
    nan_mismatches INTEGER,
    inf_mismatches INTEGER,
    ulp_histogram BLOB,
    PRIMARY KEY(run_id, idx, tensor, slot)
) WITHOUT ROWID;

PRAGMA application_id = 1514882134;
)sql"},
    {2, R"sql(
ALTER TABLE replay_runs ADD COLUMN intra_op_threads INTEGER;
ALTER TABLE replay_runs ADD COLUMN selected_count INTEGER;
ALTER TABLE replay_runs ADD COLUMN environment TEXT;
ALTER TABLE replay_runs ADD COLUMN problem TEXT;

ALTER TABLE verdicts ADD COLUMN segment INTEGER;
ALTER TABLE verdicts ADD COLUMN selected INTEGER NOT NULL DEFAULT 1;
ALTER TABLE verdicts ADD COLUMN worst_tensor TEXT;
ALTER TABLE verdicts ADD COLUMN worst_slot TEXT;
ALTER TABLE verdicts ADD COLUMN worst_max_ulp REAL;
ALTER TABLE verdicts ADD COLUMN worst_rel_l2 REAL;
ALTER TABLE verdicts ADD COLUMN replay_ns INTEGER;

ALTER TABLE metrics ADD COLUMN verdict TEXT;
ALTER TABLE metrics ADD COLUMN elements INTEGER;
ALTER TABLE metrics ADD COLUMN bitwise_equal INTEGER;
ALTER TABLE metrics ADD COLUMN note TEXT;

CREATE INDEX replay_runs_by_tape ON replay_runs(tape_id);
)sql"},
    // The workstation's transaction table sorts a million rows by these columns and
    // filters by sampled checks and by verdict; covering indexes turn each into a scan.
    {3, R"sql(
CREATE INDEX transactions_by_loss ON transactions(tape_id, loss);
CREATE INDEX transactions_by_lr ON transactions(tape_id, lr);
CREATE INDEX transactions_by_update_norm ON transactions(tape_id, update_norm);
CREATE INDEX transactions_sampled ON transactions(tape_id, has_deltas, has_state_digest)
    WHERE has_deltas OR has_state_digest;
CREATE INDEX verdicts_by_run_verdict ON verdicts(run_id, verdict);
)sql"},
    // A tape is identified by its chain head (which commits to every byte of a sealed tape)
    // and size, so ingest hashes it once; the whole-file SHA-256 is kept when asked for.
    // The sort orders of loss, learning rate and update norm are stored at ingest (sorted
    // in memory while the rows stream in) instead of three indexes SQLite builds by sorting
    // the table again. Rebuilding `tapes` follows SQLite's table-rebuild procedure: the
    // migration runs with foreign keys off, so dropping the old table cascades to nothing.
    {4, R"sql(
CREATE TABLE tapes_v4(
    id INTEGER PRIMARY KEY,
    chain_head TEXT NOT NULL,
    size INTEGER NOT NULL,
    file_sha256 TEXT,
    path TEXT NOT NULL,
    status TEXT NOT NULL CHECK(status IN ('sealed','unsealed','truncated')),
    format_major INTEGER NOT NULL,
    format_minor INTEGER NOT NULL,
    root_json TEXT NOT NULL,
    producer TEXT,
    optimizer_contract TEXT,
    snapshot_interval INTEGER,
    program_sha256 TEXT,
    program_kind TEXT,
    record_count INTEGER NOT NULL,
    transaction_count INTEGER NOT NULL,
    snapshot_count INTEGER NOT NULL,
    embedded INTEGER NOT NULL DEFAULT 0,
    ingested_at TEXT NOT NULL,
    UNIQUE(chain_head, size)
);
INSERT INTO tapes_v4(id, chain_head, size, file_sha256, path, status, format_major, format_minor, root_json,
    producer, optimizer_contract, snapshot_interval, program_sha256, program_kind, record_count,
    transaction_count, snapshot_count, embedded, ingested_at)
SELECT id, chain_head, size, file_sha256, path, status, format_major, format_minor, root_json,
    producer, optimizer_contract, snapshot_interval, program_sha256, program_kind, record_count,
    transaction_count, snapshot_count, embedded, ingested_at FROM tapes;
DROP TABLE tapes;
ALTER TABLE tapes_v4 RENAME TO tapes;

DROP INDEX transactions_by_loss;
DROP INDEX transactions_by_lr;
DROP INDEX transactions_by_update_norm;
CREATE TABLE transaction_orders(
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    column_name TEXT NOT NULL CHECK(column_name IN ('loss','lr','update_norm')),
    ascending BLOB NOT NULL,
    PRIMARY KEY(tape_id, column_name)
) WITHOUT ROWID;
)sql"},
    // A stored order is a few megabytes: in a WITHOUT ROWID table SQLite builds the whole
    // row in memory to insert it and keeps it in the key's b-tree. An ordinary table lets
    // ingest insert zeroblob(N) and write the order into place (incremental blob I/O):
    // 75-100 ms -> 6-8 ms for the three orders of a million transactions.
    {5, R"sql(
CREATE TABLE transaction_orders_v5(
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    column_name TEXT NOT NULL CHECK(column_name IN ('loss','lr','update_norm')),
    ascending BLOB NOT NULL,
    PRIMARY KEY(tape_id, column_name)
);
INSERT INTO transaction_orders_v5(tape_id, column_name, ascending)
SELECT tape_id, column_name, ascending FROM transaction_orders;
DROP TABLE transaction_orders;
ALTER TABLE transaction_orders_v5 RENAME TO transaction_orders;
)sql"},
    // A replay killed (or on a machine that lost power) stayed `running` for ever. A run now
    // records the process that writes it (host, boot, pid and the pid's start time, so a
    // reused pid is told apart), and a later open marks a run whose process is gone
    // `interrupted`, which the status constraint must admit: the table is rebuilt as in
    // migration 4.
    {6, R"sql(
CREATE TABLE replay_runs_v6(
    id INTEGER PRIMARY KEY,
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    device TEXT NOT NULL,
    libtorch_version TEXT,
    zkdv_version TEXT,
    selection_spec TEXT NOT NULL,
    seed INTEGER,
    tolerance TEXT,
    threads INTEGER,
    started_at TEXT NOT NULL,
    finished_at TEXT,
    status TEXT NOT NULL CHECK(status IN ('running','finished','cancelled','failed','interrupted')),
    intra_op_threads INTEGER,
    selected_count INTEGER,
    environment TEXT,
    problem TEXT,
    owner_host TEXT,
    owner_boot_id TEXT,
    owner_pid INTEGER,
    owner_start_time INTEGER
);
INSERT INTO replay_runs_v6(id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads,
    started_at, finished_at, status, intra_op_threads, selected_count, environment, problem)
SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads,
    started_at, finished_at, status, intra_op_threads, selected_count, environment, problem FROM replay_runs;
DROP TABLE replay_runs;
ALTER TABLE replay_runs_v6 RENAME TO replay_runs;
CREATE INDEX replay_runs_by_tape ON replay_runs(tape_id);
)sql"},
    // Anyone can edit a case's rows, so a report is derived only from runs whose rows carry
    // the signature of the zkdv that wrote them (zkdv/store/run_seal.h). Runs stored before
    // this version have none and read as unsigned.
    {7, R"sql(
CREATE TABLE run_seals(
    run_id INTEGER PRIMARY KEY REFERENCES replay_runs(id) ON DELETE CASCADE,
    content_sha256 BLOB NOT NULL,
    public_key BLOB NOT NULL,
    signature BLOB NOT NULL,
    sealed_at TEXT NOT NULL
);
)sql"},
    // An auditor's flag and note on a transaction (zkdv/store/transaction_notes.h). Kept
    // apart from the runs: a note is the auditor's judgement, not a replay result, so it is
    // not part of any run's seal and survives every later run.
    {8, R"sql(
CREATE TABLE transaction_notes(
    tape_id INTEGER NOT NULL,
    idx INTEGER NOT NULL,
    flag TEXT NOT NULL DEFAULT 'none' CHECK(flag IN ('none','question','suspicious','confirmed')),
    note TEXT NOT NULL DEFAULT '',
    author TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY(tape_id, idx),
    FOREIGN KEY(tape_id, idx) REFERENCES transactions(tape_id, idx) ON DELETE CASCADE
) WITHOUT ROWID;
)sql"},
    // Whose failure an unverifiable transaction is (zkdv/audit/unverifiable_cause.h): the
    // trainer's program past the auditor's limits fails the run, the auditor's machine does
    // not. A seal of payload version 2 covers the cause, the tape's ingested rows a report
    // prints, and signs what the run found, so an altered run still says it failed
    // (zkdv/store/run_seal.h); older seals keep payload version 1.
    {9, R"sql(
ALTER TABLE verdicts ADD COLUMN cause TEXT CHECK(cause IN ('environment','program-time','program-memory','program-crash',
    'program-protocol','program-refused','tape-malformed'));
ALTER TABLE run_seals ADD COLUMN payload_version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE run_seals ADD COLUMN found TEXT;
)sql"},
    // A random audit's bound holds only for a seed the trainer could not know, so a run
    // records whether zkdv drew its seed at audit time or the auditor gave it
    // (zkdv/audit/audit_seed.h). Runs stored before have NULL: read as unknown.
    {10, R"sql(
ALTER TABLE replay_runs ADD COLUMN seed_source TEXT CHECK(seed_source IN ('drawn','given'));
)sql"},
    // The values of every option a tape's root schedules (optimizer.schedule), per group, so
    // the workstation charts each of them and not only the first group's lr: little-endian
    // float64, option by option in the root's order, group by group within an option. NULL
    // for a tape without a schedule, and for transactions ingested before this migration.
    {11, R"sql(
ALTER TABLE transactions ADD COLUMN scheduled BLOB;
)sql"},
    // Runs resumed from checkpoints span tapes (tape format 1.10, root member resumes): the
    // state digests of a tape's first and final snapshots (hex; NULL when the tape holds none,
    // and for tapes ingested before this migration until they are ingested again), where its
    // last transaction left the scheduler's epoch and the GradScaler (its metadata
    // grad_scaler, JSON; NULL without them), the run's transactions on the tapes before it,
    // and an index to find the tape a root names.
    {12, R"sql(
ALTER TABLE tapes ADD COLUMN first_state_digest TEXT;
ALTER TABLE tapes ADD COLUMN final_state_digest TEXT;
ALTER TABLE tapes ADD COLUMN last_schedule_epoch INTEGER;
ALTER TABLE tapes ADD COLUMN last_grad_scaler TEXT;
ALTER TABLE tapes ADD COLUMN transactions_before INTEGER NOT NULL DEFAULT 0;
CREATE INDEX tapes_by_identity ON tapes(chain_head, size);
)sql"},
    // What a run found when it checked the sealed program (zkdv/audit/program_check.h), stored
    // with the run and signed by seals of payload version 4, so that no reader interprets the
    // run's problem text. Runs stored before get what that text said, read once here.
    {13, R"sql(
ALTER TABLE replay_runs ADD COLUMN program_check TEXT CHECK(program_check IN ('matched','missing','mismatched','not-replayable'));
)sql" "UPDATE replay_runs SET program_check = " ZKDV_LEGACY_PROGRAM_CHECK_SQL ";\n"},
    // Who signed a tape (tape format 1.11, section 7.1), its signature verified at ingest: the
    // key id, the algorithm and the public key (PEM). NULL: unsigned, as every tape before 1.11.
    // Whether the key is trusted is each reader's keyring's question, never stored.
    {14, R"sql(
ALTER TABLE tapes ADD COLUMN signer_key_id TEXT;
ALTER TABLE tapes ADD COLUMN signer_algorithm TEXT;
ALTER TABLE tapes ADD COLUMN signer_public_key TEXT;
)sql"},
    // What the auditor found checking a tape's links (zkdv/store/provenance_checks.h): its
    // dataset commitment against the data, snapshot 0 against a published checkpoint, the
    // final state against the shipped model. Every check is kept; the newest of a kind is
    // the one shown. Not part of any run's seal: a check is redone in seconds by anyone.
    {15, R"sql(
CREATE TABLE provenance_checks(
    id INTEGER PRIMARY KEY,
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    kind TEXT NOT NULL CHECK(kind IN ('dataset','start-checkpoint','final-model')),
    path TEXT NOT NULL,
    sha256 TEXT,
    result TEXT NOT NULL CHECK(result IN ('ok','differs')),
    detail TEXT NOT NULL,
    checked_at TEXT NOT NULL
);
CREATE INDEX provenance_checks_by_tape ON provenance_checks(tape_id, kind);
)sql"},
    // A replay split over machines (docs/replay.md, "Sharded replays"): a shard's run records
    // which shard of how many it replayed; a merged run has the count and no index, and lists
    // the shards it was merged from (their case file, run, host, device, signer). Seals of
    // payload version 5 cover both. Runs stored before are whole runs: NULL.
    {16, R"sql(
ALTER TABLE replay_runs ADD COLUMN shard_index INTEGER CHECK(shard_index >= 0);
ALTER TABLE replay_runs ADD COLUMN shard_count INTEGER CHECK(shard_count >= 1);
CREATE TABLE merged_shards(
    run_id INTEGER NOT NULL REFERENCES replay_runs(id) ON DELETE CASCADE,
    shard_index INTEGER NOT NULL,
    file TEXT NOT NULL,
    shard_run_id INTEGER NOT NULL,
    host TEXT NOT NULL,
    device TEXT NOT NULL,
    libtorch_version TEXT NOT NULL,
    signer TEXT NOT NULL,
    sealed_at TEXT NOT NULL,
    started_at TEXT NOT NULL,
    finished_at TEXT NOT NULL,
    replayed INTEGER NOT NULL,
    PRIMARY KEY(run_id, shard_index)
) WITHOUT ROWID;
)sql"},
    // The audit an auditor asked for when they planned a sharded replay (zkdv/store/planned_audits.h):
    // the tape, selection, seed and its source, shard count, tolerance, calibration digest and
    // the program check, fixed when the job is planned and signed by the planner's key (the
    // case sits on file systems cluster nodes write); a merge holds every shard to it and the
    // merged run names it (planned_audit_id, the id of a planned_audits row), under seals of
    // payload version 6, which cover that row too. Runs stored before name none: NULL.
    {17, R"sql(
CREATE TABLE planned_audits(
    id INTEGER PRIMARY KEY,
    tape_id INTEGER NOT NULL REFERENCES tapes(id) ON DELETE CASCADE,
    selection_spec TEXT NOT NULL,
    seed INTEGER NOT NULL,
    seed_source TEXT NOT NULL CHECK(seed_source IN ('drawn','given')),
    shard_count INTEGER NOT NULL CHECK(shard_count >= 1),
    tolerance TEXT NOT NULL,
    calibration_sha256 TEXT,
    program_check TEXT NOT NULL CHECK(program_check IN ('matched','missing','mismatched','not-replayable')),
    planned_at TEXT NOT NULL,
    public_key BLOB,
    signature BLOB
);
CREATE INDEX planned_audits_by_tape ON planned_audits(tape_id);
ALTER TABLE replay_runs ADD COLUMN planned_audit_id INTEGER;
)sql"},
    // Seals over what a report prints besides a run's results (zkdv/store/tape_seal.h): each
    // tape's ingested rows, signed by the ingesting auditor's key (tape_seals), and each note,
    // signed by its author's key (transaction_notes.public_key, signature). Tapes and notes stored
    // before carry none: a report says their facts cannot be vouched for.
    {18, R"sql(
CREATE TABLE tape_seals(
    tape_id INTEGER PRIMARY KEY REFERENCES tapes(id) ON DELETE CASCADE,
    content_sha256 BLOB NOT NULL,
    public_key BLOB NOT NULL,
    signature BLOB NOT NULL,
    sealed_at TEXT NOT NULL,
    payload_version INTEGER NOT NULL
);
ALTER TABLE transaction_notes ADD COLUMN public_key BLOB;
ALTER TABLE transaction_notes ADD COLUMN signature BLOB;
)sql"},
};

// What the file says about itself, read before anything is written to it.
struct FileState {
    int version = 0;
    std::int64_t applicationId = 0;
    std::int64_t schemaObjects = 0;
};

FileState readState(Database& db)
{
    FileState state;
    state.version = db.userVersion();
    state.applicationId = db.queryInt64("PRAGMA application_id").value_or(0);
    state.schemaObjects = db.queryInt64("SELECT count(*) FROM sqlite_master").value_or(0);
    return state;
}

std::string hex32(std::int64_t value)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "0x%08X", static_cast<unsigned>(static_cast<std::uint32_t>(value)));
    return buffer;
}

// Throws unless `state` is an empty file or a ZKDV case this build can read.
void requireUpgradable(const FileState& state, const std::string& path)
{
    const bool empty = state.version == 0 && state.applicationId == 0 && state.schemaObjects == 0;
    if (empty)
        return;
    if (state.applicationId != CaseSchema::kApplicationId) {
        std::string owner = state.applicationId == 0
            ? "it has no ZKDV application id"
            : "its application id " + hex32(state.applicationId) + " belongs to another program";
        throw Error(path + " is not a ZKDV case: an SQLite database whose schema ZKDV did not create ("
                    + owner + ", user_version " + std::to_string(state.version)
                    + "); refusing to use it as a case");
    }
    if (state.version > CaseSchema::latestVersion())
        throw Error("case " + path + " uses schema version " + std::to_string(state.version)
                    + ", newer than this build of ZKDV understands (up to "
                    + std::to_string(CaseSchema::latestVersion()) + "); open it with a newer zkdv");
    if (state.version < 1)  // migration 1 sets the id and the version in one transaction
        throw Error("case " + path + " carries the ZKDV application id but no schema version; "
                    "it is damaged, refusing to use it");
}

// One row of sqlite_master, its SQL normalized (normalizedSql).
struct SchemaObject {
    std::string type;
    std::string table;
    std::string sql;
    bool operator==(const SchemaObject& other) const
    {
        return std::tie(type, table, sql) == std::tie(other.type, other.table, other.sql);
    }
};
using SchemaObjects = std::map<std::string, SchemaObject>;  // by name

SchemaObjects schemaObjects(Database& db)
{
    SchemaObjects objects;
    Statement rows = db.prepare("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master");
    while (rows.step())
        objects[rows.text(1)] = SchemaObject{rows.text(0), rows.text(2), normalizedSql(rows.text(3))};
    return objects;
}

// What the migrations up to `version` create, built once per version in a database in memory
// by this very SQLite library: the scripts are the one statement of the schema.
const SchemaObjects& expectedObjects(int version)
{
    static std::mutex mutex;
    static std::map<int, SchemaObjects> built;
    std::lock_guard<std::mutex> lock(mutex);
    auto found = built.find(version);
    if (found != built.end())
        return found->second;
    Database scratch(":memory:", Database::Mode::ReadWriteCreate);
    {
        ForeignKeysOff foreignKeysOff(scratch);
        for (const Migration& migration : kMigrations)
            if (migration.version <= version)
                scratch.exec(migration.script);
    }
    return built.emplace(version, schemaObjects(scratch)).first->second;
}

std::string describe(const std::string& name, const SchemaObject& object)
{
    std::string text = object.type + " \"" + name + "\"";
    if ((object.type == "index" || object.type == "trigger") && !object.table.empty())
        text += " on table \"" + object.table + "\"";
    return text;
}

}  // namespace

void CaseSchema::requireExpectedSchema(Database& db, int version)
{
    const SchemaObjects& expected = expectedObjects(version);
    const SchemaObjects actual = schemaObjects(db);
    // Triggers and views first: they are what would run.
    auto rank = [](const std::string& type) { return type == "trigger" ? 0 : type == "view" ? 1 : 2; };
    std::vector<std::pair<int, std::string>> problems;
    for (const auto& [name, object] : actual) {
        auto want = expected.find(name);
        if (want == expected.end())
            problems.emplace_back(rank(object.type), "it has a " + describe(name, object) + " that ZKDV does not create");
        else if (want->second.type != object.type)
            problems.emplace_back(rank(object.type), "its " + describe(name, object) + " stands where ZKDV creates a " +
                                                         describe(name, want->second));
        else if (!(want->second == object))
            problems.emplace_back(rank(object.type), "its " + describe(name, object) + " is defined differently from the one ZKDV creates");
    }
    for (const auto& [name, object] : expected)
        if (!actual.count(name))
            problems.emplace_back(rank(object.type), "it lacks the " + describe(name, object) + " that ZKDV creates");
    if (problems.empty())
        return;
    std::stable_sort(problems.begin(), problems.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    constexpr std::size_t kNamed = 3;
    std::string named;
    for (std::size_t i = 0; i < problems.size() && i < kNamed; ++i)
        named += (i ? "; " : "") + problems[i].second;
    if (problems.size() > kNamed)
        named += "; and " + std::to_string(problems.size() - kNamed) + " more differences";
    throw UnexpectedCaseSchema("case " + db.path() + " is refused: " + named + " (case schema version " + std::to_string(version) +
                               "). A case whose schema was changed outside ZKDV may carry SQL that would run while ZKDV reads or "
                               "writes it (a trigger, a view standing in for a table) and forge results; nothing was written to it");
}

int CaseSchema::latestVersion()
{
    return std::end(kMigrations)[-1].version;
}

void CaseSchema::upgrade(Database& db) { upgradeTo(db, latestVersion()); }

void CaseSchema::upgradeTo(Database& db, int target)
{
    // Checked outside a transaction first so that an up-to-date case needs no write lock
    // (read-only connections) and a refused file never sees a BEGIN.
    FileState state = readState(db);
    requireUpgradable(state, db.path());
    if (state.version != 0)
        requireExpectedSchema(db, state.version);
    if (state.version >= target)
        return;
    if (sqlite3_db_readonly(db.handle(), "main") == 1 && !(state.version == 0 && state.schemaObjects == 0))
        throw SchemaUpgradeNeeded("case " + db.path() + " uses schema version " + std::to_string(state.version) + "; this build reads version " +
                                  std::to_string(latestVersion()) + ", and a read-only connection cannot migrate it; open it once for writing "
                                  "(zkdv-audit ingest or replay, or the workstation)");

    // A migration may rebuild a table the way SQLite documents it (create, copy, drop,
    // rename), which must not cascade deletes to the rows referring to it.
    ForeignKeysOff foreignKeysOff(db);
    SqlTransaction transaction(db);
    // Another process may have upgraded the file between the check and the write lock.
    state = readState(db);
    requireUpgradable(state, db.path());
    if (state.version != 0)
        requireExpectedSchema(db, state.version);
    if (state.version >= target)
        return;

    for (const Migration& migration : kMigrations) {
        if (migration.version > state.version && migration.version <= target)
            db.exec(migration.script);
    }
    if (state.version == 0) {
        Statement info = db.prepare(
            "INSERT INTO case_info(key, value) VALUES"
            " ('created_by', ?1), ('created_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))");
        const std::string createdBy = std::string("zkdv ") + kVersion;
        info.bind(1, std::string_view(createdBy)).run();
    }
    const std::int64_t danglingReferences = db.queryInt64("SELECT count(*) FROM pragma_foreign_key_check").value_or(0);
    if (danglingReferences != 0)
        throw Error("case " + db.path() + ": upgrading it to schema version " + std::to_string(target) + " would leave " +
                    std::to_string(danglingReferences) + " rows referring to rows that do not exist; the case is left as it was");
    db.setUserVersion(target);
    transaction.commit();
}

}  // namespace zkdv
