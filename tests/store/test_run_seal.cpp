// Tests for run seals (zkdv/store/run_seal.h): a replay run's rows are signed with the
// auditor's key when the run ends, and reports and `info` draw a conclusion only from runs
// whose seal a reader trusts. A case is a file people hand to each other; these tests edit
// its rows the way anyone with an SQLite shell can.
#include <QtTest>
#include <QJsonDocument>
#include <QJsonObject>

#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "audit_process.h"
#include "config_home.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/run_seal.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"

using namespace zkdv;
using zkdv::test::ConfigHome;

namespace {

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

// Runs SQL on the case file with SQLite itself, as someone editing it by hand would.
void editByHand(const std::string& casePath, const std::string& sql)
{
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(casePath.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    const std::string why = message ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, (sql + ": " + why).c_str());
}

TransactionOutcome outcome(std::uint64_t index, Verdict verdict)
{
    TransactionOutcome o;
    o.index = index;
    o.segment = index / 12;
    o.verdict = verdict;
    o.detail = verdict == Verdict::Exact ? "replayed bit for bit" : "parameter w differs after the step (max 3 ULP)";
    TensorComparison comparison;
    comparison.tensor = "w";
    comparison.slot = "param";
    comparison.verdict = verdict;
    comparison.metrics.elements = 12;
    comparison.metrics.bitwiseEqual = verdict == Verdict::Exact;
    comparison.metrics.maxUlp = verdict == Verdict::Exact ? 0 : 3;
    comparison.metrics.maxAbs = verdict == Verdict::Exact ? 0 : 1e-7;
    o.comparisons.push_back(comparison);
    return o;
}

// A case with one synthetic tape and one finished run over transactions 0-9 whose
// transaction `divergedAt` diverged (none when it is >= 10), stored and sealed the way a
// replay stores it, with the key of the current ZKDV_CONFIG_HOME. Returns the run's id.
std::int64_t caseWithRun(const std::string& dir, const std::string& casePath, std::uint64_t divergedAt, std::string* sealProblem = nullptr)
{
    SyntheticDemoOptions options;
    options.steps = 24;
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    options.seed = 7;
    options.overwrite = true;
    const std::string tape = dir + "/demo.zkdv";
    writeSyntheticDemoTape(tape, options);
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    const std::int64_t tapeId = store.ingestTape(tape).tapeId;
    ReplayStore replay(store.database());
    ReplayRunInfo info;
    info.tapeId = tapeId;
    info.device = "cpu";
    info.selection = "random:10";
    info.seed = 3;
    info.tolerance = "exact";
    info.selectedCount = 10;
    info.programCheck = ProgramCheck::NotReplayable;  // as a replay finds a synthetic tape's program
    const std::int64_t runId = replay.beginRun(info);
    std::vector<TransactionOutcome> outcomes;
    for (std::uint64_t i = 0; i < 10; ++i)
        outcomes.push_back(outcome(i, i == divergedAt ? Verdict::Diverged : Verdict::Exact));
    replay.storeOutcomes(runId, outcomes);
    const std::string problem = replay.finishRun(runId, RunStatus::Finished, "");
    if (sealProblem)
        *sealProblem = problem;
    return runId;
}

// Adds a finished run over transactions 0-9 of the case's tape, transaction `divergedAt`
// diverged (none when >= 10), with `extra` stored besides. Returns its id.
std::int64_t addRun(const std::string& casePath, std::uint64_t divergedAt, const std::vector<TransactionOutcome>& extra = {},
                    RunStatus status = RunStatus::Finished, std::uint64_t count = 10)
{
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    ReplayStore replay(store.database());
    ReplayRunInfo info;
    info.tapeId = store.tapes().front().id;
    info.device = "cpu";
    info.selection = "random:10";
    info.seed = 5;
    info.tolerance = "exact";
    info.selectedCount = 10;
    info.programCheck = ProgramCheck::NotReplayable;  // as a replay finds a synthetic tape's program
    const std::int64_t runId = replay.beginRun(info);
    std::vector<TransactionOutcome> outcomes;
    for (std::uint64_t i = 0; i < count; ++i)
        outcomes.push_back(outcome(i, i == divergedAt ? Verdict::Diverged : Verdict::Exact));
    outcomes.insert(outcomes.end(), extra.begin(), extra.end());
    replay.storeOutcomes(runId, outcomes);
    replay.finishRun(runId, status, "");
    return runId;
}

TransactionOutcome unverifiable(std::uint64_t index, UnverifiableCause cause, const std::string& why)
{
    TransactionOutcome o;
    o.index = index;
    o.segment = index / 12;
    o.verdict = Verdict::Unverifiable;
    o.cause = cause;
    o.detail = why;
    return o;
}

ReportData reportOfRun(const std::string& casePath, std::int64_t runId)
{
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    return buildAuditReport(store, {0, runId});
}

std::string allWarnings(const ReportData& report)
{
    std::string text = report.headline;
    for (const std::string& warning : report.warnings)
        text += "\n" + warning;
    return text;
}

QJsonObject readJson(const std::string& path)
{
    QFile file(QString::fromStdString(path));
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(file.readAll()).object();
}

RunSealCheck checkOf(const std::string& casePath, std::int64_t runId)
{
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    return checkRunSeal(store.database(), runId);
}

ReportData reportOf(const std::string& casePath)
{
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    return buildAuditReport(store);
}

}  // namespace

