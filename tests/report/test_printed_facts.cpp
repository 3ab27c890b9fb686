// Every fact a report prints is recomputed from the tape or covered by a seal (issue 48, item
// 2): a case is a file people hand to each other, and anyone can edit its rows with an SQLite
// shell. This test alters every column of every table of a case, one column at a time (in
// every row, and in each row of the tables of tapes and runs alone), and requires of each
// alteration that the report either prints exactly what it printed before (JSON and CSV) or
// concludes NOT VOUCHED (or is refused). A column a later schema adds is altered too, without
// a change here: the tables and columns are read from the case itself.
#include <QtTest>

#include <sqlite3.h>

#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config_home.h"
#include "made_up_shard.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/provenance_checks.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/workflow/shard_merge.h"

using namespace zkdv;
using zkdv::test::ConfigHome;

namespace {

// The values a person with an SQLite shell would try in a column they cannot otherwise change:
// every name the schema's CHECK constraints admit.
const std::vector<std::string> kCheckedNames = {
    "parameter", "buffer",   "embedded",    "file",         "exact",          "within-tolerance", "diverged",       "unverifiable",
    "environment", "program-time", "program-memory", "program-crash", "program-protocol", "program-refused", "tape-malformed",
    "sealed",    "unsealed", "truncated",   "loss",         "lr",             "update_norm",      "running",        "finished",
    "cancelled", "failed",   "interrupted", "drawn",        "given",          "matched",          "missing",        "mismatched",
    "not-replayable", "none", "question",   "suspicious",   "confirmed",      "dataset",          "start-checkpoint", "final-model",
    "ok",        "differs"};

// A column a report prints as where things are, not as a fact about the tape or a run: a tape
// moved is located again (docs/case-schema.md).
bool locationOnly(const std::string& table, const std::string& column) { return table == "tapes" && column == "path"; }

struct Column {
    std::string table, name, declaredType;
};

// Runs `sql` on the file with SQLite itself; the number of rows it changed, or -1 when SQLite
// refused it (a constraint).
int edit(const std::string& path, const std::string& sql)
{
    sqlite3* db = nullptr;
    if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
        sqlite3_close(db);
        return -1;
    }
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    const int changed = rc == SQLITE_OK ? sqlite3_changes(db) : -1;
    sqlite3_close(db);
    return changed;
}

std::vector<std::string> strings(const std::string& path, const std::string& sql)
{
    std::vector<std::string> out;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
        sqlite3_stmt* stmt = nullptr;
        if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK)
            while (sqlite3_step(stmt) == SQLITE_ROW) {
                const unsigned char* text = sqlite3_column_text(stmt, 0);
                out.push_back(text ? reinterpret_cast<const char*>(text) : "");
            }
        sqlite3_finalize(stmt);
    }
    sqlite3_close(db);
    return out;
}

std::vector<Column> columnsOf(const std::string& path)
{
    std::vector<Column> columns;
    for (const std::string& table : strings(path, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")) {
        sqlite3* db = nullptr;
        sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
        sqlite3_stmt* stmt = nullptr;
        sqlite3_prepare_v2(db, ("PRAGMA table_info(\"" + table + "\")").c_str(), -1, &stmt, nullptr);
        while (sqlite3_step(stmt) == SQLITE_ROW)
            columns.push_back({table, reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)),
                               reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2))});
        sqlite3_finalize(stmt);
        sqlite3_close(db);
    }
    return columns;
}

// The value a column is altered to, by what it holds: a number moved, a text or blob changed in
// one byte (a blob keeps its length), a NULL given a value of the declared type.
std::string alteredValue(const Column& c, bool bigStep)
{
    const std::string q = "\"" + c.name + "\"";
    std::string null = "'x'";
    if (c.declaredType.find("INT") != std::string::npos)
        null = "1";
    else if (c.declaredType.find("REAL") != std::string::npos)
        null = "1.5";
    else if (c.declaredType.find("BLOB") != std::string::npos)
        null = "x'01'";
    return "CASE typeof(" + q + ") WHEN 'integer' THEN " + q + (bigStep ? " + 1000003" : " + 1") + " WHEN 'real' THEN " + q +
           " * 2 + 1 WHEN 'text' THEN " + q + " || 'x' WHEN 'blob' THEN CASE WHEN substr(" + q + ", 1, 1) = x'5a' THEN x'a5' ELSE x'5a' END || substr(" +
           q + ", 2) ELSE " + null + " END";
}

