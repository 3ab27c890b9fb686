// Tests for opening untrusted or damaged case files: hostile schema objects (triggers, views,
// extra or altered tables) are refused before anything runs, a write a killed process left
// behind does not lock readers out, the sync-ahead thread keeps SQLite's locks, and failures
// an auditor can act on (full disk, a case locked by another process) say so.

#include <QtTest>

#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "caught.h"
#include "sync_ahead.h"
#include "temp_dir.h"
#include "zkdv/audit/run_status.h"
#include "zkdv/store/case_schema.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/run_owner.h"

using zkdv::CaseSchema;
using zkdv::CaseStore;
using zkdv::Database;
using zkdv::DatabaseError;

namespace {

using zkdv::test::caught;

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

std::vector<char> readFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::int64_t count(Database& db, const std::string& sql) { return db.queryInt64(sql).value_or(-1); }

void createCase(const std::string& path)
{
    Database db(path, Database::Mode::ReadWriteCreate);
    CaseSchema::upgrade(db);
    db.exec("INSERT INTO tapes(id, chain_head, path, size, status, format_major, format_minor, root_json, record_count,"
            " transaction_count, snapshot_count, ingested_at) VALUES (1, 'c', '/t', 1, 'sealed', 1, 0, '{}', 0, 0, 0, 'now');"
            "INSERT INTO replay_runs(id, tape_id, device, selection_spec, started_at, status) VALUES (1, 1, 'cpu', 'all', 'now', 'running');");
}

// Runs `sql` on `path` through SQLite itself, as somebody preparing a hostile case would.
void tamper(const std::string& path, const std::string& sql)
{
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    const std::string error = message ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, error.c_str());
}

// Runs `child` in a forked process that then ends at once with `_exit` (no destructors, no
// close: as if killed), and waits for it. The parent must have no connection to the files
// the child opens (SQLite's lock bookkeeping does not survive fork).
int inChild(const std::function<int()>& child)
{
    const pid_t pid = ::fork();
    if (pid == 0) {
        int code = 99;
        try {
            code = child();
        } catch (...) {
        }
        ::_exit(code);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Whether a process other than this one could take a write lock on the bytes SQLite's unix VFS
// locks (PENDING, RESERVED and the SHARED range), asked from a child process: asking from
// this one would mean opening and closing a descriptor of the file here, which drops this
// process's locks (the very trap under test).
bool locksHeldOn(const std::string& path)
{
    const int held = inChild([&] {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        struct flock query {};
        query.l_type = F_WRLCK;
        query.l_whence = SEEK_SET;
        query.l_start = 0x40000000;  // PENDING_BYTE
        query.l_len = 2 + 510;
        if (fd < 0 || ::fcntl(fd, F_GETLK, &query) != 0)
            return 2;
        return query.l_type != F_UNLCK ? 1 : 0;
    });
    return held == 1;
}

}  // namespace

class TestCaseHardening : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void hostileSchemaIsRefused_data();
    void hostileSchemaIsRefused();
    void migratedCasesAreAccepted_data();
    void migratedCasesAreAccepted();
    void triggersInAFileNeverFire();
    void readOnlyOpenRollsBackAKilledWrite();
    void syncAheadKeepsTheTransactionsLocks();
    void fullDiskSaysSo();
    void lockedCaseSaysSo();
    void killedReplayIsMarkedInterrupted();
    void runOwnerTellsAReusedPid();

private:
    zkdv::test::TempDir dir_;
    int cases_ = 0;
};