class TestRunSeal : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void aFinishedRunIsVouched();
    void forgedPassIsNotReported();
    void anyEditIsFound_data();
    void anyEditIsFound();
    void runsOfSchema12GetTheProgramCheckTheirProblemSays();
    void runSealedBeforeSchema9StaysVouched();
    void removedSealReadsUnsigned();
    void anotherAuditorsKeyIsTrustedOnlyWhenListed();
    void aForgerSigningWithTheirOwnKeyIsNotTrusted();
    void noKeyStoresTheRunUnsigned();
    void badTrustedKeysFileIsNamed();
    void keyIsPrivateAndMadeOnce();
    void cliSaysNotVouched();
    void earlierFailureSurvivesItsAlteration_data();
    void earlierFailureSurvivesItsAlteration();
    void alteredEarlierRunBlocksAPass();
    void reportRowsAreSealed_data();
    void reportRowsAreSealed();
    void versionOneSealsKeepVerifying();
    void trainersFailureFailsTheReport();
    void infoSaysWhatTheReportSays();
    void othersMayNotWriteTheTrustList();
    void othersMayNotReadTheSigningKey();
};

void TestRunSeal::aFinishedRunIsVouched()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    std::string problem = "not set";
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 99, &problem);
    QCOMPARE(problem, std::string());
    const RunSealCheck check = checkOf(casePath, runId);
    QCOMPARE(int(check.state), int(RunSealCheck::State::Vouched));
    QVERIFY2(contains(check.signer, "this user's key"), check.signer.c_str());
    QVERIFY(!check.sealedAt.empty());
    const ReportData report = reportOf(casePath);
    QVERIFY2(report.passed(), report.headline.c_str());
    QVERIFY2(report.headline.rfind("PASSED", 0) == 0, report.headline.c_str());
}

// The attack of issue 13, item 2, without SQL that runs: the rows themselves edited. Before
// run seals the report said "PASSED … bit for bit" for this case.
void TestRunSeal::forgedPassIsNotReported()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 5);
    {
        const ReportData honest = reportOf(casePath);
        QVERIFY(!honest.passed());
        QVERIFY2(honest.headline.rfind("FAILED", 0) == 0, honest.headline.c_str());
    }
    editByHand(casePath,
               "UPDATE verdicts SET verdict = 'exact', detail = 'replayed bit for bit' WHERE idx = 5;"
               "UPDATE metrics SET verdict = 'exact', bitwise_equal = 1, max_ulp = 0, max_abs = 0 WHERE idx = 5;");
    const ReportData report = reportOf(casePath);
    QVERIFY2(!report.passed(), report.headline.c_str());
    // The seal still signs what the run found: the failure stands, whatever the rows say now.
    QVERIFY2(report.headline.rfind("FAILED", 0) == 0 && contains(report.headline, "altered"), report.headline.c_str());
    QCOMPARE(int(report.seal.state), int(RunSealCheck::State::Altered));
    QVERIFY(!report.sampling.has_value());
    QVERIFY2(!report.warnings.empty() && contains(report.warnings.front(), "changed after zkdv stored them"),
             report.warnings.empty() ? "no warning" : report.warnings.front().c_str());
    QVERIFY2(contains(report.warnings.front(), "zkdv-audit replay"), report.warnings.front().c_str());
    QCOMPARE(int(checkOf(casePath, runId).state), int(RunSealCheck::State::Altered));
}

void TestRunSeal::anyEditIsFound_data()
{
    QTest::addColumn<QString>("sql");
    QTest::newRow("verdict") << "UPDATE verdicts SET verdict = 'within-tolerance' WHERE idx = 2";
    QTest::newRow("detail") << "UPDATE verdicts SET detail = 'fine' WHERE idx = 5";
    QTest::newRow("a verdict removed") << "DELETE FROM verdicts WHERE idx = 5";
    QTest::newRow("a verdict added") << "INSERT INTO verdicts(run_id, idx, verdict, segment, selected) VALUES(1, 20, 'exact', 1, 1)";
    QTest::newRow("a metric value") << "UPDATE metrics SET max_ulp = 0 WHERE idx = 5";
    QTest::newRow("a value's storage class") << "UPDATE metrics SET ulp_histogram = CAST(ulp_histogram AS TEXT) WHERE idx = 5";
    QTest::newRow("a metric removed") << "DELETE FROM metrics WHERE idx = 5";
    QTest::newRow("run status") << "UPDATE replay_runs SET status = 'cancelled'";
    QTest::newRow("run seed") << "UPDATE replay_runs SET seed = 4";
    // A given seed passed off as drawn at audit time, or its source removed so the run reads
    // like one sealed before case schema 9.
    QTest::newRow("seed source") << "UPDATE replay_runs SET seed_source = 'drawn'";
    QTest::newRow("seed source removed") << "UPDATE replay_runs SET seed_source = NULL";
    QTest::newRow("run selection") << "UPDATE replay_runs SET selection_spec = 'all'";
    QTest::newRow("run problem") << "UPDATE replay_runs SET problem = 'none'";
    // The report states the program check from this column alone (case schema 13).
    QTest::newRow("program check") << "UPDATE replay_runs SET program_check = 'matched'";
    QTest::newRow("program check removed") << "UPDATE replay_runs SET program_check = NULL";
    // A run claiming a merge held its shards to a planned audit (case schema 17).
    QTest::newRow("planned audit added") << "UPDATE replay_runs SET planned_audit_id = 1";
    QTest::newRow("tape identity") << "UPDATE tapes SET chain_head = 'ab' || substr(chain_head, 3)";
    QTest::newRow("tape status") << "UPDATE tapes SET status = 'unsealed'";
    QTest::newRow("signature") << "UPDATE run_seals SET signature = zeroblob(64)";
    QTest::newRow("stored digest") << "UPDATE run_seals SET content_sha256 = zeroblob(32)";
    QTest::newRow("short signature") << "UPDATE run_seals SET signature = x'00'";
}