struct Printed {
    bool refused = false;
    AuditOutcome outcome = AuditOutcome::NotVouched;
    std::string headline, json, csv;
};

Printed printedReport(const std::string& casePath, std::int64_t runId)
{
    Printed printed;
    try {
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        ReportData report = buildAuditReport(store, {0, runId});
        report.generatedAt.clear();
        printed.outcome = report.outcome;
        printed.headline = report.headline;
        printed.json = renderReportJson(report);
        printed.csv = renderReportCsv(report);
    } catch (const Error& error) {
        printed.refused = true;
        printed.headline = error.what();
    }
    return printed;
}

// The first line where two texts differ, for a message.
std::string firstDifference(const std::string& a, const std::string& b)
{
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i])
        ++i;
    const std::size_t from = a.rfind('\n', i) == std::string::npos ? 0 : a.rfind('\n', i) + 1;
    return a.substr(from, 160) + " | now: " + b.substr(from, 160);
}

// Alters every column of `pristine` as described above and checks the report of `runId` after
// each alteration. Returns the tables that held no row to alter.
// (nullopt after a failure).
std::optional<std::set<std::string>> alterEveryColumn(const std::string& pristine, std::int64_t runId, const std::string& work)
{
    // The report of the unaltered case, read at the path the altered ones are (the report
    // names its case).
    std::filesystem::copy_file(pristine, work, std::filesystem::copy_options::overwrite_existing);
    const Printed before = printedReport(work, runId);
    if (before.refused || before.outcome == AuditOutcome::NotVouched) {
        QTest::qFail(("the unaltered case must be vouched for: " + before.headline).c_str(), __FILE__, __LINE__);
        return std::nullopt;
    }
    std::set<std::string> empty, altered;
    std::vector<std::string> failures;
    int alterations = 0;
    for (const Column& column : columnsOf(pristine)) {
        const std::string table = "\"" + column.table + "\"";
        if (strings(pristine, "SELECT count(*) FROM " + table).front() == "0") {
            empty.insert(column.table);
            continue;
        }
        // Every row at once; and each row alone where a table's rows are few and differ in kind.
        std::vector<std::string> scopes{""};
        if (column.table == "tapes" || column.table == "replay_runs")
            for (const std::string& id : strings(pristine, "SELECT id FROM " + table + " ORDER BY id"))
                scopes.push_back(" WHERE id = " + id);
        for (const std::string& scope : scopes) {
            std::filesystem::copy_file(pristine, work, std::filesystem::copy_options::overwrite_existing);
            const std::string set = "UPDATE " + table + " SET \"" + column.name + "\" = ";
            int changed = edit(work, set + alteredValue(column, false) + scope);
            if (changed <= 0)
                changed = edit(work, set + alteredValue(column, true) + scope);
            for (std::size_t i = 0; changed <= 0 && i < kCheckedNames.size(); ++i)
                changed = edit(work, set + "'" + kCheckedNames[i] + "'" + scope + (scope.empty() ? " WHERE " : " AND ") + "\"" +
                                         column.name + "\" IS NOT '" + kCheckedNames[i] + "'");
            // A name in a key: one row at a time, where another name leaves the key unique.
            if (changed <= 0 && scope.empty())
                for (const std::string& rowid : strings(pristine, "SELECT rowid FROM " + table + " ORDER BY rowid LIMIT 8"))
                    for (std::size_t i = 0; changed <= 0 && i < kCheckedNames.size(); ++i)
                        changed = edit(work, set + "'" + kCheckedNames[i] + "' WHERE rowid = " + rowid + " AND \"" + column.name +
                                                 "\" IS NOT '" + kCheckedNames[i] + "'");
            // Names that fill a key between them (the three orders of a tape): each row gets the
            // next row's name, all at once.
            if (changed <= 0 && scope.empty()) {
                const std::vector<std::string> names = strings(pristine, "SELECT DISTINCT \"" + column.name + "\" FROM " + table + " ORDER BY 1");
                std::string rotation = "CASE \"" + column.name + "\"";
                for (std::size_t i = 0; i < names.size(); ++i)
                    rotation += " WHEN '" + names[i] + "' THEN '" + names[(i + 1) % names.size()] + "'";
                rotation += " END";
                std::string select;
                for (const Column& other : columnsOf(pristine))
                    if (other.table == column.table)
                        select += std::string(select.empty() ? "" : ", ") + (other.name == column.name ? rotation : "\"" + other.name + "\"");
                if (names.size() > 1 &&
                    edit(work, "BEGIN; CREATE TEMP TABLE rotated AS SELECT " + select + " FROM " + table + "; DELETE FROM " + table +
                                   "; INSERT INTO " + table + " SELECT * FROM rotated; COMMIT;") >= 0)
                    changed = 1;
            }
            const std::string what = column.table + "." + column.name + (scope.empty() ? " (every row)" : scope);
            if (changed <= 0) {
                failures.push_back("no alteration of " + what + " could be made; teach this test one");
                continue;
            }
            ++alterations;
            altered.insert(column.table);
            const Printed after = printedReport(work, runId);
            if (after.refused || after.outcome == AuditOutcome::NotVouched)
                continue;
            if (locationOnly(column.table, column.name))
                continue;
            if (after.json != before.json || after.csv != before.csv) {
                const std::string why = after.json != before.json ? firstDifference(before.json, after.json) : firstDifference(before.csv, after.csv);
                failures.push_back("altering " + what + " changed what the report prints without making it NOT VOUCHED (" +
                                   std::string(auditOutcomeName(after.outcome)) + "): " + why);
            }
        }
    }
    std::string none;
    for (const std::string& table : empty)
        none += " " + table;
    qInfo("%d alterations of %zu tables checked; tables without rows:%s", alterations, altered.size(), none.c_str());
    if (!failures.empty()) {
        std::string all;
        for (const std::string& failure : failures)
            all += "\n  " + failure;
        QTest::qFail((std::to_string(failures.size()) + " alterations went unnoticed:" + all).c_str(), __FILE__, __LINE__);
        return std::nullopt;
    }
    return empty;
}