void TestCaseHardening::hostileSchemaIsRefused_data()
{
    QTest::addColumn<QString>("sql");
    QTest::addColumn<QString>("named");

    QTest::newRow("trigger on verdicts")
        << "CREATE TRIGGER forge AFTER INSERT ON verdicts BEGIN UPDATE verdicts SET verdict = 'exact'"
           " WHERE run_id = new.run_id AND idx = new.idx; END"
        << "trigger \"forge\" on table \"verdicts\"";
    QTest::newRow("trigger emptying case_info")
        << "CREATE TRIGGER wipe AFTER UPDATE ON replay_runs BEGIN DELETE FROM case_info; END"
        << "trigger \"wipe\" on table \"replay_runs\"";
    QTest::newRow("view replacing verdicts")
        << "ALTER TABLE verdicts RENAME TO real_verdicts;"
           " CREATE VIEW verdicts AS SELECT * FROM real_verdicts;"
           " CREATE TRIGGER forge INSTEAD OF INSERT ON verdicts BEGIN"
           " INSERT INTO real_verdicts(run_id, idx, verdict) VALUES (new.run_id, new.idx, 'exact'); END"
        << "view \"verdicts\" stands where ZKDV creates a table \"verdicts\"";
    QTest::newRow("extra table") << "CREATE TABLE notes(body TEXT)" << "table \"notes\"";
    QTest::newRow("extra index") << "CREATE INDEX by_loss ON transactions(tape_id, loss)" << "index \"by_loss\" on table \"transactions\"";
    QTest::newRow("missing index") << "DROP INDEX verdicts_by_idx" << "index \"verdicts_by_idx\"";
    QTest::newRow("altered column") << "ALTER TABLE verdicts ADD COLUMN forged INTEGER" << "table \"verdicts\"";
    QTest::newRow("analyze statistics") << "ANALYZE" << "table \"sqlite_stat1\"";
}

void TestCaseHardening::hostileSchemaIsRefused()
{
    QFETCH(QString, sql);
    QFETCH(QString, named);
    const std::string path = dir_.file("hostile" + std::to_string(++cases_) + ".zkaudit");
    createCase(path);
    tamper(path, sql.toStdString());
    const std::vector<char> before = readFile(path);

    for (auto access : {CaseStore::Access::ReadOnly, CaseStore::Access::ReadWrite}) {
        auto refused = caught<zkdv::UnexpectedCaseSchema>([&] { CaseStore store(path, access); });
        QVERIFY(refused);
        const std::string message = refused->what();
        QVERIFY2(contains(message, "case " + path + " is refused"), message.c_str());
        QVERIFY2(contains(message, named.toStdString()), message.c_str());
        QVERIFY2(contains(message, "nothing was written"), message.c_str());
    }
    QVERIFY(readFile(path) == before);
}

void TestCaseHardening::migratedCasesAreAccepted_data()
{
    // A case as each schema version left it (the migrations up to it, nothing else: released
    // scripts never change), then migrated by a normal open.
    QTest::addColumn<int>("version");
    for (int version = 1; version <= CaseSchema::latestVersion(); ++version)
        QTest::addRow("from version %d", version) << version;
}

void TestCaseHardening::migratedCasesAreAccepted()
{
    QFETCH(int, version);
    const std::string path = dir_.file("old" + std::to_string(version) + ".zkaudit");
    {
        Database db(path, Database::Mode::ReadWriteCreate);
        CaseSchema::upgradeTo(db, version);
        QCOMPARE(db.userVersion(), version);
    }
    {
        CaseStore store(path, CaseStore::Access::ReadWrite);
        QCOMPARE(store.database().userVersion(), CaseSchema::latestVersion());
    }
    CaseStore again(path, CaseStore::Access::ReadOnly);
    QCOMPARE(again.database().userVersion(), CaseSchema::latestVersion());
}

void TestCaseHardening::triggersInAFileNeverFire()
{
    // Below the schema check: a connection runs none of a file's triggers and expands none of
    // its views, whatever opens it (the workstation's chart and table models open a case
    // through Database directly).
    const std::string path = dir_.file("triggers.sqlite");
    {
        Database db(path, Database::Mode::ReadWriteCreate);
        db.exec("CREATE TABLE t(v TEXT); CREATE TABLE log(v TEXT)");
    }
    tamper(path, "CREATE TRIGGER spy AFTER INSERT ON t BEGIN INSERT INTO log VALUES ('fired'); END;"
                 " CREATE VIEW v AS SELECT 1");
    Database db(path, Database::Mode::ReadWrite);
    db.exec("INSERT INTO t VALUES ('x')");
    QCOMPARE(count(db, "SELECT count(*) FROM log"), std::int64_t(0));
    auto view = caught<DatabaseError>([&] { db.queryInt64("SELECT * FROM v"); });
    QVERIFY(view);
    QVERIFY2(contains(view->what(), "prohibited"), view->what());
    // Defensive mode: the schema cannot be written behind SQLite's back.
    auto schemaWrite = caught<DatabaseError>(
        [&] { db.exec("PRAGMA writable_schema = ON; UPDATE sqlite_master SET sql = 'CREATE TABLE t(w)' WHERE name = 't'"); });
    QVERIFY(schemaWrite);
}