// Case schema 13 stores each run's program check; runs stored before get what their problem
// text says, once, and read back as that check.
void TestRunSeal::runsOfSchema12GetTheProgramCheckTheirProblemSays()
{
    test::TempDir dir;
    const std::string casePath = dir.file("case.zkaudit");
    caseWithRun(dir.path(), casePath, 99);
    {
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        QCOMPARE(ReplayStore(store.database()).runs().front().programCheck, std::optional<ProgramCheck>(ProgramCheck::NotReplayable));
    }
    editByHand(casePath, "DROP TABLE tape_seals; ALTER TABLE transaction_notes DROP COLUMN public_key;"
                         " ALTER TABLE transaction_notes DROP COLUMN signature;"
                         " ALTER TABLE replay_runs DROP COLUMN planned_audit_id; DROP TABLE planned_audits;"
                         " DROP TABLE merged_shards; ALTER TABLE replay_runs DROP COLUMN shard_index; ALTER TABLE replay_runs DROP COLUMN shard_count;"
                         " DROP TABLE provenance_checks; ALTER TABLE tapes DROP COLUMN signer_key_id; ALTER TABLE tapes DROP COLUMN signer_algorithm;"
                         " ALTER TABLE tapes DROP COLUMN signer_public_key;"
                         " ALTER TABLE replay_runs DROP COLUMN program_check; UPDATE tapes SET program_kind = 'torchscript';"
                         " UPDATE replay_runs SET problem = 'program digest mismatch: the tape commits to sha256 00'; PRAGMA user_version = 12");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    const StoredReplayRun run = ReplayStore(store.database()).runs().front();
    QCOMPARE(run.programCheck, std::optional<ProgramCheck>(ProgramCheck::Mismatched));
}

void TestRunSeal::anyEditIsFound()
{
    QFETCH(QString, sql);
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 5);
    QCOMPARE(runId, std::int64_t(1));
    QCOMPARE(int(checkOf(casePath, runId).state), int(RunSealCheck::State::Vouched));
    editByHand(casePath, sql.toStdString());
    const RunSealCheck check = checkOf(casePath, runId);
    QVERIFY2(check.state == RunSealCheck::State::Altered, (runSealStateName(check.state) + std::string(": ") + check.explanation).c_str());
    const ReportData report = reportOf(casePath);
    QVERIFY(!report.passed());
    // The run had found transaction 5 diverged: where the signature still holds over that
    // finding it stands (FAILED); where the seal itself was damaged nothing can be said.
    const bool sealEdited = sql.contains(QStringLiteral("run_seals"));
    QVERIFY2(report.headline.rfind(sealEdited ? "NOT VOUCHED" : "FAILED", 0) == 0, report.headline.c_str());
}

void TestRunSeal::runSealedBeforeSchema9StaysVouched()
{
    // A run stored before case schema 9 has no seed_source and was sealed under tag 1: it
    // stays vouched, reads as unknown, and gaining a source afterwards breaks its seal.
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    std::int64_t runId = 0;
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        SyntheticDemoOptions options;
        options.steps = 24;
        options.batchSize = 4;
        options.seed = 7;
        writeSyntheticDemoTape(dir.file("demo.zkdv"), options);
        ReplayStore replay(store.database());
        ReplayRunInfo info;
        info.tapeId = store.ingestTape(dir.file("demo.zkdv")).tapeId;
        info.device = "cpu";
        info.selection = "random:10";
        info.seed = 3;
        info.tolerance = "exact";
        info.selectedCount = 10;
        runId = replay.beginRun(info);
        store.database().exec("UPDATE replay_runs SET seed_source = NULL");  // as an older zkdv stored it
        std::vector<TransactionOutcome> outcomes;
        for (std::uint64_t i = 0; i < 10; ++i)
            outcomes.push_back(outcome(i, Verdict::Exact));
        replay.storeOutcomes(runId, outcomes);
        QCOMPARE(replay.finishRun(runId, RunStatus::Finished, ""), std::string());
        QVERIFY(replay.runs().front().seedSource == SeedSource::Unknown);
    }
    QCOMPARE(int(checkOf(casePath, runId).state), int(RunSealCheck::State::Vouched));
    const ReportData report = reportOf(casePath);
    QVERIFY2(report.passed(), report.headline.c_str());
    QVERIFY(report.seedSource == SeedSource::Unknown);
    QVERIFY(report.sampling);
    QVERIFY2(contains(report.sampling->sentence, "does not record whether seed 3 was drawn"), report.sampling->sentence.c_str());
    editByHand(casePath, "UPDATE replay_runs SET seed_source = 'drawn'");
    QCOMPARE(int(checkOf(casePath, runId).state), int(RunSealCheck::State::Altered));
}

void TestRunSeal::removedSealReadsUnsigned()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 99);
    editByHand(casePath, "DELETE FROM run_seals");
    const RunSealCheck check = checkOf(casePath, runId);
    QCOMPARE(int(check.state), int(RunSealCheck::State::Unsigned));
    QVERIFY2(contains(check.explanation, "no seal"), check.explanation.c_str());
    const ReportData report = reportOf(casePath);
    QVERIFY(!report.passed());
    QVERIFY2(report.headline.rfind("NOT VOUCHED", 0) == 0, report.headline.c_str());
}

