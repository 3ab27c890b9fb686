// Tests for sharded replays' merge (zkdv/workflow/shard_merge.h) and the shard case a shard
// writes into (zkdv/store/shard_case.h). The shards' runs are stored here the way a replay
// stores them (ReplayStore, sealed by finishRun with the key of the current settings
// folder), so the merge's checks are tested on every kind of bad shard without replaying.
// Each test's case holds the planned audit the made-up shards are of (recorded as
// slurm-script records one), unless the test plans otherwise.
#include <QtTest>

#include <sqlite3.h>

#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "config_home.h"
#include "file_bytes.h"
#include "made_up_shard.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/merged_shards.h"
#include "zkdv/store/planned_audits.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/run_seal.h"
#include "zkdv/store/shard_case.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/sha256.h"
#include "zkdv/workflow/shard_merge.h"

using namespace zkdv;
using zkdv::test::ConfigHome;

namespace {

constexpr const char* kSelection = "random:30";
constexpr std::uint64_t kSeed = 9;
constexpr unsigned kShards = 3;
// The SHA-256 of a calibration file the planned audit did not name.
constexpr const char* kOtherCalibration = "cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd";
constexpr const char* kPlannedCalibration = "abababababababababababababababababababababababababababababababab";

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

void editByHand(const std::string& path, const std::string& sql)
{
    sqlite3* db = nullptr;
    QCOMPARE(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    const std::string why = message ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    QVERIFY2(rc == SQLITE_OK, (sql + ": " + why).c_str());
}

void writeTape(const std::string& path, std::uint64_t seed)
{
    SyntheticDemoOptions options;
    options.steps = 60;  // five segments of 12
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    options.seed = seed;
    options.overwrite = true;
    writeSyntheticDemoTape(path, options);
}

using ShardOptions = test::MadeUpShard;

void writeShard(const std::string& casePath, const std::string& shardPath, unsigned index, const ShardOptions& options = {})
{
    test::writeMadeUpShard(casePath, shardPath, index, options);
}

std::vector<StoredReplayRun> runsOf(const std::string& casePath)
{
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    return ReplayStore(store.database()).runs();
}

}  // namespace

class TestShardMerge : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void aShardCaseHoldsTheTapeAndNoRun();
    void aShardCaseIsNeverWrittenOver();
    void mergeJoinsEveryShardIntoOneSealedRun();
    void mergedVerdictsEqualTheShardsTransactionByTransaction();
    void mergeKeepsTheDivergenceOfTheShardThatFoundIt();
    void aShardSignedByATrustedKeyIsMerged();
    void badShardsAreRefusedAndTheCaseIsUnchanged_data();
    void badShardsAreRefusedAndTheCaseIsUnchanged();
    void aMergedRunWhoseShardListIsEditedReadsAltered();
    void shardsOfAnotherAuditThanThePlannedOneAreRefused_data();
    void shardsOfAnotherAuditThanThePlannedOneAreRefused();
    void withoutAPlannedAuditTheMergeNeedsOneStated();
    void anOlderPlannedAuditHoldsTheShardsOnlyWhenNamed();
    void aMergedRunWhosePlannedAuditIsEditedReadsAltered();
    void aPlannedAuditNotSignedByATrustedKeyHoldsNoShards();

private:
    std::unique_ptr<test::TempDir> dir_;
    std::unique_ptr<ConfigHome> home_;
    std::string case_;
    std::int64_t planned_ = 0;  // the planned audit of case_
    std::vector<std::string> shards_;
};

void TestShardMerge::init()
{
    dir_ = std::make_unique<test::TempDir>();
    home_ = std::make_unique<ConfigHome>(dir_->file("auditor"));
    const std::string tape = dir_->file("demo.zkdv");
    writeTape(tape, 7);
    case_ = dir_->file("case.zkaudit");
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    store.ingestTape(tape);
    planned_ = test::recordMadeUpPlan(case_);
    shards_.clear();
    for (unsigned i = 0; i < kShards; ++i)
        shards_.push_back(dir_->file("shard-" + std::to_string(i) + ".zkaudit"));
}

void TestShardMerge::cleanup()
{
    home_.reset();
    dir_.reset();
}