TransactionOutcome exactOutcome(std::uint64_t index)
{
    TransactionOutcome o;
    o.index = index;
    o.segment = index / 3;
    o.verdict = Verdict::Exact;
    o.detail = "replayed bit for bit";
    TensorComparison comparison;
    comparison.tensor = "0.weight";
    comparison.slot = "snapshot/param";
    comparison.verdict = Verdict::Exact;
    comparison.metrics.elements = 12;
    comparison.metrics.bitwiseEqual = true;
    o.comparisons.push_back(comparison);
    return o;
}

std::int64_t storeExactRun(CaseStore& store, std::int64_t tapeId, std::uint64_t seed, std::uint64_t transactions)
{
    ReplayStore replay(store.database());
    ReplayRunInfo info;
    info.tapeId = tapeId;
    info.device = "cpu";
    info.selection = "all";
    info.seed = seed;
    info.tolerance = "exact";
    info.selectedCount = transactions;
    info.programCheck = ProgramCheck::Matched;
    const std::int64_t runId = replay.beginRun(info);
    std::vector<TransactionOutcome> outcomes;
    for (std::uint64_t i = 0; i < transactions; ++i)
        outcomes.push_back(exactOutcome(i));
    replay.storeOutcomes(runId, outcomes);
    replay.finishRun(runId, RunStatus::Finished, "");
    return runId;
}

}  // namespace

class TestPrintedFacts : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyColumnOfAResumedRunsCase();
    void everyColumnOfAMergedRunsCase();
    void aTapeIngestedAgainIsSealedOnlyWhenItsRowsAreTheTapes();
};