void TestRunSeal::anotherAuditorsKeyIsTrustedOnlyWhenListed()
{
    test::TempDir dir;
    const std::string casePath = dir.file("case.zkaudit");
    std::int64_t runId = 0;
    PublicKey alice{};
    {
        ConfigHome home(dir.file("alice"));
        runId = caseWithRun(dir.path(), casePath, 99);
        alice = AuditorKey::loadOrCreate().publicKey();
    }
    ConfigHome home(dir.file("bob"));
    RunSealCheck check = checkOf(casePath, runId);
    QCOMPARE(int(check.state), int(RunSealCheck::State::UntrustedSigner));
    QVERIFY2(contains(check.signer, keyFingerprint(alice)), check.signer.c_str());
    QVERIFY2(contains(check.explanation, "trusted-keys"), check.explanation.c_str());
    QVERIFY(!reportOf(casePath).passed());

    QVERIFY(QDir().mkpath(QString::fromStdString(dir.file("bob"))));
    {
        std::ofstream trusted(dir.file("bob/trusted-keys"));
        trusted << "# auditors whose replays I accept\n\n" << toHex(alice) << "  Alice Auditor  \n";
    }
    check = checkOf(casePath, runId);
    QCOMPARE(int(check.state), int(RunSealCheck::State::Vouched));
    QVERIFY2(contains(check.signer, "(trusted: Alice Auditor)"), check.signer.c_str());
    const ReportData report = reportOf(casePath);
    QVERIFY2(report.passed(), report.headline.c_str());
}

void TestRunSeal::aForgerSigningWithTheirOwnKeyIsNotTrusted()
{
    test::TempDir dir;
    const std::string casePath = dir.file("case.zkaudit");
    std::int64_t runId = 0;
    {
        ConfigHome home(dir.file("alice"));
        runId = caseWithRun(dir.path(), casePath, 5);
    }
    // Mallory edits the failure away and seals the result with a key of her own.
    editByHand(casePath, "UPDATE verdicts SET verdict = 'exact' WHERE idx = 5; UPDATE metrics SET verdict = 'exact' WHERE idx = 5;");
    {
        ConfigHome home(dir.file("mallory"));
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        SqlTransaction transaction(store.database());
        sealRun(store.database(), runId, AuditorKey::loadOrCreate());
        transaction.commit();
        QCOMPARE(int(checkRunSeal(store.database(), runId).state), int(RunSealCheck::State::Vouched));  // to Mallory herself
    }
    ConfigHome home(dir.file("alice"));
    const RunSealCheck check = checkOf(casePath, runId);
    QCOMPARE(int(check.state), int(RunSealCheck::State::UntrustedSigner));
    const ReportData report = reportOf(casePath);
    QVERIFY(!report.passed());
    QVERIFY2(report.headline.rfind("NOT VOUCHED", 0) == 0, report.headline.c_str());
}

void TestRunSeal::noKeyStoresTheRunUnsigned()
{
    test::TempDir dir;
    {
        std::ofstream notAFolder(dir.file("settings-file"));
        notAFolder << "x";
    }
    const std::string casePath = dir.file("case.zkaudit");
    std::string problem;
    std::int64_t runId = 0;
    {
        ConfigHome home(dir.file("settings-file"));  // a file where the folder should be
        runId = caseWithRun(dir.path(), casePath, 99, &problem);
    }
    QVERIFY2(contains(problem, "settings-file"), problem.c_str());
    ConfigHome home(dir.file("auditor"));
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    const std::vector<StoredReplayRun> runs = ReplayStore(store.database()).runs();
    QCOMPARE(runs.size(), std::size_t(1));
    QCOMPARE(runs.front().status, RunStatus::Finished);  // the results are kept
    QCOMPARE(runs.front().exact, std::uint64_t(10));
    QCOMPARE(int(checkRunSeal(store.database(), runId).state), int(RunSealCheck::State::Unsigned));
    QVERIFY(!buildAuditReport(store).passed());
}

void TestRunSeal::badTrustedKeysFileIsNamed()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 99);
    {
        std::ofstream trusted(dir.file("auditor/trusted-keys"));
        trusted << "# ok\n" << std::string(64, 'a') << " fine\nnot-a-key somebody\n";
    }
    try {
        checkOf(casePath, runId);
        QFAIL("a trusted-keys file with a line that is not a key was read");
    } catch (const Error& error) {
        const std::string message = error.what();
        QVERIFY2(contains(message, "trusted-keys") && contains(message, "line 3") && contains(message, "not-a-key"), message.c_str());
    }
}