void TestShardMerge::aShardCaseHoldsTheTapeAndNoRun()
{
    writeShard(case_, shards_[0], 0);  // a run in the case, which the next shard case must not carry
    {
        CaseStore store(case_, CaseStore::Access::ReadWrite);
        ReplayStore replay(store.database());
        ReplayRunInfo info;
        info.tapeId = store.tapes().front().id;
        info.device = "cpu";
        info.selection = "all";
        const std::int64_t run = replay.beginRun(info);
        replay.finishRun(run, RunStatus::Finished, "");
    }
    const std::string shardPath = dir_->file("fresh.zkaudit");
    {
        CaseStore source(case_, CaseStore::Access::ReadOnly);
        writeShardCase(source, source.tapes().front().id, shardPath);
    }
    CaseStore shard(shardPath, CaseStore::Access::ReadOnly);
    CaseStore source(case_, CaseStore::Access::ReadOnly);
    QCOMPARE(shard.tapes().size(), std::size_t(1));
    QCOMPARE(shard.tapes().front().chainHead, source.tapes().front().chainHead);
    QCOMPARE(shard.tapes().front().transactionCount, source.tapes().front().transactionCount);
    QVERIFY(ReplayStore(shard.database()).runs().empty());
    QVERIFY(!newestPlannedAudit(shard.database()));  // the merge reads the auditor's, never a shard's
    QCOMPARE(ReplayStore(source.database()).runs().size(), std::size_t(1));
}

void TestShardMerge::aShardCaseIsNeverWrittenOver()
{
    writeShard(case_, shards_[0], 0);
    const std::vector<std::uint8_t> before = test::readAll(shards_[0]);
    CaseStore source(case_, CaseStore::Access::ReadOnly);
    try {
        writeShardCase(source, source.tapes().front().id, shards_[0]);
        QFAIL("an existing shard case was written over");
    } catch (const Error& error) {
        QVERIFY2(contains(error.what(), "exists already"), error.what());
    }
    QCOMPARE(test::readAll(shards_[0]), before);
}

void TestShardMerge::mergeJoinsEveryShardIntoOneSealedRun()
{
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i);
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    // Given in any order.
    const ShardMergeResult result = mergeShards(store, {shards_[2], shards_[0], shards_[1]});
    QVERIFY(result.passed());
    QCOMPARE(result.sealProblem, std::string());
    QVERIFY(result.run.merged());
    QCOMPARE(result.run.shardCount, kShards);
    QCOMPARE(result.run.selection, std::string(kSelection));
    QCOMPARE(result.run.seed, kSeed);
    QCOMPARE(result.run.selectedCount, std::uint64_t(30));
    QCOMPARE(result.shards.size(), std::size_t(kShards));
    for (unsigned i = 0; i < kShards; ++i) {
        QCOMPARE(result.shards[i].index, i);
        QCOMPARE(result.shards[i].file, shards_[i]);
        QVERIFY(!result.shards[i].host.empty());
        QVERIFY2(contains(result.shards[i].signer, "(this user's key)"), result.shards[i].signer.c_str());
    }
    const RunSealCheck seal = checkRunSeal(store.database(), result.run.id);
    QVERIFY2(seal.vouched(), seal.explanation.c_str());
    QCOMPARE(seal.payloadVersion, 7);
    // The run names the audit its shards were held to, under its seal.
    QCOMPARE(result.audit.id, planned_);
    const std::optional<PlannedAudit> audit = runPlannedAudit(store.database(), result.run.id);
    QVERIFY(audit);
    QCOMPARE(audit->id, planned_);
    QCOMPARE(audit->seed, kSeed);
    const ReportData report = buildAuditReport(store, {result.run.tapeId, result.run.id});
    QVERIFY(report.passed());
    QCOMPARE(report.mergedShards.size(), std::size_t(kShards));
    QVERIFY(!report.shard);
    QVERIFY(report.sampling);  // the merged run is the whole random sample
}

