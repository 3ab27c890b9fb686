// Tests for the SQLite wrapper (Database, Statement, SqlTransaction) and the case schema.

#include <QtTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "caught.h"
#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/store/case_schema.h"
#include "zkdv/store/database.h"

using zkdv::CaseSchema;
using zkdv::Database;
using zkdv::DatabaseError;
using zkdv::SqlTransaction;
using zkdv::Statement;

namespace {

using zkdv::test::caught;
using zkdv::test::readAll;
using zkdv::test::writeAll;

bool contains(const std::string& haystack, const std::string& needle)
{
    return haystack.find(needle) != std::string::npos;
}

// The first column of the first row of `sql`, as text ("" when there is no row).
std::string textOf(Database& db, const std::string& sql)
{
    Statement row = db.prepare(sql);
    return row.step() ? row.text(0) : std::string();
}

std::int64_t count(Database& db, const std::string& sql)
{
    return db.queryInt64(sql).value_or(-1);
}

// Every table of schema v1 with its column count, as docs/case-schema.md lists them.
// Tables and their column counts at the latest schema version (2: replay columns).
const std::vector<std::pair<std::string, int>> kTables = {
    {"case_info", 2},   {"tapes", 27},       {"tensors", 6},    {"optimizer_groups", 4},
    {"programs", 8},    {"transactions", 17}, {"snapshots", 6},  {"payloads", 3},
    {"replay_runs", 25}, {"verdicts", 12},    {"metrics", 16},  {"transaction_orders", 3},
    {"run_seals", 7},   {"transaction_notes", 8}, {"provenance_checks", 8},
    {"merged_shards", 12}, {"planned_audits", 12}, {"tape_seals", 6},
};

// A case at the latest schema version, closed again.
void createCase(const std::string& path)
{
    Database db(path, Database::Mode::ReadWriteCreate);
    CaseSchema::upgrade(db);
}

}  // namespace

class TestDatabase : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTripsEveryType();
    void statementIsMovable();
    void errorsNameTheSql();
    void transactionRollsBackUnlessCommitted();
    void interruptStopsALongQuery();
    void upgradeCreatesEverySchemaObject();
    void upgradeIsIdempotent();
    void versionOneCaseMigratesKeepingItsRows();
    void versionFourCaseKeepsItsStoredOrders();
    void versionFiveCaseKeepsItsRunsAndAdmitsInterrupted();
    void writeBlobFillsAZeroblobInPlace();
    void newerCaseIsRefusedAndUntouched();
    void foreignDatabaseIsRefusedAndUntouched();
    void missingFileFailsNamingThePath();
    void nonSqliteFileFailsCleanly();

private:
    zkdv::test::TempDir dir_;
};