void TestRunSeal::keyIsPrivateAndMadeOnce()
{
    test::TempDir dir;
    const std::string folder = dir.file("fresh/zkdv");
    ConfigHome home(folder);
    QVERIFY(!AuditorKey::existingPublicKey().has_value());
    // Processes that start at once all end up with the one key that was stored first.
    std::vector<PublicKey> keys(6);
    std::vector<std::string> failures(keys.size());
    std::vector<std::thread> threads;
    for (std::size_t i = 0; i < keys.size(); ++i)
        threads.emplace_back([&, i] {
            try {
                keys[i] = AuditorKey::loadOrCreate().publicKey();
            } catch (const std::exception& error) {
                failures[i] = error.what();
            }
        });
    for (std::thread& thread : threads)
        thread.join();
    for (std::size_t i = 0; i < keys.size(); ++i) {
        QVERIFY2(failures[i].empty(), failures[i].c_str());
        QVERIFY(keys[i] == keys[0]);
    }
    QVERIFY(AuditorKey::existingPublicKey() == keys[0]);
    struct stat status {};
    QCOMPARE(::stat((folder + "/signing-key.pem").c_str(), &status), 0);
    QCOMPARE(status.st_mode & 0777, mode_t(0600));
    QCOMPARE(QDir(QString::fromStdString(folder)).entryList(QDir::Files | QDir::Hidden).size(), 1);  // no temporary left
    // A signature verifies with the public key and with no other message.
    const AuditorKey key = AuditorKey::loadOrCreate();
    const std::string message = "a run";
    const Signature signature = key.sign(ByteSpan(std::string_view(message)));
    QVERIFY(verifySignature(key.publicKey(), ByteSpan(std::string_view(message)), signature));
    QVERIFY(!verifySignature(key.publicKey(), ByteSpan(std::string_view("a run!")), signature));
    // A damaged key file is an error naming it, never a new key in its place.
    {
        std::ofstream damaged(folder + "/signing-key.pem", std::ios::trunc);
        damaged << "-----BEGIN PRIVATE KEY-----\nnonsense\n";
    }
    try {
        AuditorKey::loadOrCreate();
        QFAIL("a damaged signing key was used");
    } catch (const Error& error) {
        QVERIFY2(contains(error.what(), "signing-key.pem"), error.what());
    }
}

// The same through zkdv-audit: `info` and `report` say NOT VOUCHED for an edited run, and a
// report made by another user who does not trust the signer does too.
void TestRunSeal::cliSaysNotVouched()
{
    test::TempDir dir;
    const std::string casePath = dir.file("case.zkaudit");
    {
        ConfigHome home(dir.file("auditor"));
        caseWithRun(dir.path(), casePath, 99);
    }
    auto run = [&](const std::string& config, const std::vector<std::string>& arguments, std::string* out) {
        ConfigHome home(config);  // the child inherits it
        test::AuditProcess process(test::auditExecutable(), arguments);
        const int status = process.wait(std::chrono::seconds(60));
        *out = process.out() + process.err();
        return status;
    };
    std::string out;
    QCOMPARE(run(dir.file("auditor"), {"info", casePath}, &out), 0);
    QVERIFY2(contains(out, ": PASSED") && contains(out, "seal: vouched"), out.c_str());
    QCOMPARE(run(dir.file("auditor"), {"report", casePath, "-o", dir.file("ok.json")}, &out), 0);
    QJsonObject report = readJson(dir.file("ok.json"));
    QCOMPARE(report.value("replay").toObject().value("seal").toObject().value("state").toString(), QStringLiteral("vouched"));

    QCOMPARE(run(dir.file("stranger"), {"info", casePath}, &out), 0);
    QVERIFY2(contains(out, ": NOT VOUCHED") && contains(out, "seal: untrusted-signer"), out.c_str());

    editByHand(casePath, "UPDATE verdicts SET detail = 'edited' WHERE idx = 1");
    QCOMPARE(run(dir.file("auditor"), {"info", casePath}, &out), 0);
    QVERIFY2(contains(out, ": NOT VOUCHED") && contains(out, "seal: altered") && !contains(out, "PASSED"), out.c_str());
    QCOMPARE(run(dir.file("auditor"), {"report", casePath, "-o", dir.file("altered.json")}, &out), 0);
    report = readJson(dir.file("altered.json"));
    QCOMPARE(report.value("replay").toObject().value("seal").toObject().value("state").toString(), QStringLiteral("altered"));
    const QJsonObject conclusion = report.value("conclusion").toObject();
    QVERIFY2(conclusion.value("headline").toString().startsWith(QStringLiteral("NOT VOUCHED")),
             qPrintable(QJsonDocument(report).toJson()));
    QCOMPARE(conclusion.value("passed").toBool(true), false);
}

// Issue 26, item 8: one byte of an earlier failing run's rows altered (or its seal, or the
// whole run, removed) let a later run's report say PASSED without a word.
void TestRunSeal::earlierFailureSurvivesItsAlteration_data()
{
    QTest::addColumn<QString>("sql");
    QTest::addColumn<QString>("said");
    QTest::newRow("one byte of a verdict") << "UPDATE verdicts SET verdict = 'exact' WHERE run_id = 1 AND idx = 5"
                                           << "its seal still says it found 1 diverged transaction";
    QTest::newRow("its seal removed") << "DELETE FROM run_seals WHERE run_id = 1; UPDATE verdicts SET verdict = 'exact' WHERE run_id = 1"
                                      << "stripped of its seal";
    QTest::newRow("the run deleted") << "DELETE FROM replay_runs WHERE id = 1" << "no longer in the case";
}

void TestRunSeal::earlierFailureSurvivesItsAlteration()
{
    QFETCH(QString, sql);
    QFETCH(QString, said);
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    QCOMPARE(caseWithRun(dir.path(), casePath, 5), std::int64_t(1));
    const std::int64_t later = addRun(casePath, 99);
    QVERIFY2(reportOfRun(casePath, later).headline.rfind("FAILED", 0) == 0, reportOfRun(casePath, later).headline.c_str());
    editByHand(casePath, "PRAGMA foreign_keys = ON; " + sql.toStdString());
    const ReportData report = reportOfRun(casePath, later);
    QVERIFY2(!report.passed(), allWarnings(report).c_str());
    QVERIFY2(report.headline.rfind("FAILED", 0) == 0, allWarnings(report).c_str());
    QVERIFY2(contains(allWarnings(report), said.toStdString()), allWarnings(report).c_str());
}