void TestCaseHardening::readOnlyOpenRollsBackAKilledWrite()
{
    const std::string path = dir_.file("killed.zkaudit");
    createCase(path);
    {
        Database db(path, Database::Mode::ReadWrite);
        QVERIFY(db.trySetJournalMode("delete"));  // as a rollback-journal ingest runs
    }
    // A writer killed after its first pages reached the file: a small cache makes SQLite spill
    // (sync the journal, then write the file) long before the commit.
    const int exit = inChild([&] {
        Database& db = *new Database(path, Database::Mode::ReadWrite);  // never closed: the process dies
        db.exec("PRAGMA cache_size = 2; BEGIN IMMEDIATE");
        for (int i = 0; i < 2000; ++i)
            db.exec("INSERT INTO case_info VALUES ('junk" + std::to_string(i) + "', hex(randomblob(200)))");
        return 0;
    });
    QCOMPARE(exit, 0);
    QVERIFY(std::filesystem::exists(path + "-journal"));

    Database reader(path, Database::Mode::ReadOnly);
    QCOMPARE(count(reader, "SELECT count(*) FROM case_info WHERE key LIKE 'junk%'"), std::int64_t(0));
    QCOMPARE(count(reader, "SELECT count(*) FROM replay_runs"), std::int64_t(1));
    QCOMPARE(count(reader, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check <> 'ok'"), std::int64_t(0));
    QVERIFY(!std::filesystem::exists(path + "-journal"));
}

void TestCaseHardening::syncAheadKeepsTheTransactionsLocks()
{
    // The ingest syncs the case from a thread of its own while its transaction is open; on
    // POSIX, closing that thread's descriptor would drop SQLite's locks and let another
    // process roll the running transaction back.
    const std::string path = dir_.file("locks.zkaudit");
    createCase(path);
    Database db(path, Database::Mode::ReadWrite);
    QVERIFY(db.trySetJournalMode("delete"));
    db.exec("PRAGMA cache_size = 2; BEGIN IMMEDIATE");
    for (int i = 0; i < 500; ++i)
        db.exec("INSERT INTO case_info VALUES ('row" + std::to_string(i) + "', hex(randomblob(200)))");
    QVERIFY(locksHeldOn(path));
    {
        zkdv::SyncAhead sync(db);
        sync.request();
    }
    QVERIFY2(locksHeldOn(path), "the locks of the open transaction were dropped");
    db.exec("COMMIT");
    QCOMPARE(count(db, "SELECT count(*) FROM case_info WHERE key LIKE 'row%'"), std::int64_t(500));
}

void TestCaseHardening::fullDiskSaysSo()
{
    // SQLite reports a full disk as SQLITE_FULL (its unix VFS turns ENOSPC into it); a page
    // limit makes SQLite itself fail the same way, without filling a real disk.
    const std::string path = dir_.file("full.zkaudit");
    createCase(path);
    Database db(path, Database::Mode::ReadWrite);
    const std::int64_t pages = count(db, "PRAGMA page_count");
    db.exec("PRAGMA max_page_count = " + std::to_string(pages + 4));
    auto full = caught<DatabaseError>([&] {
        zkdv::SqlTransaction transaction(db);
        for (int i = 0; i < 400; ++i)
            db.exec("INSERT INTO case_info VALUES ('big" + std::to_string(i) + "', hex(randomblob(8000)))");
        transaction.commit();
    });
    QVERIFY(full);
    QVERIFY2(contains(full->what(), "the disk is full (writing " + path + ")"), full->what());
    QCOMPARE(count(db, "SELECT count(*) FROM case_info WHERE key LIKE 'big%'"), std::int64_t(0));
}

void TestCaseHardening::lockedCaseSaysSo()
{
    const std::string path = dir_.file("locked.zkaudit");
    createCase(path);
    Database holder(path, Database::Mode::ReadWrite);
    holder.exec("BEGIN IMMEDIATE");
    Database other(path, Database::Mode::ReadWrite);
    other.setBusyTimeout(50);
    auto busy = caught<DatabaseError>([&] { zkdv::SqlTransaction transaction(other); });
    QVERIFY(busy);
    QVERIFY(busy->busy());
    QVERIFY2(contains(busy->what(), path + " is being written by another process (or connection) and stayed locked for 50 ms"), busy->what());
    holder.exec("ROLLBACK");
}

void TestCaseHardening::killedReplayIsMarkedInterrupted()
{
    const std::string path = dir_.file("replay-killed.zkaudit");
    createCase(path);
    {
        Database db(path, Database::Mode::ReadWrite);
        db.exec("DELETE FROM replay_runs");
    }
    // A replay process that began a run, stored three results and was killed.
    const int exit = inChild([&] {
        CaseStore& store = *new CaseStore(path, CaseStore::Access::ReadWrite);  // never closed: the process dies
        zkdv::ReplayStore replay(store.database());
        zkdv::ReplayRunInfo info;
        info.tapeId = 1;
        info.device = "cpu";
        info.selection = "all";
        const std::int64_t run = replay.beginRun(info);
        std::vector<zkdv::TransactionOutcome> outcomes(3);
        for (std::size_t i = 0; i < outcomes.size(); ++i)
            outcomes[i].index = i;
        replay.storeOutcomes(run, outcomes);
        return replay.pendingOutcomes() == 0 ? 0 : 1;
    });
    QCOMPARE(exit, 0);
    // A run of this (living) process stays running.
    std::int64_t living = 0;
    {
        Database db(path, Database::Mode::ReadWrite);  // not a CaseStore, which would mark the other
        zkdv::ReplayRunInfo info;
        info.tapeId = 1;
        info.device = "cpu";
        info.selection = "ids:1";
        living = zkdv::ReplayStore(db).beginRun(info);
    }
    const std::vector<char> before = readFile(path);
    {
        // Read-only: shown as interrupted, nothing written.
        CaseStore reader(path, CaseStore::Access::ReadOnly);
        const auto runs = zkdv::ReplayStore(reader.database()).runs();
        QCOMPARE(runs.size(), std::size_t(2));
        QCOMPARE(runs[0].id, living);
        QCOMPARE(runs[0].status, zkdv::RunStatus::Running);
        QCOMPARE(runs[1].status, zkdv::RunStatus::Interrupted);
        QVERIFY2(contains(runs[1].problem, "ended before the run finished"), runs[1].problem.c_str());
        QCOMPARE(runs[1].replayed, std::uint64_t(3));
        QCOMPARE(count(reader.database(), "SELECT count(*) FROM replay_runs WHERE status = 'running'"), std::int64_t(2));
    }
    QVERIFY(readFile(path) == before);
    // Opened for writing: recorded, with its verdicts kept.
    CaseStore store(path, CaseStore::Access::ReadWrite);
    QCOMPARE(count(store.database(), "SELECT count(*) FROM replay_runs WHERE status = 'interrupted' AND finished_at IS NOT NULL"),
             std::int64_t(1));
    QCOMPARE(count(store.database(), "SELECT count(*) FROM replay_runs WHERE status = 'running'"), std::int64_t(1));
    QCOMPARE(count(store.database(), "SELECT count(*) FROM verdicts"), std::int64_t(3));
}

void TestCaseHardening::runOwnerTellsAReusedPid()
{
    zkdv::RunOwner owner = zkdv::RunOwner::current();
    QVERIFY(owner.pid > 0);
    QVERIFY(owner.startTime > 0);
    QVERIFY(!owner.bootId.empty());
    QVERIFY(!owner.isGone());
    zkdv::RunOwner reused = owner;  // the same pid, given to a process started at another time
    reused.startTime += 1;
    QVERIFY(reused.isGone());
    zkdv::RunOwner rebooted = owner;
    rebooted.bootId = "00000000-0000-0000-0000-000000000000";
    QVERIFY(rebooted.isGone());
    zkdv::RunOwner elsewhere = reused;  // another machine's process: cannot be told, never gone
    elsewhere.host += ".elsewhere";
    QVERIFY(!elsewhere.isGone());
}

QTEST_GUILESS_MAIN(TestCaseHardening)
#include "test_case_hardening.moc"