void TestDatabase::roundTripsEveryType()
{
    Database db(dir_.file("types.db"), Database::Mode::ReadWriteCreate);
    db.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, i INTEGER, r REAL, s TEXT, b BLOB)");

    const std::string textWithNul("a\0b\xc3\xa9", 5);
    const std::vector<std::uint8_t> blobWithNuls = {0, 1, 0, 0, 255, 0};
    const std::int64_t big = std::numeric_limits<std::int64_t>::max();
    const std::int64_t small = std::numeric_limits<std::int64_t>::min();

    Statement insert = db.prepare("INSERT INTO t(id, i, r, s, b) VALUES (?1, ?2, ?3, ?4, ?5)");
    insert.bind(1, 1).bind(2, big).bind(3, -0.1).bind(4, std::string_view(textWithNul)).bindBlob(5, blobWithNuls).run();
    QCOMPARE(db.lastInsertRowId(), std::int64_t(1));
    QCOMPARE(db.changes(), 1);
    insert.bind(1, 2).bind(2, small).bind(3, 1e308).bind(4, "").bindBlob(5, zkdv::ByteSpan()).run();
    insert.bind(1, 3).bindNull(2).bindNull(3).bindNull(4).bindNull(5).run();
    insert.bind(1, 4)
        .bind(2, std::optional<std::int64_t>())
        .bind(3, std::optional<double>())
        .bind(4, std::optional<std::string>())
        .run();  // column 5 keeps the NULL bound for row 3
    insert.reset(true);
    insert.bind(1, 5)
        .bind(2, std::optional<std::int64_t>(7))
        .bind(3, std::optional<double>(2.5))
        .bind(4, std::optional<std::string>("opt"))
        .run();  // bindings cleared: column 5 is NULL

    Statement select = db.prepare("SELECT i, r, s, b FROM t ORDER BY id");
    QCOMPARE(select.columnCount(), 4);

    QVERIFY(select.step());
    QCOMPARE(select.int64(0), big);
    QCOMPARE(select.real(1), -0.1);
    QCOMPARE(select.text(2), textWithNul);
    zkdv::ByteSpan blob = select.blob(3);
    QCOMPARE(std::vector<std::uint8_t>(blob.begin(), blob.end()), blobWithNuls);

    QVERIFY(select.step());
    QCOMPARE(select.int64(0), small);
    QCOMPARE(select.real(1), 1e308);
    QVERIFY(!select.isNull(2));
    QCOMPARE(select.text(2), std::string());
    QVERIFY(!select.isNull(3));  // an empty blob is not NULL
    QVERIFY(select.blob(3).empty());

    for (int row = 3; row <= 4; ++row) {
        QVERIFY(select.step());
        for (int column = 0; column < 4; ++column)
            QVERIFY(select.isNull(column));
        QCOMPARE(select.text(2), std::string());
        QVERIFY(select.blob(3).empty());
        QVERIFY(select.blob(3).data == nullptr);
    }

    QVERIFY(select.step());
    QCOMPARE(select.int64(0), std::int64_t(7));
    QCOMPARE(select.real(1), 2.5);
    QCOMPARE(select.text(2), std::string("opt"));
    QVERIFY(select.isNull(3));

    QVERIFY(!select.step());
    select.reset();
    QVERIFY(select.step());  // a reset statement runs again from the first row
    QCOMPARE(select.int64(0), big);

    QCOMPARE(db.queryInt64("SELECT i FROM t WHERE id = 99"), std::optional<std::int64_t>());
    QCOMPARE(db.queryInt64("SELECT i FROM t WHERE id = 3"), std::optional<std::int64_t>());
    QCOMPARE(db.queryInt64("SELECT count(*) FROM t"), std::optional<std::int64_t>(5));
}

void TestDatabase::statementIsMovable()
{
    Database db(dir_.file("move.db"), Database::Mode::ReadWriteCreate);
    Statement a = db.prepare("SELECT 41 + 1");
    Statement b = std::move(a);
    QVERIFY(a.handle() == nullptr);
    QVERIFY(b.step());
    QCOMPARE(b.int64(0), std::int64_t(42));
    Statement c = db.prepare("SELECT 1");
    c = std::move(b);  // finalizes c's own statement
    c.reset();
    QVERIFY(c.step());
    QCOMPARE(c.int64(0), std::int64_t(42));
}