// An earlier run that found nothing but was altered since: what it found is unknown, and a
// later report says so instead of PASSED.
void TestRunSeal::alteredEarlierRunBlocksAPass()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    caseWithRun(dir.path(), casePath, 99);
    const std::int64_t later = addRun(casePath, 99);
    QVERIFY2(reportOfRun(casePath, later).passed(), reportOfRun(casePath, later).headline.c_str());
    editByHand(casePath, "UPDATE verdicts SET detail = 'fine' WHERE run_id = 1 AND idx = 2");
    const ReportData report = reportOfRun(casePath, later);
    QVERIFY2(!report.passed(), allWarnings(report).c_str());
    QVERIFY2(report.headline.rfind("NOT VOUCHED", 0) == 0 && contains(report.headline, "run 1"), report.headline.c_str());
    QVERIFY2(contains(allWarnings(report), "was altered after zkdv sealed it"), allWarnings(report).c_str());
}

// A vouched report printed rows no seal covered: the tape's producer, optimizer, layout
// names, learning rates and losses, as ingested into the case.
void TestRunSeal::reportRowsAreSealed_data()
{
    QTest::addColumn<QString>("sql");
    QTest::newRow("producer") << "UPDATE tapes SET producer = 'someone else'";
    QTest::newRow("optimizer contract") << "UPDATE tapes SET optimizer_contract = 'torch.optim.Adam'";
    QTest::newRow("root record") << "UPDATE tapes SET root_json = root_json || ' '";
    QTest::newRow("a layout name") << "UPDATE tensors SET name = 'renamed' WHERE position = 0";
    QTest::newRow("a shape") << "UPDATE tensors SET shape = '[1]' WHERE position = 0";
    QTest::newRow("optimizer options") << "UPDATE optimizer_groups SET options = '{\"lr\": 1.0}'";
    QTest::newRow("a learning rate") << "UPDATE transactions SET lr = 0.5 WHERE idx = 3";
    QTest::newRow("a loss") << "UPDATE transactions SET loss = loss + 1 WHERE idx = 20";
    QTest::newRow("an update norm") << "UPDATE transactions SET update_norm = 0 WHERE idx = 7";
}

void TestRunSeal::reportRowsAreSealed()
{
    QFETCH(QString, sql);
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 99);
    QCOMPARE(int(checkOf(casePath, runId).state), int(RunSealCheck::State::Vouched));
    editByHand(casePath, sql.toStdString());
    const RunSealCheck check = checkOf(casePath, runId);
    QVERIFY2(check.state == RunSealCheck::State::Altered, (runSealStateName(check.state) + std::string(": ") + check.explanation).c_str());
    QVERIFY(!reportOf(casePath).passed());
    // What may change: the tape's path (a moved tape is located again).
    test::TempDir other;
    ConfigHome otherHome(other.file("auditor"));
    const std::string movedCase = other.file("case.zkaudit");
    const std::int64_t moved = caseWithRun(other.path(), movedCase, 99);
    editByHand(movedCase, "UPDATE tapes SET path = '/elsewhere/demo.zkdv'");
    QCOMPARE(int(checkOf(movedCase, moved).state), int(RunSealCheck::State::Vouched));
}

namespace {

// A seal as zkdv wrote them before case schema 9 (payload version 1), written here from the
// format's description (docs/case-schema.md, "Run seals"), not from zkdv's code.
void putValue(Sha256& hash, sqlite3_stmt* row, int column)
{
    auto u64 = [&](std::uint64_t v) {
        std::uint8_t bytes[8];
        for (int i = 0; i < 8; ++i)
            bytes[i] = static_cast<std::uint8_t>(v >> (8 * i));
        hash.update(ByteSpan(bytes, 8));
    };
    const int type = sqlite3_column_type(row, column);
    const char tag = static_cast<char>('0' + type);
    hash.update(std::string_view(&tag, 1));
    if (type == SQLITE_INTEGER)
        u64(static_cast<std::uint64_t>(sqlite3_column_int64(row, column)));
    else if (type == SQLITE_FLOAT) {
        const double v = sqlite3_column_double(row, column);
        std::uint64_t bits = 0;
        std::memcpy(&bits, &v, 8);
        u64(bits);
    } else if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
        const void* data = type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_column_text(row, column)) : sqlite3_column_blob(row, column);
        const auto size = static_cast<std::size_t>(sqlite3_column_bytes(row, column));
        u64(size);
        hash.update(ByteSpan(data, size));
    }
}

