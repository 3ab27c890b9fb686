// A sharded replay in the workstation (offscreen): Replay > Export Cluster Job… writes the
// Slurm array script or Kubernetes manifest for the open case, File > Merge Shard Results…
// joins shard cases into it as one run that the run list names as merged, and a bad set of
// shards is refused with the reason in the status line, the case unchanged.

#include <QtTest>

#include <QAction>
#include <QSignalSpy>
#include <QTreeWidget>

#include <filesystem>
#include <map>

#include "config_home.h"
#include "file_bytes.h"
#include "made_up_shard.h"
#include "main_window.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/planned_audits.h"
#include "zkdv/store/replay_store.h"

using namespace zkdv;
using namespace zkdv::ui;

class TestShardedAudit : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void bothActionsHaveShortcutsAndNeedACase();
    void mergedShardsAppearAsOneRun();
    void aMissingShardIsRefusedAndTheCaseUnchanged();
    void theSlurmScriptAndKubernetesJobAreWritten();
    void aSelectionThatCannotBePlannedWritesNothing();

private:
    std::pair<bool, QString> runJob(const std::function<bool()>& start);
    std::size_t runCount() const;
    QAction* action(const QString& text) const;

    test::TempDir dir_;
    std::unique_ptr<test::ConfigHome> home_;
    std::string casePath_;
    std::unique_ptr<MainWindow> window_;
};

void TestShardedAudit::initTestCase()
{
    QCoreApplication::setOrganizationName(QStringLiteral("zkdv-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_sharded_audit"));
    home_ = std::make_unique<test::ConfigHome>(dir_.file("auditor"));
    SyntheticDemoOptions options;
    options.steps = 60;
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    writeSyntheticDemoTape(dir_.file("run.zkdv"), options);
}

void TestShardedAudit::init()
{
    casePath_ = dir_.file("case-" + std::string(QTest::currentTestFunction()) + ".zkaudit");
    CaseStore(casePath_, CaseStore::Access::ReadWrite).ingestTape(dir_.file("run.zkdv"));
    test::recordMadeUpPlan(casePath_);  // the audit the made-up shards are of, as an exported job records it
    window_ = std::make_unique<MainWindow>();
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    QVERIFY(window_->openCase(QString::fromStdString(casePath_)));
}

void TestShardedAudit::cleanup() { window_.reset(); }

std::pair<bool, QString> TestShardedAudit::runJob(const std::function<bool()>& start)
{
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    if (!start())
        return {false, QStringLiteral("the job did not start")};
    if (!finished.wait(120000))
        return {false, QStringLiteral("the job did not finish")};
    return {finished.front().at(0).toBool(), finished.front().at(1).toString()};
}

std::size_t TestShardedAudit::runCount() const
{
    CaseStore store(casePath_, CaseStore::Access::ReadOnly);
    return ReplayStore(store.database()).runs().size();
}

QAction* TestShardedAudit::action(const QString& text) const
{
    for (QAction* candidate : window_->findChildren<QAction*>())
        if (candidate->text() == text)
            return candidate;
    return nullptr;
}