void TestDatabase::errorsNameTheSql()
{
    Database db(dir_.file("errors.db"), Database::Mode::ReadWriteCreate);

    auto syntax = caught<DatabaseError>([&] { db.prepare("SELEC 1 FROM nowhere"); });
    QVERIFY(syntax);
    QVERIFY2(contains(syntax->what(), "SELEC 1 FROM nowhere"), syntax->what());
    QVERIFY2(contains(syntax->what(), "syntax error"), syntax->what());
    QVERIFY(!syntax->interrupted());

    db.exec("CREATE TABLE u(k INTEGER PRIMARY KEY)");
    Statement insert = db.prepare("INSERT INTO u(k) VALUES (?1)");
    insert.bind(1, 1).run();
    auto duplicate = caught<DatabaseError>([&] { insert.run(); });
    QVERIFY(duplicate);
    QVERIFY2(contains(duplicate->what(), "INSERT INTO u(k) VALUES (?1)"), duplicate->what());
    QVERIFY2(contains(duplicate->what(), "UNIQUE constraint failed"), duplicate->what());
    QCOMPARE(duplicate->code(), 1555);  // SQLITE_CONSTRAINT_PRIMARYKEY: extended codes are on
    insert.bind(1, 2).run();            // the failed statement was reset and is usable again
    QCOMPARE(count(db, "SELECT count(*) FROM u"), std::int64_t(2));

    // In a script, the message names the statement that failed, not the first one.
    auto script = caught<DatabaseError>([&] { db.exec("INSERT INTO u VALUES (3);\n  INSERT INTO missing VALUES (1);"); });
    QVERIFY(script);
    QVERIFY2(contains(script->what(), "\"INSERT INTO missing VALUES (1);\""), script->what());
    QVERIFY2(contains(script->what(), "no such table: missing"), script->what());

    // Long statements are quoted in part.
    std::string longSql = "SELECT " + std::string(200, '1') + " FROM nowhere";
    auto longError = caught<DatabaseError>([&] { db.prepare(longSql); });
    QVERIFY(longError);
    QVERIFY2(contains(longError->what(), "SELECT 111"), longError->what());
    QVERIFY2(contains(longError->what(), "...\""), longError->what());
    QVERIFY2(!contains(longError->what(), longSql), longError->what());

    // Foreign keys are enforced on every connection.
    db.exec("CREATE TABLE child(k INTEGER REFERENCES u(k))");
    auto orphan = caught<DatabaseError>([&] { db.exec("INSERT INTO child VALUES (99)"); });
    QVERIFY(orphan);
    QVERIFY2(contains(orphan->what(), "FOREIGN KEY constraint failed"), orphan->what());

    auto empty = caught<DatabaseError>([&] { db.prepare("  -- nothing\n"); });
    QVERIFY(empty);
}

void TestDatabase::transactionRollsBackUnlessCommitted()
{
    Database db(dir_.file("tx.db"), Database::Mode::ReadWriteCreate);
    db.exec("CREATE TABLE t(x INTEGER)");

    {
        SqlTransaction transaction(db);
        db.exec("INSERT INTO t VALUES (1)");
        QCOMPARE(count(db, "SELECT count(*) FROM t"), std::int64_t(1));
    }
    QCOMPARE(count(db, "SELECT count(*) FROM t"), std::int64_t(0));

    auto thrown = caught<std::runtime_error>([&] {
        SqlTransaction transaction(db);
        db.exec("INSERT INTO t VALUES (2)");
        throw std::runtime_error("abandon");
    });
    QVERIFY(thrown);
    QCOMPARE(count(db, "SELECT count(*) FROM t"), std::int64_t(0));

    {
        SqlTransaction transaction(db);
        db.exec("INSERT INTO t VALUES (3)");
        transaction.commit();
    }
    QCOMPARE(count(db, "SELECT count(*) FROM t"), std::int64_t(1));

    // Committed data is visible to a second connection, i.e. really on disk.
    Database other(dir_.file("tx.db"), Database::Mode::ReadOnly);
    QCOMPARE(count(other, "SELECT x FROM t"), std::int64_t(3));
}

void TestDatabase::interruptStopsALongQuery()
{
    using namespace std::chrono_literals;
    Database db(dir_.file("interrupt.db"), Database::Mode::ReadWriteCreate);

    // Keeps interrupting until the query is over: an interrupt that lands before the
    // statement starts is forgotten by SQLite, so a single one could be lost.
    std::atomic<bool> finished{false};
    std::thread interrupter([&] {
        std::this_thread::sleep_for(50ms);
        while (!finished.load()) {
            db.interrupt();
            std::this_thread::sleep_for(5ms);
        }
    });
    const auto start = std::chrono::steady_clock::now();
    auto error = caught<DatabaseError>([&] {
        // Billions of rows: minutes of work unless interrupted.
        db.queryInt64("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000000)"
                      " SELECT count(*) FROM c");
    });
    const auto elapsed = std::chrono::steady_clock::now() - start;
    finished = true;
    interrupter.join();

    QVERIFY(error);
    QVERIFY2(error->interrupted(), error->what());
    QVERIFY2(contains(error->what(), "WITH RECURSIVE"), error->what());
    QVERIFY(elapsed < 30s);
    // The connection is still usable afterwards.
    QCOMPARE(db.queryInt64("SELECT 7"), std::optional<std::int64_t>(7));
}