void sealVersionOne(const std::string& casePath, std::int64_t runId, const AuditorKey& key)
{
    const std::string tag = "zkdv replay run seal 1\n";
    const char* sections[][2] = {
        {"T", "SELECT t.chain_head, t.size, t.status, t.transaction_count, t.program_sha256 FROM replay_runs r JOIN tapes t ON t.id = r.tape_id WHERE r.id = ?1"},
        {"R", "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at, finished_at, status,"
              " intra_op_threads, selected_count, environment, problem FROM replay_runs WHERE id = ?1"},
        {"V", "SELECT idx, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2, replay_ns FROM verdicts"
              " WHERE run_id = ?1 ORDER BY idx"},
        {"M", "SELECT idx, tensor, slot, max_abs, rel_l2, cosine, max_ulp, mean_ulp, nan_mismatches, inf_mismatches, ulp_histogram, verdict,"
              " elements, bitwise_equal, note FROM metrics WHERE run_id = ?1 ORDER BY idx, tensor, slot"},
    };
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(casePath.c_str(), &db), SQLITE_OK);
    // The run as a zkdv before case schema 9 stored it: no seed source, no causes.
    const std::string asBefore = "UPDATE replay_runs SET seed_source = NULL WHERE id = " + std::to_string(runId) +
                                 "; UPDATE verdicts SET cause = NULL WHERE run_id = " + std::to_string(runId);
    QCOMPARE(sqlite3_exec(db, asBefore.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
    Sha256 hash;
    hash.update(std::string_view(tag));
    auto u64 = [&](std::uint64_t v) {
        std::uint8_t bytes[8];
        for (int i = 0; i < 8; ++i)
            bytes[i] = static_cast<std::uint8_t>(v >> (8 * i));
        hash.update(ByteSpan(bytes, 8));
    };
    u64(static_cast<std::uint64_t>(runId));
    for (const auto& section : sections) {
        sqlite3_stmt* rows = nullptr;
        QCOMPARE(sqlite3_prepare_v2(db, section[1], -1, &rows, nullptr), SQLITE_OK);
        sqlite3_bind_int64(rows, 1, runId);
        hash.update(std::string_view(section[0], 1));
        std::uint64_t count = 0;
        while (sqlite3_step(rows) == SQLITE_ROW) {
            ++count;
            for (int c = 0; c < sqlite3_column_count(rows); ++c)
                putValue(hash, rows, c);
        }
        sqlite3_finalize(rows);
        u64(count);
    }
    const Digest content = hash.finish();
    std::vector<std::uint8_t> message(tag.begin(), tag.end());
    message.insert(message.end(), content.begin(), content.end());
    const Signature signature = key.sign(ByteSpan(message));
    sqlite3_stmt* insert = nullptr;
    QCOMPARE(sqlite3_prepare_v2(db,
                                "INSERT OR REPLACE INTO run_seals(run_id, content_sha256, public_key, signature, sealed_at, payload_version, found)"
                                " VALUES(?1, ?2, ?3, ?4, '2026-01-01T00:00:00Z', 1, NULL)",
                                -1, &insert, nullptr),
             SQLITE_OK);
    sqlite3_bind_int64(insert, 1, runId);
    sqlite3_bind_blob(insert, 2, content.data(), 32, SQLITE_TRANSIENT);
    sqlite3_bind_blob(insert, 3, key.publicKey().data(), 32, SQLITE_TRANSIENT);
    sqlite3_bind_blob(insert, 4, signature.data(), 64, SQLITE_TRANSIENT);
    QCOMPARE(sqlite3_step(insert), SQLITE_DONE);
    sqlite3_finalize(insert);
    sqlite3_close(db);
}

}  // namespace

void TestRunSeal::versionOneSealsKeepVerifying()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 99);
    sealVersionOne(casePath, runId, AuditorKey::loadOrCreate());
    RunSealCheck check = checkOf(casePath, runId);
    QCOMPARE(int(check.state), int(RunSealCheck::State::Vouched));
    QCOMPARE(check.payloadVersion, 1);
    QVERIFY(reportOf(casePath).passed());
    // A version 1 seal never covered a cause: one added since is an alteration.
    editByHand(casePath, "UPDATE verdicts SET cause = 'program-time' WHERE idx = 3");
    check = checkOf(casePath, runId);
    QCOMPARE(int(check.state), int(RunSealCheck::State::Altered));
}

// Issue 26, item 5: a transaction the tape's own program made unreplayable within the
// auditor's limits fails the tape, saying why; one the auditor's machine could not replay
// leaves it unverified.
void TestRunSeal::trainersFailureFailsTheReport()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    caseWithRun(dir.path(), casePath, 99);
    const std::int64_t greedy = addRun(casePath, 99,
                                       {unverifiable(17, UnverifiableCause::ProgramExceededMemory,
                                                     "replay worker reached its memory limit of 1040 MiB at transaction 17")});
    ReportData report = reportOfRun(casePath, greedy);
    QVERIFY(!report.passed());
    QCOMPARE(report.outcome, AuditOutcome::Failed);
    QVERIFY2(contains(report.headline, "transaction 17: the sealed program exceeded the memory limit the auditor set") &&
                 contains(report.headline, "the trainer's failure"),
             report.headline.c_str());
    QVERIFY2(contains(allWarnings(report), "1040 MiB"), allWarnings(report).c_str());
    QCOMPARE(report.trainersFailures, std::uint64_t(1));

    const std::int64_t missing = addRun(casePath, 99, {unverifiable(17, UnverifiableCause::Environment, "no contract for torch 9.0")});
    report = reportOfRun(casePath, missing);
    QVERIFY(!report.passed());
    // The greedy run is another run of the tape: its failure stands in this report too.
    QCOMPARE(report.outcome, AuditOutcome::Failed);
    {
        test::TempDir fresh;
        ConfigHome freshHome(fresh.file("auditor"));
        const std::string freshCase = fresh.file("case.zkaudit");
        caseWithRun(fresh.path(), freshCase, 99);
        editByHand(freshCase, "PRAGMA foreign_keys = ON; DELETE FROM replay_runs");
        const std::int64_t onlyMissing = addRun(freshCase, 99, {unverifiable(17, UnverifiableCause::Environment, "no contract for torch 9.0")});
        const ReportData unverified = reportOfRun(freshCase, onlyMissing);
        QCOMPARE(unverified.outcome, AuditOutcome::NotVerified);
        QVERIFY2(contains(unverified.headline, "auditor's machine"), unverified.headline.c_str());
    }
    // A stored cause is covered by the seal: turning the trainer's failure into the auditor's is an alteration.
    editByHand(casePath, "UPDATE verdicts SET cause = 'environment' WHERE run_id = " + std::to_string(greedy));
    report = reportOfRun(casePath, greedy);
    QCOMPARE(int(report.seal.state), int(RunSealCheck::State::Altered));
    QCOMPARE(report.outcome, AuditOutcome::Failed);
}