void TestShardMerge::mergedVerdictsEqualTheShardsTransactionByTransaction()
{
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i);
    std::set<std::uint64_t> fromShards, selectedFromShards;
    std::uint64_t metrics = 0;
    for (const std::string& path : shards_) {
        CaseStore shard(path, CaseStore::Access::ReadOnly);
        ReplayStore replay(shard.database());
        const std::int64_t run = replay.runs().front().id;
        for (const StoredVerdict& verdict : replay.verdicts(run)) {
            QVERIFY2(fromShards.insert(verdict.index).second, "two shards replayed one transaction");
            if (verdict.selected)
                selectedFromShards.insert(verdict.index);
        }
        metrics += static_cast<std::uint64_t>(shard.database().queryInt64("SELECT count(*) FROM metrics").value_or(0));
    }
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    ReplayRequest request;
    request.selection = SelectionSpec::parse(kSelection);
    request.seed = kSeed;
    const std::vector<std::uint64_t> selected = planShardedReplay(store, request, 1).selected;
    QCOMPARE(selectedFromShards, std::set<std::uint64_t>(selected.begin(), selected.end()));
    const ShardMergeResult result = mergeShards(store, shards_);
    std::set<std::uint64_t> merged, selectedMerged;
    for (const StoredVerdict& verdict : ReplayStore(store.database()).verdicts(result.run.id)) {
        merged.insert(verdict.index);
        if (verdict.selected)
            selectedMerged.insert(verdict.index);
    }
    QCOMPARE(merged, fromShards);
    QCOMPARE(selectedMerged, selectedFromShards);
    QCOMPARE(static_cast<std::uint64_t>(store.database().queryInt64("SELECT count(*) FROM metrics WHERE run_id = " +
                                                                    std::to_string(result.run.id)).value_or(-1)),
             metrics);
}

void TestShardMerge::mergeKeepsTheDivergenceOfTheShardThatFoundIt()
{
    // A transaction the plan gives to shard 1, stored there as diverged.
    std::uint64_t target = 0;
    {
        CaseStore store(case_, CaseStore::Access::ReadOnly);
        ReplayRequest request;
        request.selection = SelectionSpec::parse(kSelection);
        request.seed = kSeed;
        target = planShardedReplay(store, request, kShards).shardSelected(1).front();
    }
    for (unsigned i = 0; i < kShards; ++i) {
        ShardOptions options;
        options.divergedAt = i == 1 ? target : UINT64_MAX;
        writeShard(case_, shards_[i], i, options);
    }
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    const ShardMergeResult result = mergeShards(store, shards_);
    QVERIFY(!result.passed());
    QVERIFY(result.failed());
    QCOMPARE(result.run.diverged, std::uint64_t(1));
    bool found = false;
    for (const StoredVerdict& verdict : ReplayStore(store.database()).verdicts(result.run.id))
        if (verdict.verdict == Verdict::Diverged)
            found = verdict.index == target;
    QVERIFY(found);
    const ReportData report = buildAuditReport(store, {result.run.tapeId, result.run.id});
    QCOMPARE(report.outcome, AuditOutcome::Failed);
}

void TestShardMerge::aShardSignedByATrustedKeyIsMerged()
{
    // Shard 2 ran under a service key; the auditor trusts it by listing it.
    for (unsigned i = 0; i < 2; ++i)
        writeShard(case_, shards_[i], i);
    {
        ConfigHome service(dir_->file("service"));
        writeShard(case_, shards_[2], 2);
    }
    const std::optional<PublicKey> serviceKey = AuditorKey::existingPublicKey(dir_->file("service") + "/signing-key.pem");
    QVERIFY(serviceKey);
    {
        std::ofstream trusted(dir_->file("auditor/trusted-keys"));
        trusted << toHex(*serviceKey) << " cluster service\n";
    }
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    const ShardMergeResult result = mergeShards(store, shards_);
    QVERIFY(result.passed());
    QVERIFY2(contains(result.shards[2].signer, "(trusted: cluster service)"), result.shards[2].signer.c_str());
}

