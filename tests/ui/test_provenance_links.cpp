// A tape's links to the world in the workstation (offscreen): Tools > Check Dataset
// Commitment… and Match Weights… run their jobs on a small case, the case keeps each outcome
// (schema 15, provenance_checks), and the case overview says it in plain words, coloured,
// also after the case is opened again.

#include <QtTest>

#include <QAction>
#include <QRadioButton>
#include <QSignalSpy>

#include <cstring>
#include <map>

#include "dialogs/dataset_check_dialog.h"
#include "dialogs/weight_match_dialog.h"
#include "file_bytes.h"
#include "snapshot_models.h"
#include "main_window.h"
#include "settings/settings.h"
#include "temp_dir.h"
#include "widgets/case_overview.h"
#include "widgets/path_field.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/provenance/dataset_commitment_file.h"
#include "zkdv/provenance/dataset_files.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/provenance_checks.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/workflow/tape_provenance.h"

using namespace zkdv;
using namespace zkdv::ui;

namespace {

using test::Model;
using test::SnapshotCopier;
using test::Tensor;
using test::writeModel;

// Adds 0.5 to the first float32 element of the tensor `name`.
void nudge(Model& model, const std::string& name)
{
    for (Tensor& tensor : model) {
        if (tensor.name != name)
            continue;
        float value;
        std::memcpy(&value, tensor.bytes.data(), sizeof value);
        value += 0.5f;
        std::memcpy(tensor.bytes.data(), &value, sizeof value);
        return;
    }
    QFAIL(("no tensor " + name).c_str());
}

std::string sha256Of(const std::string& path)
{
    return toHex(hashDatasetFiles({DatasetFile{"f", path, 0}}).front().sha256);
}

// Asks to stop at once: a cancelled check stores nothing.
struct CancelAtOnce : ProgressSink {
    void report(std::uint64_t, std::uint64_t, std::string_view) override {}
    bool cancelRequested() const override { return true; }
};

}  // namespace

class TestProvenanceLinks : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void theToolsMenuHasBothActionsWithShortcuts();
    void aDatasetCheckIsKeptAndSaidInPlainWords();
    void weightMatchesNameTheTensorsThatDiffer();
    void aCheckThatCannotBeMadeStoresNothing();
    void theDialogsRememberWhereFilesWerePicked();
    void aTapeBoundToADatasetLinksToItsOwnCommitmentOnly();

private:
    // The overview's value on the row `label` of the first tape.
    QString overviewValue(const QString& label, QColor* colour = nullptr) const;
    // Runs `start` (a job on the window) and waits for it: its ok and message.
    std::pair<bool, QString> runJob(const std::function<bool()>& start);

    test::TempDir dir_;
    QString case_;
    std::map<std::uint64_t, Model> states_;
    std::uint64_t transactions_ = 0;
    std::unique_ptr<MainWindow> window_;
};

void TestProvenanceLinks::initTestCase()
{
    QCoreApplication::setOrganizationName(QStringLiteral("zkdv-tests"));
    QCoreApplication::setApplicationName(QStringLiteral("test_provenance_links"));
    SyntheticDemoOptions options;
    options.steps = 30;
    options.batchSize = 4;
    options.features = 4;  // weight [3, 4], bias [3], input_mean [4], batches_seen []
    options.classes = 3;
    options.snapshotInterval = 12;
    writeSyntheticDemoTape(dir_.file("run.zkdv"), options);
    SnapshotCopier copier;
    transactions_ = scanTape(dir_.file("run.zkdv"), &copier).transactionCount;
    states_ = copier.states;
    QVERIFY(states_.count(0) && states_.count(transactions_));
    case_ = QString::fromStdString(dir_.file("case.zkaudit"));
    CaseStore store(case_.toStdString(), CaseStore::Access::ReadWrite);
    store.ingestTape(dir_.file("run.zkdv"));

    QVERIFY(QDir().mkpath(QString::fromStdString(dir_.file("data/sub"))));
    test::writeText(dir_.file("data/a.txt"), "alpha\n");
    test::writeText(dir_.file("data/sub/b.bin"), "beta\n");
    commitDataset({dir_.file("data")}, dir_.file("data.commit.json"), false);
}