// `info` said PASSED where the report said NOT VERIFIED or INCOMPLETE: now both say the
// report's one conclusion.
void TestRunSeal::infoSaysWhatTheReportSays()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    caseWithRun(dir.path(), casePath, 99);
    editByHand(casePath, "PRAGMA foreign_keys = ON; DELETE FROM replay_runs");
    const std::int64_t empty = addRun(casePath, 99, {}, RunStatus::Finished, 0);
    const std::int64_t cancelled = addRun(casePath, 99, {}, RunStatus::Stopped, 4);
    auto info = [&](std::string* out) {
        test::AuditProcess process(test::auditExecutable(), {"info", casePath});
        const int status = process.wait(std::chrono::seconds(60));
        *out = process.out() + process.err();
        return status;
    };
    std::string out;
    QCOMPARE(info(&out), 0);
    for (std::int64_t runId : {empty, cancelled}) {
        const ReportData report = reportOfRun(casePath, runId);
        QVERIFY2(report.outcome != AuditOutcome::Passed, report.headline.c_str());
        const std::string line = "replay run " + std::to_string(runId) + " ";
        const std::size_t at = out.find(line);
        QVERIFY2(at != std::string::npos, out.c_str());
        const std::string runLine = out.substr(at, out.find('\n', at) - at);
        const std::string word(auditOutcomeName(report.outcome));
        QVERIFY2(contains(runLine, ": " + word), (runLine + " / report: " + word).c_str());
        QVERIFY2(contains(out, report.headline), out.c_str());
    }
    QVERIFY2(!contains(out, ": PASSED"), out.c_str());
}

// As ssh does: a trust list others may write, directly or through a link, vouches for anyone.
void TestRunSeal::othersMayNotWriteTheTrustList()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const std::string casePath = dir.file("case.zkaudit");
    const std::int64_t runId = caseWithRun(dir.path(), casePath, 99);
    const std::string trusted = dir.file("auditor/trusted-keys");
    {
        std::ofstream out(trusted);
        out << std::string(64, 'a') << " someone\n";
    }
    QCOMPARE(::chmod(trusted.c_str(), 0644), 0);
    QCOMPARE(int(checkOf(casePath, runId).state), int(RunSealCheck::State::Vouched));
    auto refusal = [&]() -> std::string {
        try {
            checkOf(casePath, runId);
        } catch (const Error& error) {
            return error.what();
        }
        return "accepted";
    };
    QCOMPARE(::chmod(trusted.c_str(), 0666), 0);
    std::string message = refusal();
    QVERIFY2(contains(message, trusted) && contains(message, "0666") && contains(message, "chmod go-w"), message.c_str());
    QCOMPARE(::chmod(trusted.c_str(), 0620), 0);
    QVERIFY2(contains(refusal(), "chmod go-w"), refusal().c_str());
    // A link to a world-writable list is judged by what it points to.
    QCOMPARE(::chmod(trusted.c_str(), 0644), 0);
    QVERIFY(QDir().mkpath(QString::fromStdString(dir.file("shared"))));
    const std::string open = dir.file("shared/keys");
    {
        std::ofstream out(open);
        out << std::string(64, 'b') << " anyone\n";
    }
    QCOMPARE(::chmod(open.c_str(), 0666), 0);
    QCOMPARE(::unlink(trusted.c_str()), 0);
    QCOMPARE(::symlink(open.c_str(), trusted.c_str()), 0);
    message = refusal();
    QVERIFY2(contains(message, "0666") && contains(message, "chmod go-w"), message.c_str());
    // And one in a folder anyone may write into.
    QCOMPARE(::chmod(open.c_str(), 0644), 0);
    QCOMPARE(::chmod(dir.file("shared").c_str(), 0777), 0);
    message = refusal();
    QVERIFY2(contains(message, "shared") && contains(message, "chmod go-w"), message.c_str());
    QCOMPARE(::chmod(dir.file("shared").c_str(), 0755), 0);
    QCOMPARE(int(checkOf(casePath, runId).state), int(RunSealCheck::State::Vouched));
}

void TestRunSeal::othersMayNotReadTheSigningKey()
{
    test::TempDir dir;
    ConfigHome home(dir.file("auditor"));
    const PublicKey key = AuditorKey::loadOrCreate().publicKey();
    const std::string file = dir.file("auditor/signing-key.pem");
    for (mode_t mode : {mode_t(0644), mode_t(0640), mode_t(0604)}) {
        QCOMPARE(::chmod(file.c_str(), mode), 0);
        for (int call = 0; call < 2; ++call) {
            try {
                if (call == 0)
                    AuditorKey::loadOrCreate();
                else
                    AuditorKey::existingPublicKey();
                QFAIL("a signing key others may read was used");
            } catch (const Error& error) {
                QVERIFY2(contains(error.what(), file) && contains(error.what(), "chmod 600"), error.what());
            }
        }
    }
    QCOMPARE(::chmod(file.c_str(), 0600), 0);
    QVERIFY(AuditorKey::loadOrCreate().publicKey() == key);
}

QTEST_GUILESS_MAIN(TestRunSeal)
#include "test_run_seal.moc"