void TestShardMerge::badShardsAreRefusedAndTheCaseIsUnchanged_data()
{
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("missing") << "missing" << "lack shard 2";
    QTest::newRow("duplicated") << "duplicated" << "the same shard twice";
    QTest::newRow("given twice") << "given-twice" << "is given twice";
    QTest::newRow("another seed") << "seed" << "shard 1 (%1): seed 10, the planned audit's is 9";
    QTest::newRow("another count") << "count" << "shard 1 (%1): shard count 4, the planned audit's is 3";
    QTest::newRow("another selection") << "selection" << "shard 1 (%1): selection random:20, the planned audit's is random:30";
    QTest::newRow("another tape") << "tape" << "shard 1 (%1): tape chain head";
    QTest::newRow("a wider tolerance") << "tolerance" << "shard 1 (%1): tolerance ulp=1e+12,rel=1,";
    QTest::newRow("another calibration") << "calibration" << "shard 1 (%1): calibration sha256 cdcdcdcdcdcdcdcd…, the planned audit's is none";
    QTest::newRow("another program check") << "program" << "shard 1 (%1): program check mismatched, the planned audit's is matched";
    QTest::newRow("altered") << "altered" << "whose seal is altered";
    QTest::newRow("untrusted") << "untrusted" << "whose seal is untrusted-signer";
    QTest::newRow("unsigned") << "unsigned" << "whose seal is unsigned";
    QTest::newRow("hostile schema") << "hostile" << "cannot be read as a shard case";
    QTest::newRow("unfinished") << "unfinished" << "unfinished (stopped";
    QTest::newRow("not a shard") << "whole" << "is not a shard case";
    QTest::newRow("another shard's part") << "wrong-part" << "which the plan of 3 shards gives to shard 2, not to its shard 1/3";
    QTest::newRow("not a case") << "garbage" << "cannot be read as a shard case";
    QTest::newRow("the case itself") << "itself" << "is the case being merged into";
}

void TestShardMerge::badShardsAreRefusedAndTheCaseIsUnchanged()
{
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    const std::string what = kind.toStdString();
    std::vector<std::string> given = shards_;
    const std::string bad = shards_[1];
    for (unsigned i = 0; i < kShards; ++i) {
        if (i != 1) {
            writeShard(case_, shards_[i], i);
            continue;
        }
        ShardOptions options;
        if (what == "seed")
            options.seed = 10;
        else if (what == "count")
            options.count = 4;
        else if (what == "selection")
            options.selection = "random:20";
        else if (what == "wrong-part")
            options.partOf = 2;
        else if (what == "tolerance")
            options.tolerance = "rel=1,ulp=1e12";
        else if (what == "calibration")
            options.calibrationSha256 = kOtherCalibration;
        else if (what == "program")
            options.programCheck = ProgramCheck::Mismatched;
        else if (what == "unfinished")
            options.status = RunStatus::Stopped;
        if (what == "untrusted") {
            ConfigHome stranger(dir_->file("stranger"));
            writeShard(case_, bad, 1, options);
        } else if (what == "tape") {
            const std::string otherTape = dir_->file("other.zkdv");
            writeTape(otherTape, 8);
            const std::string otherCase = dir_->file("other.zkaudit");
            CaseStore(otherCase, CaseStore::Access::ReadWrite).ingestTape(otherTape);
            writeShard(otherCase, bad, 1, options);
        } else if (what == "whole") {
            writeShard(case_, bad, 1, options);
            editByHand(bad, "UPDATE replay_runs SET shard_index = NULL, shard_count = NULL; DELETE FROM run_seals");
        } else if (what == "garbage") {
            std::ofstream(bad) << "not an SQLite file at all\n";
        } else if (what != "itself") {
            writeShard(case_, bad, 1, options);
        }
    }
    if (what == "missing")
        given.pop_back();
    else if (what == "duplicated") {
        const std::string copy = dir_->file("copy-of-shard-1.zkaudit");
        QVERIFY(QFile::copy(QString::fromStdString(bad), QString::fromStdString(copy)));
        given.push_back(copy);
    } else if (what == "given-twice")
        given.push_back(dir_->file("./shard-1.zkaudit"));
    else if (what == "altered")
        editByHand(bad, "UPDATE verdicts SET detail = 'replayed bit for bit, honestly' WHERE idx = (SELECT min(idx) FROM verdicts)");
    else if (what == "unsigned")
        editByHand(bad, "DELETE FROM run_seals");
    else if (what == "hostile")
        editByHand(bad, "CREATE TRIGGER sneaky AFTER INSERT ON verdicts BEGIN DELETE FROM verdicts; END");
    else if (what == "itself")
        given[1] = case_;

    const std::vector<std::uint8_t> before = test::readAll(case_);
    try {
        CaseStore store(case_, CaseStore::Access::ReadWrite);
        mergeShards(store, given);
        QFAIL(("a merge with a bad shard (" + what + ") was accepted").c_str());
    } catch (const ShardMergeRefused& refused) {
        const std::string message = refused.what();
        // A shard of another audit names its index, its file and the difference.
        QVERIFY2(contains(message, QString(expected).replace(QStringLiteral("%1"), QString::fromStdString(bad)).toStdString()), message.c_str());
        QVERIFY2(contains(message, "the case is unchanged"), message.c_str());
        // The refusal names the file at fault (a missing shard has none: it names the count).
        if (what != "missing")
            QVERIFY2(contains(message, what == "itself" ? case_ : what == "duplicated" ? "copy-of-shard-1" : "shard-1.zkaudit"), message.c_str());
    }
    QVERIFY(runsOf(case_).empty());
    QCOMPARE(test::readAll(case_), before);
}