void TestProvenanceLinks::init()
{
    window_ = std::make_unique<MainWindow>();
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
    QVERIFY(window_->openCase(case_));
}

void TestProvenanceLinks::cleanup() { window_.reset(); }

QString TestProvenanceLinks::overviewValue(const QString& label, QColor* colour) const
{
    auto* tree = window_->findChild<CaseOverview*>();
    const QModelIndexList found =
        tree->model()->match(tree->model()->index(0, 0), Qt::DisplayRole, label, 1, Qt::MatchRecursive | Qt::MatchExactly);
    if (found.isEmpty())
        return QStringLiteral("(no row %1)").arg(label);
    const QModelIndex value = found.front().siblingAtColumn(1);
    if (colour)
        *colour = value.data(Qt::ForegroundRole).value<QBrush>().color();
    return value.data().toString();
}

std::pair<bool, QString> TestProvenanceLinks::runJob(const std::function<bool()>& start)
{
    QSignalSpy finished(window_.get(), &MainWindow::jobFinished);
    if (!start())
        return {false, QStringLiteral("the job did not start")};
    if (!finished.wait(120000))
        return {false, QStringLiteral("the job did not finish")};
    return {finished.front().at(0).toBool(), finished.front().at(1).toString()};
}

void TestProvenanceLinks::theToolsMenuHasBothActionsWithShortcuts()
{
    std::map<QString, QKeySequence> expected{{QStringLiteral("Check &Dataset Commitment…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_K)},
                                             {QStringLiteral("&Match Weights…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_W)}};
    for (const auto& [text, keys] : expected) {
        QAction* found = nullptr;
        for (QAction* action : window_->findChildren<QAction*>())
            if (action->text() == text)
                found = action;
        QVERIFY2(found, qPrintable(text));
        QCOMPARE(found->shortcut(), keys);
        QVERIFY(found->isEnabled());  // a case with a tape is open
        window_->openCase(QString());
        QVERIFY(!found->isEnabled());  // nothing to check without a tape
        QVERIFY(window_->openCase(case_));
    }
}

void TestProvenanceLinks::aDatasetCheckIsKeptAndSaidInPlainWords()
{
    const QString commitment = QString::fromStdString(dir_.file("data.commit.json"));
    const QString data = QString::fromStdString(dir_.file("data"));
    const QString hash = QString::fromStdString(sha256Of(commitment.toStdString()).substr(0, 8));
    QColor colour;
    QCOMPARE(overviewValue(QStringLiteral("Dataset"), &colour), QStringLiteral("not checked"));

    auto [ok, message] = runJob([&] { return window_->checkDataset(commitment, data); });
    QVERIFY2(ok, qPrintable(message));
    QString shown = overviewValue(QStringLiteral("Dataset"), &colour);
    QCOMPARE(shown, QStringLiteral("Dataset matches data.commit.json (sha256 %1…): all 2 files in %2 as committed").arg(hash, data));
    QCOMPARE(colour, QColor(0x1b, 0x7a, 0x2e));
    QVERIFY2(message.contains(shown), qPrintable(message));

    test::writeText(dir_.file("data/sub/b.bin"), "changed\n");
    std::tie(ok, message) = runJob([&] { return window_->checkDataset(commitment, data); });
    QVERIFY2(ok, qPrintable(message));  // the check ran; what it found is the result
    shown = overviewValue(QStringLiteral("Dataset"), &colour);
    QCOMPARE(shown, QStringLiteral("Dataset differs from data.commit.json (sha256 %1…): 1 file differs in %2: sub/b.bin (changed)").arg(hash, data));
    QCOMPARE(colour, QColor(0xb0, 0x00, 0x20));
    test::writeText(dir_.file("data/sub/b.bin"), "beta\n");

    // Reopened, the case still says it: the newest check of the kind.
    window_ = std::make_unique<MainWindow>();
    QVERIFY(window_->openCase(case_));
    QCOMPARE(overviewValue(QStringLiteral("Dataset")), shown);
    CaseStore store(case_.toStdString(), CaseStore::Access::ReadOnly);
    const std::vector<ProvenanceCheck> all = ProvenanceChecks(store.database(), store.tapes().front().id).all();
    QCOMPARE(all.size(), std::size_t(2));
    QVERIFY(all[0].ok && !all[1].ok);
    QCOMPARE(all[1].sha256.substr(0, 8), hash.toStdString());
}

void TestProvenanceLinks::weightMatchesNameTheTensorsThatDiffer()
{
    const std::string shipped = dir_.file("model.safetensors");
    writeModel(shipped, states_[transactions_]);
    const QString hash = QString::fromStdString(sha256Of(shipped).substr(0, 8));
    QColor colour;
    QCOMPARE(overviewValue(QStringLiteral("Final model")), QStringLiteral("not checked"));
    auto [ok, message] = runJob([&] { return window_->matchWeights(QString::fromStdString(shipped), ProvenanceKind::FinalModel); });
    QVERIFY2(ok, qPrintable(message));
    QCOMPARE(overviewValue(QStringLiteral("Final model"), &colour),
             QStringLiteral("Final state matches model.safetensors (sha256 %1…): all 4 tensors equal, bit for bit").arg(hash));
    QCOMPARE(colour, QColor(0x1b, 0x7a, 0x2e));

    Model start = states_[0];
    nudge(start, "weight");
    nudge(start, "bias");
    const std::string published = dir_.file("start.safetensors");
    writeModel(published, start);
    std::tie(ok, message) = runJob([&] { return window_->matchWeights(QString::fromStdString(published), ProvenanceKind::StartCheckpoint); });
    QVERIFY2(ok, qPrintable(message));
    QCOMPARE(overviewValue(QStringLiteral("Start checkpoint"), &colour),
             QStringLiteral("Snapshot 0 differs from start.safetensors (sha256 %1…): 2 tensors differ: weight, bias")
                 .arg(QString::fromStdString(sha256Of(published).substr(0, 8))));
    QCOMPARE(colour, QColor(0xb0, 0x00, 0x20));
    // Each kind keeps its own newest check.
    QVERIFY(overviewValue(QStringLiteral("Final model")).startsWith(QStringLiteral("Final state matches")));
}

void TestProvenanceLinks::aCheckThatCannotBeMadeStoresNothing()
{
    const std::string notes = dir_.file("notes.safetensors");
    test::writeText(notes, "not a model");
    const QString before = overviewValue(QStringLiteral("Start checkpoint"));
    auto [ok, message] = runJob([&] { return window_->matchWeights(QString::fromStdString(notes), ProvenanceKind::StartCheckpoint); });
    QVERIFY(!ok);
    QVERIFY2(message.contains(QStringLiteral("notes.safetensors")), qPrintable(message));
    QCOMPARE(overviewValue(QStringLiteral("Start checkpoint")), before);

    std::tie(ok, message) = runJob([&] { return window_->checkDataset(QString::fromStdString(dir_.file("nowhere.json")), QString()); });
    QVERIFY(!ok);
    QVERIFY2(message.contains(QStringLiteral("nowhere.json")), qPrintable(message));

    // Cancelled while hashing: nothing kept either.
    CaseStore store(case_.toStdString(), CaseStore::Access::ReadWrite);
    const std::int64_t tape = store.tapes().front().id;
    const std::size_t stored = ProvenanceChecks(store.database(), tape).all().size();
    CancelAtOnce cancel;
    QVERIFY_THROWS_EXCEPTION(OperationCancelled, checkTapeDataset(store, tape, dir_.file("data.commit.json"), dir_.file("data"), &cancel));
    QCOMPARE(ProvenanceChecks(store.database(), tape).all().size(), stored);
    QVERIFY_THROWS_EXCEPTION(Error, checkTapeWeights(store, tape, dir_.file("model.safetensors"), ProvenanceKind::Dataset));
}

void TestProvenanceLinks::theDialogsRememberWhereFilesWerePicked()
{
    const QString elsewhere = QString::fromStdString(dir_.file("elsewhere"));
    QVERIFY(QDir().mkpath(elsewhere));
    {
        DatasetCheckDialog dialog;
        dialog.findChild<PathField*>(QStringLiteral("commitment"))->setPath(elsewhere + QStringLiteral("/data.commit.json"));
        QCOMPARE(dialog.folder(), QString());  // the data is optional
        dialog.accept();
        QCOMPARE(Settings::datasetFolder(), elsewhere);
    }
    {
        WeightMatchDialog dialog;
        QCOMPARE(dialog.kind(), ProvenanceKind::FinalModel);
        dialog.findChild<PathField*>(QStringLiteral("model"))->setPath(elsewhere + QStringLiteral("/model.safetensors"));
        dialog.findChild<QRadioButton*>()->setChecked(true);  // the first: snapshot 0
        QCOMPARE(dialog.kind(), ProvenanceKind::StartCheckpoint);
        dialog.accept();
        QCOMPARE(Settings::modelFolder(), elsewhere);
    }
}

// A tape of format 1.12 or 1.14 binds its batches to a commitment of samples (tape format 5.7):
// that commitment is the dataset link; another valid commitment is other data, and a commitment
// checked against itself alone is "intact", never a match.
void TestProvenanceLinks::aTapeBoundToADatasetLinksToItsOwnCommitmentOnly()
{
    const std::string golden = ZKDV_TEST_DATA_DIR "/golden/mlp-bound-adam-1.12";
    CaseStore store(dir_.file("bound.zkaudit"), CaseStore::Access::ReadWrite);
    const std::int64_t tape = store.ingestTape(golden + ".zkdv").tapeId;
    const ProvenanceCheck own = checkTapeDataset(store, tape, golden + ".samples.commit.json", std::nullopt, nullptr);
    QVERIFY2(own.ok, own.detail.c_str());
    QVERIFY2(own.detail.find("bound to its 40 samples") != std::string::npos, own.detail.c_str());
    // A 1.12 tape's count (sha256-merkle-v1) is its claim, which the match says it compared.
    QVERIFY2(own.detail.find("the tape's count is its claim, here equal to the document's") != std::string::npos, own.detail.c_str());
    QVERIFY(provenanceCheckText(own).rfind("Dataset matches mlp-bound-adam-1.12.samples.commit.json", 0) == 0);

    // Format 1.14 (sha256-merkle-v2): its root counts the samples. Its own document matches, and
    // so does the v1 document of the same samples (its root and count give the same counted
    // root); the v1 tape matches the v2 document by its tree root and count.
    const std::string golden14 = ZKDV_TEST_DATA_DIR "/golden/mlp-bound-adam-1.14";
    const std::int64_t counted = store.ingestTape(golden14 + ".zkdv").tapeId;
    for (const std::string& document : {golden14 + ".samples.commit.json", golden + ".samples.commit.json"}) {
        const ProvenanceCheck check = checkTapeDataset(store, counted, document, std::nullopt, nullptr);
        QVERIFY2(check.ok, check.detail.c_str());
        QVERIFY2(check.detail.find("bound to its 40 samples") != std::string::npos && check.detail.find("claim") == std::string::npos,
                 check.detail.c_str());
    }
    const ProvenanceCheck crossed = checkTapeDataset(store, tape, golden14 + ".samples.commit.json", std::nullopt, nullptr);
    QVERIFY2(crossed.ok && crossed.detail.find("its claim") != std::string::npos, crossed.detail.c_str());

    const ProvenanceCheck other = checkTapeDataset(store, tape, dir_.file("data.commit.json"), std::nullopt, nullptr);
    QVERIFY2(!other.ok, other.detail.c_str());
    QVERIFY2(other.detail.find("bound to another commitment") != std::string::npos, other.detail.c_str());

    // The synthetic tape binds nothing: its files' commitment alone is intact, not a match.
    const std::int64_t unbound = store.ingestTape(dir_.file("run.zkdv")).tapeId;
    const ProvenanceCheck alone = checkTapeDataset(store, unbound, dir_.file("data.commit.json"), std::nullopt, nullptr);
    QVERIFY(alone.ok);
    QVERIFY2(provenanceCheckText(alone).rfind("Dataset commitment intact: data.commit.json", 0) == 0, provenanceCheckText(alone).c_str());
}

QTEST_MAIN(TestProvenanceLinks)
#include "test_provenance_links.moc"