// Two tapes of one resumed run (the second continues the first), a signed tape embedded in the
// case besides, two runs of the second tape, a note and a provenance check on it: the report of
// the newer run reads the link, the run's tapes and forks, the other run and the note.
void TestPrintedFacts::everyColumnOfAResumedRunsCase()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    std::int64_t runId = 0;
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/mlp-resumed-first-1.10.zkdv");
        const std::int64_t second = store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/mlp-resumed-second-1.10.zkdv").tapeId;
        IngestOptions embedded;
        embedded.embed = true;
        embedded.computeFileSha256 = true;
        store.ingestTape(ZKDV_TEST_DATA_DIR "/golden/cnn-adam-signed-1.11.zkdv", embedded);
        storeExactRun(store, second, 1, 7);
        runId = storeExactRun(store, second, 2, 7);
        TransactionNotes(store.database(), second).set(3, TransactionFlag::Suspicious, "the loss jumps here", "tester");
        ProvenanceCheck check;
        check.kind = ProvenanceKind::FinalModel;
        check.path = "/models/final.safetensors";
        check.sha256 = std::string(64, 'c');
        check.ok = true;
        check.detail = "every tensor matches the final state";
        ProvenanceChecks(store.database(), second).add(check);
    }
    {
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        const ReportData report = buildAuditReport(store, {0, runId});
        QCOMPARE(int(report.runLink), int(TapeLinkStatus::Continues));
        QCOMPARE(report.auditorNotes.size(), std::size_t(1));
        QVERIFY2(report.passed(), report.headline.c_str());
    }
    const std::optional<std::set<std::string>> empty = alterEveryColumn(casePath, runId, dir.file("altered.zkaudit"));
    QVERIFY(empty);
    // Read only for a merged run: the next test.
    QCOMPARE(*empty, (std::set<std::string>{"merged_shards", "planned_audits"}));
}

// A run merged from three shards of a planned audit: the report reads the shards it was
// merged from and the planned audit.
void TestPrintedFacts::everyColumnOfAMergedRunsCase()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::string tape = dir.file("demo.zkdv");
    SyntheticDemoOptions options;
    options.steps = 36;
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    options.seed = 5;
    options.overwrite = true;
    writeSyntheticDemoTape(tape, options);
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        store.ingestTape(tape);
    }
    test::MadeUpShard shards;
    shards.selection = "random:12";
    test::recordMadeUpPlan(casePath, shards);
    std::vector<std::string> files;
    for (unsigned i = 0; i < shards.count; ++i) {
        files.push_back(dir.file("shard-" + std::to_string(i) + ".zkaudit"));
        test::writeMadeUpShard(casePath, files.back(), i, shards);
    }
    std::int64_t runId = 0;
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        runId = mergeShards(store, files).run.id;
    }
    const std::optional<std::set<std::string>> empty = alterEveryColumn(casePath, runId, dir.file("altered.zkaudit"));
    QVERIFY(empty);
    // The previous test fills these.
    QCOMPARE(*empty, (std::set<std::string>{"payloads", "provenance_checks", "transaction_notes"}));
}

// The seal of a tape's rows is made from the tape: ingested again, rows that are exactly what
// the tape gives are sealed anew (a case of an older schema, or another auditor's), rows that
// were changed are not, and the report stays NOT VOUCHED.
void TestPrintedFacts::aTapeIngestedAgainIsSealedOnlyWhenItsRowsAreTheTapes()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::string tape = ZKDV_TEST_DATA_DIR "/golden/mlp-resumed-first-1.10.zkdv";
    std::int64_t runId = 0;
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        runId = storeExactRun(store, store.ingestTape(tape).tapeId, 1, 7);
    }
    QCOMPARE(edit(casePath, "DELETE FROM tape_seals"), 1);
    QCOMPARE(int(printedReport(casePath, runId).outcome), int(AuditOutcome::NotVouched));
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        const IngestResult again = store.ingestTape(tape);
        QVERIFY(again.alreadyPresent);
        QVERIFY(again.resealed);
        QVERIFY(!again.rowsDiffer);
    }
    QVERIFY2(printedReport(casePath, runId).outcome == AuditOutcome::Passed, printedReport(casePath, runId).headline.c_str());
    // A signer written into the rows (an unsigned tape made to read as signed): ingesting the
    // tape again does not seal the edit over.
    QCOMPARE(edit(casePath, "UPDATE tapes SET signer_key_id = '" + std::string(64, 'a') + "', signer_algorithm = 'ed25519'"), 1);
    QCOMPARE(int(printedReport(casePath, runId).outcome), int(AuditOutcome::NotVouched));
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        const IngestResult again = store.ingestTape(tape);
        QVERIFY(!again.resealed);
        QVERIFY(again.rowsDiffer);
    }
    const Printed after = printedReport(casePath, runId);
    QCOMPARE(int(after.outcome), int(AuditOutcome::NotVouched));
    QVERIFY2(after.headline.find("tape 1's rows in the case were changed") != std::string::npos, after.headline.c_str());
}

QTEST_GUILESS_MAIN(TestPrintedFacts)
#include "test_printed_facts.moc"