void TestDatabase::upgradeCreatesEverySchemaObject()
{
    const std::string path = dir_.file("new.zkaudit");
    Database db(path, Database::Mode::ReadWriteCreate);
    QCOMPARE(db.userVersion(), 0);
    CaseSchema::upgrade(db);

    QCOMPARE(CaseSchema::latestVersion(), 18);
    QCOMPARE(db.userVersion(), CaseSchema::latestVersion());
    QCOMPARE(count(db, "PRAGMA application_id"), std::int64_t(CaseSchema::kApplicationId));
    QCOMPARE(count(db, "PRAGMA application_id"), std::int64_t(0x5A4B4456));

    for (const auto& [table, columns] : kTables) {
        Statement exists = db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1");
        exists.bind(1, std::string_view(table));
        QVERIFY(exists.step());
        QVERIFY2(exists.int64(0) == 1, table.c_str());
        Statement columnCount = db.prepare("SELECT count(*) FROM pragma_table_info(?1)");
        columnCount.bind(1, std::string_view(table));
        QVERIFY(columnCount.step());
        QVERIFY2(columnCount.int64(0) == columns, table.c_str());
    }
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table'"),
             std::int64_t(kTables.size()));
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'verdicts_by_idx'"),
             std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'tapes_by_identity'"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'provenance_checks_by_tape'"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'planned_audits_by_tape'"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('transactions_sampled',"
                       " 'verdicts_by_run_verdict')"),
             std::int64_t(2));
    // Version 4 stores sort orders instead of version 3's sort indexes.
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('transactions_by_loss',"
                       " 'transactions_by_lr', 'transactions_by_update_norm')"),
             std::int64_t(0));
    // A tape's identity is (chain_head, size); the file SHA-256 is optional.
    db.exec("INSERT INTO tapes(id, file_sha256, chain_head, path, size, status, format_major, format_minor,"
            " root_json, record_count, transaction_count, snapshot_count, ingested_at)"
            " VALUES (7, NULL, 'c', '/t', 1, 'sealed', 1, 0, '{}', 0, 0, 0, 'now')");
    auto sameIdentity = caught<DatabaseError>([&] {
        db.exec("INSERT INTO tapes(file_sha256, chain_head, path, size, status, format_major, format_minor,"
                " root_json, record_count, transaction_count, snapshot_count, ingested_at)"
                " VALUES (NULL, 'c', '/other', 1, 'sealed', 1, 0, '{}', 0, 0, 0, 'now')");
    });
    QVERIFY(sameIdentity);
    QVERIFY2(contains(sameIdentity->what(), "UNIQUE constraint failed: tapes.chain_head, tapes.size"), sameIdentity->what());
    db.exec("DELETE FROM tapes");

    Statement createdBy = db.prepare("SELECT value FROM case_info WHERE key = 'created_by'");
    QVERIFY(createdBy.step());
    QVERIFY2(contains(createdBy.text(0), "zkdv "), createdBy.text(0).c_str());
    QCOMPARE(count(db, "SELECT count(*) FROM case_info WHERE key = 'created_at'"), std::int64_t(1));

    // The CHECK constraints and cascades are live.
    auto badStatus = caught<DatabaseError>([&] {
        db.exec("INSERT INTO tapes(file_sha256, chain_head, path, size, status, format_major, format_minor,"
                " root_json, record_count, transaction_count, snapshot_count, ingested_at)"
                " VALUES ('f', 'c', '/t', 1, 'bogus', 1, 0, '{}', 0, 0, 0, 'now')");
    });
    QVERIFY(badStatus);
    QVERIFY2(contains(badStatus->what(), "CHECK constraint failed"), badStatus->what());
    db.exec("INSERT INTO tapes(id, file_sha256, chain_head, path, size, status, format_major, format_minor,"
            " root_json, record_count, transaction_count, snapshot_count, ingested_at)"
            " VALUES (1, 'f', 'c', '/t', 1, 'sealed', 1, 0, '{}', 0, 0, 0, 'now');"
            "INSERT INTO tensors VALUES (1, 'parameter', 0, 'w', 'float32', '[2]');");
    db.exec("DELETE FROM tapes");
    QCOMPARE(count(db, "SELECT count(*) FROM tensors"), std::int64_t(0));
}

