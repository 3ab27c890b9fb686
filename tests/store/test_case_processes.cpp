// Runs real zkdv-audit processes against one case: an ingest killed (SIGKILL) at many points
// leaves a case that opens read-only and read-write, passes integrity_check, keeps every tape
// ingested before and holds the killed tape whole or not at all; readers and a second writer
// started at many moments of an ingest neither fail nor damage anything.

#include <QtTest>

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "audit_process.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/tape/tape_scanner.h"

using namespace zkdv;
using namespace std::chrono_literals;
using test::AuditProcess;

namespace {

// Large enough that an ingest lasts a good part of a second on a loaded machine, small enough
// that the test's dozen ingests stay within seconds.
constexpr std::uint64_t kLargeTapeSteps = 120000;

std::string writeTape(const std::string& path, std::uint64_t steps, std::uint64_t seed)
{
    SyntheticDemoOptions options;
    options.steps = steps;
    options.batchSize = 2;
    options.features = 4;
    options.classes = 3;
    options.seed = seed;
    options.overwrite = true;
    writeSyntheticDemoTape(path, options);
    return path;
}

std::int64_t count(Database& db, const std::string& sql) { return db.queryInt64(sql).value_or(-1); }

// Every row that belongs to tape 1, in key order: equal dumps mean the first tape is intact.
std::string firstTapeRows(Database& db)
{
    std::string dump;
    for (const char* sql : {"SELECT quote(id) || quote(chain_head) || quote(size) || quote(transaction_count) FROM tapes WHERE id = 1",
                            "SELECT quote(idx) || quote(loss) || quote(fingerprints) || quote(record_digest) FROM transactions"
                            " WHERE tape_id = 1 ORDER BY idx",
                            "SELECT quote(before_transaction) || quote(record_digest) FROM snapshots WHERE tape_id = 1 ORDER BY 1",
                            "SELECT quote(key) || quote(value) FROM case_info ORDER BY key"}) {
        Statement rows = db.prepare(sql);
        while (rows.step())
            dump += rows.text(0) + "\n";
    }
    return dump;
}

std::vector<std::string> ingestArguments(const std::string& tape, const std::string& casePath)
{
    return {"ingest", tape, "--case", casePath};
}

}  // namespace

class TestCaseProcesses : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void killedIngestLeavesAWholeCase_data();
    void killedIngestLeavesAWholeCase();
    void secondWriterDuringAnIngest_data();
    void secondWriterDuringAnIngest();
    void everyCommandRefusesAHostileCase();

private:
    // A fresh copy of the case holding only the small tape.
    std::string freshCase(const std::string& name);
    // The checks every case must pass after anything happened to it.
    void checkWhole(const std::string& casePath);

    test::TempDir dir_;
    std::string smallTape_, largeTape_, otherTape_, baseline_, baselineRows_;
    std::uint64_t largeTransactions_ = 0;
};

void TestCaseProcesses::initTestCase()
{
    smallTape_ = writeTape(dir_.file("small.zkdv"), 300, 1);
    largeTape_ = writeTape(dir_.file("large.zkdv"), kLargeTapeSteps, 2);
    otherTape_ = writeTape(dir_.file("other.zkdv"), 2000, 3);
    largeTransactions_ = scanTape(largeTape_).transactionCount;
    QCOMPARE(largeTransactions_, kLargeTapeSteps);
    baseline_ = dir_.file("baseline.zkaudit");
    {
        CaseStore store(baseline_, CaseStore::Access::ReadWrite);
        store.ingestTape(smallTape_);
    }
    QVERIFY(!std::filesystem::exists(baseline_ + "-wal"));
    Database db(baseline_, Database::Mode::ReadOnly);
    baselineRows_ = firstTapeRows(db);
    QVERIFY(!baselineRows_.empty());
}

std::string TestCaseProcesses::freshCase(const std::string& name)
{
    const std::string path = dir_.file(name);
    std::filesystem::copy_file(baseline_, path, std::filesystem::copy_options::overwrite_existing);
    return path;
}

void TestCaseProcesses::checkWhole(const std::string& casePath)
{
    {
        CaseStore reader(casePath, CaseStore::Access::ReadOnly);
        Database& db = reader.database();
        QCOMPARE(count(db, "SELECT count(*) FROM pragma_integrity_check WHERE integrity_check <> 'ok'"), std::int64_t(0));
        QCOMPARE(firstTapeRows(db), baselineRows_);
        // Every tape is whole: as many rows as it claims, its sort orders with it.
        Statement tapes = db.prepare("SELECT id, transaction_count, (SELECT count(*) FROM transactions t WHERE t.tape_id = tapes.id),"
                                     " status FROM tapes");
        while (tapes.step()) {
            QCOMPARE(tapes.int64(2), tapes.int64(1));
            QCOMPARE(tapes.text(3), std::string("sealed"));
            QVERIFY2(tapes.int64(1) > 0, "a tape row without transactions");
        }
        QCOMPARE(count(db, "SELECT count(*) FROM transactions WHERE tape_id NOT IN (SELECT id FROM tapes)"), std::int64_t(0));
    }
    CaseStore writer(casePath, CaseStore::Access::ReadWrite);
    QCOMPARE(count(writer.database(), "SELECT count(*) FROM pragma_quick_check WHERE quick_check <> 'ok'"), std::int64_t(0));
}