void TestShardMerge::aMergedRunWhoseShardListIsEditedReadsAltered()
{
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i);
    std::int64_t runId = 0;
    {
        CaseStore store(case_, CaseStore::Access::ReadWrite);
        runId = mergeShards(store, shards_).run.id;
    }
    editByHand(case_, "UPDATE merged_shards SET host = 'trusted-cluster-node' WHERE shard_index = 1");
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    QCOMPARE(int(checkRunSeal(store.database(), runId).state), int(RunSealCheck::State::Altered));
    QCOMPARE(mergedShards(store.database(), runId)[1].host, std::string("trusted-cluster-node"));
}

void TestShardMerge::shardsOfAnotherAuditThanThePlannedOneAreRefused_data()
{
    // Every shard of an older audit, authentic, sealed by this user's key and consistent with
    // each other: before the merge held shards to the planned audit, they merged into a run
    // that passed (a seed that missed a forged transaction, a tolerance that passes anything).
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("expected");
    QTest::newRow("another seed") << "seed" << "seed 10, the planned audit's is 9";
    QTest::newRow("a wider tolerance") << "tolerance"
                                       << "tolerance ulp=1e+12,rel=1,fingerprint=0.0001,envelope=1024, the planned audit's is "
                                          "ulp=64,rel=0.0001,fingerprint=0.0001,envelope=1024";
    QTest::newRow("another selection") << "selection" << "selection random:20, the planned audit's is random:30";
    QTest::newRow("another shard count") << "count" << "shard count 4, the planned audit's is 3";
    QTest::newRow("another calibration") << "calibration" << "calibration sha256 cdcdcdcdcdcdcdcd…, the planned audit's is sha256 abababababababab…";
    QTest::newRow("no calibration") << "uncalibrated" << "calibration none, the planned audit's is sha256 abababababababab…";
    QTest::newRow("another program check") << "program" << "program check missing, the planned audit's is matched";
}