void TestDatabase::versionOneCaseMigratesKeepingItsRows()
{
    // A version-1 case as the build of that version left it: zkdv-audit as of commit f46a2e6
    // ingested a tape of its own demo (tests/data/cases/make-v1-case.sh). Version 1 stored no
    // replay results; a run and a verdict its tables admit are added to see them migrate.
    const std::string path = dir_.file("v1.zkaudit");
    std::filesystem::copy_file(ZKDV_TEST_DATA_DIR "/cases/v1.zkaudit", path);
    std::string tapeRow;
    std::int64_t transactions = 0, snapshots = 0, tensors = 0;
    const std::string tapeColumns = "file_sha256 || chain_head || path || size || status || record_count || transaction_count";
    {
        Database db(path, Database::Mode::ReadWrite);
        QCOMPARE(db.userVersion(), 1);
        QCOMPARE(count(db, "SELECT count(*) FROM pragma_table_info('verdicts')"), std::int64_t(4));
        QCOMPARE(count(db, "SELECT count(*) FROM tapes"), std::int64_t(1));
        tapeRow = textOf(db, "SELECT " + tapeColumns + " FROM tapes WHERE id = 1");
        transactions = count(db, "SELECT count(*) FROM transactions WHERE tape_id = 1");
        snapshots = count(db, "SELECT count(*) FROM snapshots WHERE tape_id = 1");
        tensors = count(db, "SELECT count(*) FROM tensors WHERE tape_id = 1");
        QCOMPARE(transactions, std::int64_t(6));
        QVERIFY(snapshots >= 1 && tensors >= 1);
        db.exec("INSERT INTO replay_runs(id, tape_id, device, selection_spec, started_at, status)"
                " VALUES (1, 1, 'cpu', 'all', 'now', 'finished');"
                "INSERT INTO verdicts(run_id, idx, verdict) VALUES (1, 3, 'exact');");
    }
    QVERIFY(!tapeRow.empty());
    {
        // Read-only, the old case is refused with what to do, and stays as it was.
        const std::vector<std::uint8_t> before = readAll(path);
        Database readOnly(path, Database::Mode::ReadOnly);
        auto refused = caught<zkdv::SchemaUpgradeNeeded>([&] { CaseSchema::upgrade(readOnly); });
        QVERIFY(refused);
        QVERIFY2(contains(refused->what(), "schema version 1") && contains(refused->what(), "open it once for writing"), refused->what());
        QCOMPARE(readOnly.userVersion(), 1);
        QVERIFY(readAll(path) == before);
    }
    Database db(path, Database::Mode::ReadWrite);
    CaseSchema::upgrade(db);
    QCOMPARE(db.userVersion(), CaseSchema::latestVersion());
    for (const auto& [table, columns] : kTables) {
        Statement columnCount = db.prepare("SELECT count(*) FROM pragma_table_info(?1)");
        columnCount.bind(1, std::string_view(table));
        QVERIFY(columnCount.step());
        QVERIFY2(columnCount.int64(0) == columns, table.c_str());
    }
    QCOMPARE(count(db, "SELECT count(*) FROM verdicts WHERE idx = 3 AND verdict = 'exact' AND selected = 1"), std::int64_t(1));
    // Migration 4 rebuilt `tapes`: the row moved with its values, and nothing referring to it
    // was cascaded away; foreign keys are on again afterwards.
    QCOMPARE(textOf(db, "SELECT " + tapeColumns + " FROM tapes WHERE id = 1"), tapeRow);
    QCOMPARE(count(db, "SELECT count(*) FROM transactions WHERE tape_id = 1"), transactions);
    QCOMPARE(count(db, "SELECT count(*) FROM snapshots WHERE tape_id = 1"), snapshots);
    QCOMPARE(count(db, "SELECT count(*) FROM tensors WHERE tape_id = 1"), tensors);
    QCOMPARE(count(db, "PRAGMA foreign_keys"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM replay_runs WHERE device = 'cpu'"), std::int64_t(1));
    db.exec("DELETE FROM tapes");
    QCOMPARE(count(db, "SELECT count(*) FROM tensors"), std::int64_t(0));
    QCOMPARE(count(db, "SELECT count(*) FROM transactions"), std::int64_t(0));
    QCOMPARE(count(db, "SELECT count(*) FROM replay_runs"), std::int64_t(0));
}

void TestDatabase::versionFourCaseKeepsItsStoredOrders()
{
    // Version 4 kept the orders in a WITHOUT ROWID table; migration 5 rebuilds it as an
    // ordinary one (for incremental blob writes), keeping every order.
    const std::string path = dir_.file("v4.zkaudit");
    {
        Database db(path, Database::Mode::ReadWriteCreate);
        CaseSchema::upgradeTo(db, 4);
        db.exec("INSERT INTO tapes(id, file_sha256, chain_head, path, size, status, format_major, format_minor,"
                " root_json, record_count, transaction_count, snapshot_count, ingested_at)"
                " VALUES (1, NULL, 'c', '/t', 1, 'sealed', 1, 0, '{}', 0, 2, 0, 'now');"
                "INSERT INTO transaction_orders VALUES (1, 'loss', x'0100000000000000'), (1, 'lr', x'0000000001000000');");
        QCOMPARE(count(db, "SELECT count(*) FROM pragma_table_list WHERE name = 'transaction_orders' AND wr = 1"), std::int64_t(1));
    }
    Database db(path, Database::Mode::ReadWrite);
    CaseSchema::upgrade(db);
    QCOMPARE(db.userVersion(), CaseSchema::latestVersion());
    QCOMPARE(count(db, "SELECT count(*) FROM pragma_table_list WHERE name = 'transaction_orders' AND wr = 0"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM transaction_orders WHERE tape_id = 1 AND column_name = 'loss'"
                       " AND ascending = x'0100000000000000'"),
             std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM transaction_orders WHERE tape_id = 1 AND column_name = 'lr'"
                       " AND ascending = x'0000000001000000'"),
             std::int64_t(1));
    // The key and the cascade hold as before.
    QVERIFY(caught<DatabaseError>([&] { db.exec("INSERT INTO transaction_orders VALUES (1, 'loss', x'00')"); }));
    db.exec("DELETE FROM tapes");
    QCOMPARE(count(db, "SELECT count(*) FROM transaction_orders"), std::int64_t(0));
}

void TestDatabase::versionFiveCaseKeepsItsRunsAndAdmitsInterrupted()
{
    // Migration 6 rebuilds replay_runs (owner columns, the `interrupted` status): every run
    // keeps its id and values, its verdicts and metrics stay attached, the index is back.
    const std::string path = dir_.file("v5.zkaudit");
    {
        Database db(path, Database::Mode::ReadWriteCreate);
        CaseSchema::upgradeTo(db, 5);
        db.exec("INSERT INTO tapes(id, chain_head, path, size, status, format_major, format_minor,"
                " root_json, record_count, transaction_count, snapshot_count, ingested_at)"
                " VALUES (1, 'c', '/t', 1, 'sealed', 1, 0, '{}', 0, 2, 0, 'now');"
                "INSERT INTO replay_runs(id, tape_id, device, selection_spec, started_at, status, selected_count, problem)"
                " VALUES (4, 1, 'cpu', 'all', 'then', 'running', 2, NULL), (9, 1, 'cuda:0', 'ids:1', 'then', 'failed', 1, 'why');"
                "INSERT INTO verdicts(run_id, idx, verdict, selected) VALUES (4, 0, 'exact', 1), (9, 1, 'diverged', 1);"
                "INSERT INTO metrics(run_id, idx, tensor, slot) VALUES (9, 1, 'w', 'delta');");
        QVERIFY(caught<DatabaseError>([&] { db.exec("UPDATE replay_runs SET status = 'interrupted' WHERE id = 4"); }));
    }
    Database db(path, Database::Mode::ReadWrite);
    CaseSchema::upgradeTo(db, 6);
    QCOMPARE(db.userVersion(), 6);
    QCOMPARE(count(db, "SELECT count(*) FROM replay_runs WHERE id = 4 AND status = 'running' AND selected_count = 2 AND owner_pid IS NULL"),
             std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM replay_runs WHERE id = 9 AND device = 'cuda:0' AND problem = 'why'"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM verdicts"), std::int64_t(2));
    QCOMPARE(count(db, "SELECT count(*) FROM metrics"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'replay_runs_by_tape'"), std::int64_t(1));
    db.exec("UPDATE replay_runs SET status = 'interrupted' WHERE id = 4");
    // The cascade from tapes to runs to verdicts holds as before.
    db.exec("DELETE FROM tapes");
    QCOMPARE(count(db, "SELECT count(*) FROM verdicts"), std::int64_t(0));
    QCOMPARE(count(db, "SELECT count(*) FROM metrics"), std::int64_t(0));
}

void TestDatabase::writeBlobFillsAZeroblobInPlace()
{
    Database db(dir_.file("blob.sqlite"), Database::Mode::ReadWriteCreate);
    db.exec("CREATE TABLE blobs(id INTEGER PRIMARY KEY, content BLOB)");
    db.exec("INSERT INTO blobs VALUES (1, zeroblob(100000))");
    std::vector<std::uint8_t> bytes(70000);
    for (std::size_t i = 0; i < bytes.size(); ++i)
        bytes[i] = static_cast<std::uint8_t>(i * 13 + 1);
    db.writeBlob("blobs", "content", 1, zkdv::ByteSpan(bytes));
    Statement read = db.prepare("SELECT content FROM blobs WHERE id = 1");
    QVERIFY(read.step());
    const zkdv::ByteSpan stored = read.blob(0);
    QCOMPARE(stored.size, std::size_t(100000));
    QVERIFY(std::equal(bytes.begin(), bytes.end(), stored.data));
    QVERIFY(std::all_of(stored.data + bytes.size(), stored.data + stored.size, [](std::uint8_t b) { return b == 0; }));
    read.reset();
    // No such row, or a blob too short for the bytes: an error naming what was written.
    auto missing = caught<DatabaseError>([&] { db.writeBlob("blobs", "content", 2, zkdv::ByteSpan(bytes)); });
    QVERIFY(missing);
    QVERIFY2(contains(missing->what(), "blobs.content of row 2"), missing->what());
    db.exec("INSERT INTO blobs VALUES (3, zeroblob(10))");
    auto tooLong = caught<DatabaseError>([&] { db.writeBlob("blobs", "content", 3, zkdv::ByteSpan(bytes)); });
    QVERIFY(tooLong);
    QVERIFY2(contains(tooLong->what(), "row 3"), tooLong->what());
}

void TestDatabase::upgradeIsIdempotent()
{
    const std::string path = dir_.file("again.zkaudit");
    createCase(path);
    const std::vector<std::uint8_t> before = readAll(path);
    QVERIFY(!before.empty());
    {
        Database db(path, Database::Mode::ReadWrite);
        CaseSchema::upgrade(db);
        QCOMPARE(db.userVersion(), CaseSchema::latestVersion());
        QCOMPARE(count(db, "SELECT count(*) FROM case_info WHERE key = 'created_by'"), std::int64_t(1));
    }
    QVERIFY(readAll(path) == before);
    {
        // An up-to-date case needs no write: a read-only connection may upgrade it too.
        Database readOnly(path, Database::Mode::ReadOnly);
        CaseSchema::upgrade(readOnly);
    }
    QVERIFY(readAll(path) == before);
}

void TestDatabase::newerCaseIsRefusedAndUntouched()
{
    const std::string path = dir_.file("future.zkaudit");
    createCase(path);
    const int newer = CaseSchema::latestVersion() + 1;
    {
        Database db(path, Database::Mode::ReadWrite);
        db.setUserVersion(newer);
    }
    const std::vector<std::uint8_t> before = readAll(path);
    for (auto mode : {Database::Mode::ReadWrite, Database::Mode::ReadWriteCreate, Database::Mode::ReadOnly}) {
        Database db(path, mode);
        auto error = caught<zkdv::Error>([&] { CaseSchema::upgrade(db); });
        QVERIFY(error);
        const std::string message = error->what();
        QVERIFY2(contains(message, path), message.c_str());
        QVERIFY2(contains(message, "schema version " + std::to_string(newer)), message.c_str());
        QVERIFY2(contains(message, "(up to " + std::to_string(CaseSchema::latestVersion()) + ")"), message.c_str());
        QVERIFY2(contains(message, "newer zkdv"), message.c_str());
        QCOMPARE(db.userVersion(), newer);
    }
    QVERIFY(readAll(path) == before);
}

void TestDatabase::foreignDatabaseIsRefusedAndUntouched()
{
    // A rollback-journal file, as most SQLite files are: opening it read-write must not
    // switch it to WAL (which would rewrite its header) before CaseSchema refuses it.
    const std::string path = dir_.file("foreign.sqlite");
    {
        Database db(path, Database::Mode::ReadWriteCreate);
        db.exec("PRAGMA journal_mode=DELETE; CREATE TABLE notes(body TEXT); INSERT INTO notes VALUES ('not an audit case');");
    }
    const std::vector<std::uint8_t> before = readAll(path);
    {
        Database db(path, Database::Mode::ReadWrite);
        auto error = caught<zkdv::Error>([&] { CaseSchema::upgrade(db); });
        QVERIFY(error);
        QVERIFY2(contains(error->what(), path + " is not a ZKDV case"), error->what());
        QCOMPARE(db.userVersion(), 0);
        QCOMPARE(count(db, "SELECT count(*) FROM sqlite_master"), std::int64_t(1));
    }
    QVERIFY(readAll(path) == before);

    // Another program's application id is refused even without tables.
    const std::string other = dir_.file("other.sqlite");
    {
        Database db(other, Database::Mode::ReadWriteCreate);
        db.exec("PRAGMA application_id = 1234");
    }
    const std::vector<std::uint8_t> otherBefore = readAll(other);
    {
        Database db(other, Database::Mode::ReadWrite);
        auto error = caught<zkdv::Error>([&] { CaseSchema::upgrade(db); });
        QVERIFY(error);
        QVERIFY2(contains(error->what(), "0x000004D2"), error->what());
    }
    QVERIFY(readAll(other) == otherBefore);
}

void TestDatabase::missingFileFailsNamingThePath()
{
    const std::string path = dir_.file("missing/nothing.zkaudit");
    for (auto mode : {Database::Mode::ReadOnly, Database::Mode::ReadWrite, Database::Mode::ReadWriteCreate}) {
        auto error = caught<DatabaseError>([&] { Database db(path, mode); });
        QVERIFY(error);
        QVERIFY2(contains(error->what(), "cannot open case " + path + ": unable to open database file"),
                 error->what());
    }
    QVERIFY(!std::ifstream(path).good());
}

void TestDatabase::nonSqliteFileFailsCleanly()
{
    std::mt19937 random(12345);
    std::vector<std::uint8_t> noise(8192);
    for (std::uint8_t& byte : noise)
        byte = static_cast<std::uint8_t>(random() & 0xff);
    const std::vector<std::pair<std::string, std::vector<std::uint8_t>>> files = {
        {dir_.file("noise.zkaudit"), noise},
        {dir_.file("short.zkaudit"), std::vector<std::uint8_t>{'h', 'e', 'l', 'l', 'o', '\n'}},
    };
    for (const auto& [path, bytes] : files) {
        writeAll(path, bytes);
        for (auto mode : {Database::Mode::ReadOnly, Database::Mode::ReadWrite, Database::Mode::ReadWriteCreate}) {
            auto error = caught<DatabaseError>([&] { Database db(path, mode); });
            QVERIFY(error);
            QVERIFY2(contains(error->what(), "cannot open case " + path + ": file is not a database"),
                     error->what());
        }
        QVERIFY(readAll(path) == bytes);
    }
}

QTEST_GUILESS_MAIN(TestDatabase)
#include "test_database.moc"