void TestCaseProcesses::killedIngestLeavesAWholeCase_data()
{
    // Progress milestones on stderr (a line per tenth of the scan or so), then moments after
    // the scan: the rows being flushed, the sort orders stored, the commit.
    QTest::addColumn<QString>("milestone");
    QTest::addColumn<int>("times");
    QTest::addColumn<int>("afterMs");
    for (int line = 1; line <= 10; ++line)
        QTest::addRow("at progress line %d", line) << QStringLiteral("verifying ") << line << 0;
    // 20 points in all; the late ones may find the ingest finished, which must hold too.
    for (int afterMs : {0, 15, 40, 80, 150, 250, 400, 600, 900, 1300})
        QTest::addRow("%d ms after the scan", afterMs) << QStringLiteral("verifying 100%") << 1 << afterMs;
}

void TestCaseProcesses::killedIngestLeavesAWholeCase()
{
    QFETCH(QString, milestone);
    QFETCH(int, times);
    QFETCH(int, afterMs);
    const std::string casePath = freshCase("killed.zkaudit");
    {
        AuditProcess ingest(test::auditExecutable(), ingestArguments(largeTape_, casePath));
        const bool reached = ingest.waitForStderr(milestone.toStdString(), 120s, times);
        QVERIFY2(reached, ingest.err().c_str());
        std::this_thread::sleep_for(std::chrono::milliseconds(afterMs));
        ingest.kill();
    }
    checkWhole(casePath);
    // The read-only commands work on what is left, and ingesting again completes the case.
    AuditProcess info(test::auditExecutable(), {"info", casePath});
    QVERIFY2(info.wait(120s) == 0, info.err().c_str());
    AuditProcess again(test::auditExecutable(), ingestArguments(largeTape_, casePath));
    QVERIFY2(again.wait(120s) == 0, again.err().c_str());
    checkWhole(casePath);
    Database db(casePath, Database::Mode::ReadOnly);
    QCOMPARE(count(db, "SELECT count(*) FROM tapes"), std::int64_t(2));
}

void TestCaseProcesses::secondWriterDuringAnIngest_data()
{
    QTest::addColumn<QString>("milestone");
    QTest::addColumn<int>("times");
    QTest::addColumn<int>("afterMs");
    for (int line : {1, 4, 7, 10})
        QTest::addRow("at progress line %d", line) << QStringLiteral("verifying ") << line << 0;
    for (int afterMs : {0, 20, 50, 100})
        QTest::addRow("%d ms after the scan", afterMs) << QStringLiteral("verifying 100%") << 1 << afterMs;
}

void TestCaseProcesses::secondWriterDuringAnIngest()
{
    // A second ingest and a reader started while the first ingest runs: both wait for or
    // read around it, the first ingest commits, and nothing stored before is lost.
    QFETCH(QString, milestone);
    QFETCH(int, times);
    QFETCH(int, afterMs);
    const std::string casePath = freshCase("shared.zkaudit");
    AuditProcess first(test::auditExecutable(), ingestArguments(largeTape_, casePath));
    QVERIFY2(first.waitForStderr(milestone.toStdString(), 120s, times), first.err().c_str());
    std::this_thread::sleep_for(std::chrono::milliseconds(afterMs));
    AuditProcess second(test::auditExecutable(), ingestArguments(otherTape_, casePath));
    AuditProcess reader(test::auditExecutable(), {"info", casePath});
    QVERIFY2(reader.wait(120s) == 0, reader.err().c_str());
    QVERIFY2(first.wait(120s) == 0, first.err().c_str());
    QVERIFY2(second.wait(120s) == 0, second.err().c_str());
    checkWhole(casePath);
    Database db(casePath, Database::Mode::ReadOnly);
    QCOMPARE(count(db, "SELECT count(*) FROM tapes"), std::int64_t(3));
}

void TestCaseProcesses::everyCommandRefusesAHostileCase()
{
    // The schema check sits in the one place that opens a case, so every command gets it.
    const std::string casePath = freshCase("hostile.zkaudit");
    {
        sqlite3* db = nullptr;
        QCOMPARE(sqlite3_open_v2(casePath.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
        const int rc = sqlite3_exec(db, "CREATE TRIGGER forge AFTER INSERT ON verdicts BEGIN UPDATE verdicts SET verdict = 'exact'"
                                        " WHERE run_id = new.run_id AND idx = new.idx; END", nullptr, nullptr, nullptr);
        sqlite3_close(db);
        QCOMPARE(rc, SQLITE_OK);
    }
    const std::vector<std::vector<std::string>> commands = {
        {"info", casePath},
        {"report", casePath, "-o", dir_.file("hostile.json")},
        {"ingest", otherTape_, "--case", casePath},
        {"replay", casePath, "--select", "all"},
    };
    for (const std::vector<std::string>& command : commands) {
        AuditProcess process(test::auditExecutable(), command);
        const int exit = process.wait(120s);
        const std::string what = command.front() + ": exit " + std::to_string(exit) + ": " + process.err();
        QVERIFY2(exit == 2, what.c_str());
        QVERIFY2(process.err().find("is refused: it has a trigger \"forge\" on table \"verdicts\"") != std::string::npos, what.c_str());
    }
    Database db(casePath, Database::Mode::ReadOnly);
    QCOMPARE(count(db, "SELECT count(*) FROM tapes"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM replay_runs"), std::int64_t(0));
}

QTEST_GUILESS_MAIN(TestCaseProcesses)
#include "test_case_processes.moc"