void TestShardMerge::shardsOfAnotherAuditThanThePlannedOneAreRefused()
{
    QFETCH(QString, kind);
    QFETCH(QString, expected);
    const std::string what = kind.toStdString();
    ShardOptions planned, older;
    if (what == "seed")
        older.seed = 10;
    else if (what == "tolerance")
        older.tolerance = "rel=1,ulp=1e12";
    else if (what == "selection")
        older.selection = "random:20";
    else if (what == "count")
        older.count = 4;
    else if (what == "calibration") {
        planned.calibrationSha256 = kPlannedCalibration;
        older.calibrationSha256 = kOtherCalibration;
    }
    else if (what == "uncalibrated")
        planned.calibrationSha256 = kPlannedCalibration;
    else if (what == "program")
        older.programCheck = ProgramCheck::Missing;
    const std::int64_t plannedId = planned.calibrationSha256.empty() ? planned_ : test::recordMadeUpPlan(case_, planned);

    std::vector<std::string> olderShards;
    for (unsigned i = 0; i < older.count; ++i) {
        olderShards.push_back(dir_->file("older-" + std::to_string(i) + ".zkaudit"));
        writeShard(case_, olderShards.back(), i, older);
    }
    const std::vector<std::uint8_t> before = test::readAll(case_);
    try {
        CaseStore store(case_, CaseStore::Access::ReadWrite);
        mergeShards(store, olderShards);
        QFAIL(("the shards of another audit (" + what + ") were merged").c_str());
    } catch (const ShardMergeRefused& refused) {
        const std::string message = refused.what();
        QVERIFY2(contains(message, "shard 0 (" + olderShards[0] + "): " + expected.toStdString()), message.c_str());
        QVERIFY2(contains(message, "the case is unchanged"), message.c_str());
    }
    QVERIFY(runsOf(case_).empty());
    QCOMPARE(test::readAll(case_), before);

    // The planned audit's own shards still merge, into a run that names it.
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i, planned);
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    const ShardMergeResult result = mergeShards(store, shards_);
    QVERIFY(result.passed());
    QCOMPARE(result.audit.id, plannedId);
    QCOMPARE(runPlannedAudit(store.database(), result.run.id)->calibrationSha256, planned.calibrationSha256);
}

void TestShardMerge::withoutAPlannedAuditTheMergeNeedsOneStated()
{
    // Shards of the audit the auditor will state: the program check a stated audit holds them
    // to is what the case finds for its tape's (synthetic) program.
    ShardOptions options;
    options.programCheck = ProgramCheck::NotReplayable;
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i, options);
    // A case of the same tape in which no job was planned.
    const std::string unplanned = dir_->file("unplanned.zkaudit");
    CaseStore(unplanned, CaseStore::Access::ReadWrite).ingestTape(dir_->file("demo.zkdv"));
    const std::vector<std::uint8_t> before = test::readAll(unplanned);
    auto refusal = [&](const ShardMergeAudit& audit) {
        try {
            CaseStore store(unplanned, CaseStore::Access::ReadWrite);
            mergeShards(store, shards_, audit);
        } catch (const ShardMergeRefused& refused) {
            return std::string(refused.what());
        }
        return std::string("merged");
    };
    // Never inferred from the shards.
    std::string message = refusal({});
    QVERIFY2(contains(message, "holds no planned audit") && contains(message, "--select, --seed and --shards"), message.c_str());
    // Stated, it is held to as a planned one.
    ShardMergeAudit stated;
    stated.stated.emplace();
    stated.stated->selection = SelectionSpec::parse(kSelection);
    stated.stated->seed = 10;
    stated.statedShards = kShards;
    message = refusal(stated);
    QVERIFY2(contains(message, "shard 0 (" + shards_[0] + "): seed 9, the planned audit's is 10"), message.c_str());
    stated.stated->seed = kSeed;
    stated.stated->tolerance = Tolerance::parse("rel=1,ulp=1e12");
    message = refusal(stated);
    QVERIFY2(contains(message, "tolerance ulp=64,"), message.c_str());
    QCOMPARE(test::readAll(unplanned), before);

    stated.stated->tolerance = Tolerance::defaults();
    CaseStore store(unplanned, CaseStore::Access::ReadWrite);
    const ShardMergeResult result = mergeShards(store, shards_, stated);
    QVERIFY(result.passed());
    QVERIFY(result.audit.id != 0);
    const std::optional<PlannedAudit> recorded = runPlannedAudit(store.database(), result.run.id);
    QVERIFY(recorded);
    QCOMPARE(recorded->seed, kSeed);
    QCOMPARE(recorded->seedSource, SeedSource::Given);
    QVERIFY(checkRunSeal(store.database(), result.run.id).vouched());
}