void TestShardedAudit::bothActionsHaveShortcutsAndNeedACase()
{
    const std::map<QString, QKeySequence> expected{{QStringLiteral("&Merge Shard Results…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_G)},
                                                   {QStringLiteral("Export C&luster Job…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_J)}};
    for (const auto& [text, keys] : expected) {
        QAction* found = action(text);
        QVERIFY2(found, qPrintable(text));
        QCOMPARE(found->shortcut(), keys);
        QVERIFY(found->isEnabled());
        window_->openCase(QString());
        QVERIFY(!found->isEnabled());  // nothing to merge into or export without a case
        QVERIFY(window_->openCase(QString::fromStdString(casePath_)));
    }
}

void TestShardedAudit::mergedShardsAppearAsOneRun()
{
    QStringList shards;
    for (unsigned i = 0; i < 3; ++i) {
        shards << QString::fromStdString(dir_.file("merge-shard-" + std::to_string(i) + ".zkaudit"));
        test::writeMadeUpShard(casePath_, shards.back().toStdString(), i);
    }
    const auto [ok, message] = runJob([&] { return window_->mergeShardResults(shards); });
    QVERIFY2(ok, qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("merged from 3 shards")) && message.contains(QStringLiteral("passed")), qPrintable(message));
    QCOMPARE(runCount(), std::size_t(1));
    // The run list names the run as merged.
    bool listed = false;
    for (QTreeWidget* list : window_->findChildren<QTreeWidget*>())
        for (int row = 0; row < list->topLevelItemCount(); ++row)
            for (int column = 0; column < list->columnCount(); ++column)
                listed = listed || list->topLevelItem(row)->text(column).contains(QStringLiteral("merged from 3 shards"));
    QVERIFY(listed);
}

void TestShardedAudit::aMissingShardIsRefusedAndTheCaseUnchanged()
{
    QStringList shards;
    for (unsigned i = 0; i < 2; ++i) {
        shards << QString::fromStdString(dir_.file("missing-shard-" + std::to_string(i) + ".zkaudit"));
        test::writeMadeUpShard(casePath_, shards.back().toStdString(), i);
    }
    const std::vector<std::uint8_t> before = test::readAll(casePath_);
    const auto [ok, message] = runJob([&] { return window_->mergeShardResults(shards); });
    QVERIFY(!ok);
    QVERIFY2(message.contains(QStringLiteral("lack shard 2")), qPrintable(message));
    QCOMPARE(runCount(), std::size_t(0));
    QCOMPARE(test::readAll(casePath_), before);
}

void TestShardedAudit::theSlurmScriptAndKubernetesJobAreWritten()
{
    ClusterJob job;
    job.selection = "random:20";
    job.seed = 77;
    job.shards = 4;
    job.gres = "gpu:1";
    const QString script = QString::fromStdString(dir_.file("audit.sbatch"));
    auto [ok, message] = runJob([&] { return window_->exportClusterJob(job, false, script); });
    QVERIFY2(ok, qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("sbatch")), qPrintable(message));
    const std::string text = test::readText(script.toStdString());
    QVERIFY2(text.find("#SBATCH --array=0-3") != std::string::npos, text.c_str());
    QVERIFY2(text.find("gpu:1") != std::string::npos, text.c_str());
    QVERIFY2(text.find("--shard \"$shard/4\"") != std::string::npos, text.c_str());
    QVERIFY2(text.find(casePath_) != std::string::npos, text.c_str());
    // Slurm opens the tasks' logs in the shard folder before they run: it exists already.
    const std::string folder = defaultShardFolder(casePath_, 77, 4);
    QVERIFY2(std::filesystem::is_directory(folder), folder.c_str());
    // The job's audit is recorded in the case, and its merge is held to it by id.
    std::optional<PlannedAudit> planned;
    {
        CaseStore store(casePath_, CaseStore::Access::ReadOnly);
        planned = newestPlannedAudit(store.database());
    }
    QVERIFY(planned);
    QCOMPARE(planned->seed, std::uint64_t(77));
    QCOMPARE(planned->shardCount, 4u);
    QVERIFY2(text.find(" --plan " + std::to_string(planned->id) + " ") != std::string::npos, text.c_str());

    job.image = "registry.example/zkdv:1";
    job.claim = "audit-data";
    const QString manifest = QString::fromStdString(dir_.file("audit.yaml"));
    std::tie(ok, message) = runJob([&] { return window_->exportClusterJob(job, true, manifest); });
    QVERIFY2(ok, qPrintable(message));
    const std::string yaml = test::readText(manifest.toStdString());
    QVERIFY2(yaml.find("completionMode: Indexed") != std::string::npos, yaml.c_str());
    QVERIFY2(yaml.find("JOB_COMPLETION_INDEX") != std::string::npos, yaml.c_str());
    QVERIFY2(yaml.find("audit-data") != std::string::npos, yaml.c_str());
}

void TestShardedAudit::aSelectionThatCannotBePlannedWritesNothing()
{
    ClusterJob job;
    job.selection = "ids:999";  // the tape has 60 transactions
    job.seed = 1;
    job.shards = 2;
    const QString script = QString::fromStdString(dir_.file("nothing.sbatch"));
    const auto [ok, message] = runJob([&] { return window_->exportClusterJob(job, false, script); });
    QVERIFY(!ok);
    QVERIFY2(message.contains(QStringLiteral("999")), qPrintable(message));
    QVERIFY(!QFileInfo::exists(script));
}

QTEST_MAIN(TestShardedAudit)
#include "test_sharded_audit.moc"