void TestShardMerge::anOlderPlannedAuditHoldsTheShardsOnlyWhenNamed()
{
    // The auditor planned seed 9, then a newer audit with seed 10: the merge holds shards to the
    // newest unless the older one is named (merge --plan ID).
    ShardOptions newer;
    newer.seed = 10;
    const std::int64_t newest = test::recordMadeUpPlan(case_, newer);
    QVERIFY(newest > planned_);
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i);
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    try {
        mergeShards(store, shards_);
        QFAIL("shards of an older planned audit were merged against the newest");
    } catch (const ShardMergeRefused& refused) {
        QVERIFY2(contains(refused.what(), "seed 9, the planned audit's is 10"), refused.what());
    }
    ShardMergeAudit named;
    named.plannedId = planned_;
    const ShardMergeResult result = mergeShards(store, shards_, named);
    QCOMPARE(result.audit.id, planned_);
    named.plannedId = newest + 1;
    try {
        mergeShards(store, shards_, named);
        QFAIL("a planned audit the case does not hold was merged against");
    } catch (const ShardMergeRefused& refused) {
        QVERIFY2(contains(refused.what(), "holds no planned audit " + std::to_string(newest + 1)), refused.what());
    }
}

void TestShardMerge::aMergedRunWhosePlannedAuditIsEditedReadsAltered()
{
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i);
    std::int64_t runId = 0;
    std::string tolerance;
    {
        CaseStore store(case_, CaseStore::Access::ReadWrite);
        runId = mergeShards(store, shards_).run.id;
        tolerance = runPlannedAudit(store.database(), runId)->tolerance;
    }
    auto sealState = [&] {
        CaseStore store(case_, CaseStore::Access::ReadOnly);
        return checkRunSeal(store.database(), runId).state;
    };
    QCOMPARE(int(sealState()), int(RunSealCheck::State::Vouched));
    // A wider tolerance written into the planned audit the run was held to.
    editByHand(case_, "UPDATE planned_audits SET tolerance = 'ulp=1e+12,rel=1,fingerprint=1,envelope=1024'");
    QCOMPARE(int(sealState()), int(RunSealCheck::State::Altered));
    editByHand(case_, "UPDATE planned_audits SET tolerance = '" + tolerance + "'");
    QCOMPARE(int(sealState()), int(RunSealCheck::State::Vouched));
    // The run's link to it removed, as if it had been merged against nothing.
    editByHand(case_, "UPDATE replay_runs SET planned_audit_id = NULL WHERE id = " + std::to_string(runId));
    QCOMPARE(int(sealState()), int(RunSealCheck::State::Altered));
}

void TestShardMerge::aPlannedAuditNotSignedByATrustedKeyHoldsNoShards()
{
    // Whoever can write the case (a cluster node on the shared file system) moves the planned
    // audit to match shards of another audit, or plans one of their own: the merge holds the
    // shards only to a planned audit whose signature by a trusted key holds.
    ShardOptions older;
    older.seed = 10;
    for (unsigned i = 0; i < kShards; ++i)
        writeShard(case_, shards_[i], i, older);
    auto refusal = [&] {
        try {
            CaseStore store(case_, CaseStore::Access::ReadWrite);
            mergeShards(store, shards_);
        } catch (const ShardMergeRefused& refused) {
            return std::string(refused.what());
        }
        return std::string("merged");
    };
    editByHand(case_, "UPDATE planned_audits SET seed = 10");
    std::string message = refusal();
    QVERIFY2(contains(message, "planned audit " + std::to_string(planned_) + " of case " + case_ + " is altered"), message.c_str());
    editByHand(case_, "UPDATE planned_audits SET seed = 9; INSERT INTO planned_audits(tape_id, selection_spec, seed, seed_source, shard_count,"
                      " tolerance, program_check, planned_at) SELECT tape_id, selection_spec, 10, seed_source, shard_count, tolerance,"
                      " program_check, planned_at FROM planned_audits");
    message = refusal();
    QVERIFY2(contains(message, " is unsigned"), message.c_str());
    editByHand(case_, "DELETE FROM planned_audits WHERE signature IS NULL");
    {
        test::ConfigHome stranger(dir_->file("stranger"));
        test::recordMadeUpPlan(case_, older);
    }
    message = refusal();
    QVERIFY2(contains(message, "which is neither this user's nor in their trusted-keys file"), message.c_str());
    QVERIFY(runsOf(case_).empty());
}

QTEST_GUILESS_MAIN(TestShardMerge)
#include "test_shard_merge.moc"
