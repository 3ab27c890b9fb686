// Runs the real zkdv-audit executable and checks its exit codes, messages and JSON output.

#include <QtTest>

#include <QDir>
#include <QFile>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>

#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "absent_device.h"
#include "dishonest_trainer.h"
#include "file_bytes.h"
#include "audit_run.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/sha256.h"

using namespace zkdv;
using test::readAll;
using test::writeAll;

namespace {

constexpr int kSteps = 30;

using Result = test::AuditRun;

Result runAudit(const QStringList& arguments, const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment()) { return test::runAuditCommand(arguments, environment); }

QJsonObject jsonObject(const QString& text)
{
    QJsonParseError error{};
    QJsonDocument document = QJsonDocument::fromJson(text.toUtf8(), &error);
    if (error.error != QJsonParseError::NoError || !document.isObject())
        return QJsonObject{{QStringLiteral("<invalid>"), text}};
    return document.object();
}

// Where every record of a tape lies.
struct LayoutVisitor : TapeVisitor {
    std::vector<RecordLocation> transactions;
    void onTransaction(const TransactionRecord&, const RecordLocation& l) override
    {
        RecordLocation copy = l;
        copy.payload = ByteSpan(static_cast<const std::uint8_t*>(nullptr), l.payload.size);
        transactions.push_back(copy);
    }
};

}  // namespace

class TestCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void exitCodesAndMessages_data();
    void exitCodesAndMessages();
    void verifyJson_data();
    void verifyJson();
    void corruptTapeIsLocated();
    void demoRefusesToReplaceAFile();
    void demoWritesAVerifiableTape();
    void ingestAndInfo();
    void infoJson_data();
    void infoJson();
    void replayCommand();
    void replaySeedIsDrawnUnlessGiven();
    void replayRunsTheTrainingsKernels();
    void libtorchLoadsOnlyForDemoAndReplay();
    void signedTapesVerifyAgainstTrustedKeys();
    void strippingASignatureReadsNoBetterThanForgingIt();
    void aSignedVerdictVerifiesForItsTapeAndKeyOnly();
    void aPassRestingOnAToleranceIsNeverPassed();
    void aDetachedSignatureBesideATapeIsChecked();
    void planSplitsASelectionIntoWholeSegments();

private:
    // Substitutes {name} placeholders with the fixture paths.
    QString expand(QString text) const
    {
        for (const auto& [name, value] : fixtures_)
            text.replace(QLatin1Char('{') + name + QLatin1Char('}'), value);
        return text;
    }
    QStringList expand(const QStringList& list) const
    {
        QStringList expanded;
        for (const QString& item : list)
            expanded << expand(item);
        return expanded;
    }
    QString path(const std::string& name) const { return QString::fromStdString(dir_.file(name)); }

    test::TempDir dir_;
    std::map<QString, QString> fixtures_;
    std::uint64_t corruptRecord_ = 0;
    std::string goodSha256_;
    std::uint64_t goodSize_ = 0;     // bytes of the good tape
    std::uint64_t goodRecords_ = 0;  // its records, the seal included
};

void TestCli::initTestCase()
{
    QVERIFY2(QFileInfo(QStringLiteral(ZKDV_AUDIT_EXECUTABLE)).isExecutable(), ZKDV_AUDIT_EXECUTABLE);

    SyntheticDemoOptions options;
    options.steps = kSteps;
    options.batchSize = 4;
    options.snapshotInterval = 12;
    options.updateCheckProbability = 0.3;
    options.stateCheckProbability = 0.3;
    const std::string good = dir_.file("good.zkdv");
    writeSyntheticDemoTape(good, options);
    const std::vector<std::uint8_t> bytes = readAll(good);
    goodSha256_ = toHex(Sha256::of(ByteSpan(bytes)));

    LayoutVisitor layout;
    QCOMPARE(scanTape(good, &layout).status, TapeStatus::Sealed);
    QCOMPARE(layout.transactions.size(), std::size_t(kSteps));

    // One flipped byte in the payload of transaction 13.
    const RecordLocation& victim = layout.transactions[13];
    corruptRecord_ = victim.index;
    std::vector<std::uint8_t> corrupt = bytes;
    corrupt[victim.offset + tape::kFrameHeaderSize + victim.payload.size / 2] ^= 0x04;
    writeAll(dir_.file("corrupt.zkdv"), corrupt, corrupt.size());

    // Cut in the middle of transaction 20's record.
    const RecordLocation& cut = layout.transactions[20];
    writeAll(dir_.file("truncated.zkdv"), bytes, static_cast<std::size_t>(cut.offset + cut.frameSize / 2));

    // Fewer bytes after the seal than a frame header: not a cut record, since nothing may follow a seal.
    std::vector<std::uint8_t> trailing = bytes;
    trailing.insert(trailing.end(), 10, 0);
    writeAll(dir_.file("trailing.zkdv"), trailing, trailing.size());
    goodSize_ = bytes.size();
    goodRecords_ = scanTape(good).recordCount;

    const std::string text = "these are notes, not a tape\n";
    writeAll(dir_.file("notes.txt"), std::vector<std::uint8_t>(text.begin(), text.end()), text.size());

    fixtures_ = {
        {QStringLiteral("good"), path("good.zkdv")},
        {QStringLiteral("corrupt"), path("corrupt.zkdv")},
        {QStringLiteral("truncated"), path("truncated.zkdv")},
        {QStringLiteral("trailing"), path("trailing.zkdv")},
        {QStringLiteral("text"), path("notes.txt")},
        {QStringLiteral("missing"), path("does-not-exist.zkdv")},
        {QStringLiteral("new"), path("never-written.zkdv")},
        {QStringLiteral("case"), path("usage.zkaudit")},
    };
}

void TestCli::exitCodesAndMessages_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("inStdout");  // empty: not checked
    QTest::addColumn<QString>("inStderr");  // empty: not checked

    QTest::newRow("--help") << QStringList{"--help"} << 0 << "usage:" << "";
    QTest::newRow("-h") << QStringList{"-h"} << 0 << "usage:" << "";
    QTest::newRow("verify --help") << QStringList{"verify", "--help"} << 0 << "usage: zkdv-audit verify" << "";
    QTest::newRow("info --help") << QStringList{"info", "--help"} << 0 << "usage: zkdv-audit info" << "";
    QTest::newRow("ingest --help") << QStringList{"ingest", "--help"} << 0 << "usage: zkdv-audit ingest" << "";
    QTest::newRow("demo --help") << QStringList{"demo", "--help"} << 0 << "usage: zkdv-audit demo" << "";
    QTest::newRow("no arguments") << QStringList{} << 2 << "" << "usage:";
    QTest::newRow("unknown command") << QStringList{"frobnicate"} << 2 << "" << "unknown command \"frobnicate\"";
    QTest::newRow("unknown option, verify") << QStringList{"verify", "{good}", "--bogus"} << 2 << "" << "--bogus";
    QTest::newRow("unknown option, demo") << QStringList{"demo", "--out", "{new}", "--frob=1"} << 2 << "" << "--frob";
    QTest::newRow("unknown short option") << QStringList{"info", "-z", "{good}"} << 2 << "" << "-z";
    QTest::newRow("verify without a tape") << QStringList{"verify"} << 2 << "" << "missing TAPE";
    QTest::newRow("verify, missing file") << QStringList{"verify", "{missing}"} << 2 << "" << "{missing}";
    QTest::newRow("verify, not a tape") << QStringList{"verify", "{text}"} << 2 << "" << "not a ZKDV tape";
    QTest::newRow("verify, good tape") << QStringList{"verify", "{good}"} << 0 << "sealed" << "";
    QTest::newRow("verify --sha256, good tape") << QStringList{"verify", "--sha256", "{good}"} << 0 << "file sha256" << "";
    QTest::newRow("verify, truncated tape") << QStringList{"verify", "{truncated}"} << 1 << "truncated" << "";
    QTest::newRow("demo without --out") << QStringList{"demo", "--steps", "3"} << 2 << "" << "--out";
    QTest::newRow("demo --steps abc") << QStringList{"demo", "--out", "{new}", "--steps", "abc"} << 2 << "" << "--steps";
    QTest::newRow("demo --steps -3") << QStringList{"demo", "--out", "{new}", "--steps=-3"} << 2 << "" << "--steps";
    QTest::newRow("demo --update-check 2") << QStringList{"demo", "--out", "{new}", "--update-check", "2"} << 2 << "" << "--update-check";
    QTest::newRow("demo --steps without value") << QStringList{"demo", "--out", "{new}", "--steps"} << 2 << "" << "needs a value";
    QTest::newRow("ingest without --case") << QStringList{"ingest", "{good}"} << 2 << "" << "--case";
    QTest::newRow("ingest without files") << QStringList{"ingest", "--case", "{case}"} << 2 << "" << "missing FILE";
    QTest::newRow("info, text file") << QStringList{"info", "{text}"} << 2 << "" << "neither a ZKDV tape nor an audit case";
    QTest::newRow("info, missing file") << QStringList{"info", "{missing}"} << 2 << "" << "{missing}";
    QTest::newRow("info, good tape") << QStringList{"info", "{good}"} << 0 << "optimizer  SGD" << "";
    QTest::newRow("replay --help") << QStringList{"replay", "--help"} << 0 << "usage: zkdv-audit replay" << "";
    QTest::newRow("replay --help, intra-op default") << QStringList{"replay", "--help"} << 0
                                                     << "default: the tape's recorded count, producer.intra_op_threads" << "";
    QTest::newRow("replay without a case") << QStringList{"replay", "--select", "all"} << 2 << "" << "missing CASE";
    QTest::newRow("replay, missing case") << QStringList{"replay", "{case}", "--select", "all"} << 2 << "" << "does not exist";
}

void TestCli::exitCodesAndMessages()
{
    QFETCH(QStringList, arguments);
    QFETCH(int, exitCode);
    QFETCH(QString, inStdout);
    QFETCH(QString, inStderr);
    const Result result = runAudit(expand(arguments));
    QVERIFY2(!result.crashed, qPrintable(result.describe()));
    QVERIFY2(result.exitCode == exitCode, qPrintable(result.describe()));
    if (!inStdout.isEmpty())
        QVERIFY2(result.out.contains(expand(inStdout)), qPrintable(result.describe()));
    if (!inStderr.isEmpty())
        QVERIFY2(result.err.contains(expand(inStderr)), qPrintable(result.describe()));
    // Nothing the usage errors touch may appear on disk.
    QVERIFY(!QFile::exists(fixtures_.at(QStringLiteral("new"))));
    QVERIFY(!QFile::exists(fixtures_.at(QStringLiteral("case"))));
}

void TestCli::verifyJson_data()
{
    QTest::addColumn<QString>("tape");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("status");
    QTest::addColumn<int>("transactions");
    QTest::addColumn<qint64>("record");      // the problem's record index; -1: not checked
    QTest::addColumn<qint64>("byteOffset");  // the problem's byte offset; -1: not checked
    QTest::addColumn<qint64>("transaction");  // the transaction the problem names; -1: none (null)
    QTest::newRow("good") << "{good}" << 0 << "sealed" << kSteps << qint64(-1) << qint64(-1) << qint64(-1);
    QTest::newRow("truncated in transaction 20") << "{truncated}" << 1 << "truncated" << 20 << qint64(-1) << qint64(-1) << qint64(20);
    QTest::newRow("corrupt in transaction 13") << "{corrupt}" << 1 << "corrupt" << 13 << static_cast<qint64>(corruptRecord_) << qint64(-1)
                                               << qint64(13);
    QTest::newRow("10 bytes after the seal") << "{trailing}" << 1 << "corrupt" << kSteps << static_cast<qint64>(goodRecords_)
                                             << static_cast<qint64>(goodSize_) << qint64(-1);
}

void TestCli::verifyJson()
{
    QFETCH(QString, tape);
    QFETCH(int, exitCode);
    QFETCH(QString, status);
    QFETCH(int, transactions);
    QFETCH(qint64, record);
    QFETCH(qint64, byteOffset);
    QFETCH(qint64, transaction);
    const Result result = runAudit({QStringLiteral("verify"), QStringLiteral("--json"), QStringLiteral("--sha256"), expand(tape)});
    QVERIFY2(!result.crashed && result.exitCode == exitCode, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QVERIFY2(!json.contains(QStringLiteral("<invalid>")), qPrintable(result.describe()));
    QCOMPARE(json.value(QStringLiteral("status")).toString(), status);
    QCOMPARE(json.value(QStringLiteral("transactions")).toInt(-1), transactions);
    QCOMPARE(json.value(QStringLiteral("complete")).toBool(), status == QLatin1String("sealed"));
    QCOMPARE(json.value(QStringLiteral("file_size")).toInteger(-1), QFileInfo(expand(tape)).size());
    const std::string sha = toHex(Sha256::of(ByteSpan(readAll(expand(tape).toStdString()))));
    QCOMPARE(json.value(QStringLiteral("file_sha256")).toString().toStdString(), sha);
    if (status == QLatin1String("sealed")) {
        QCOMPARE(sha, goodSha256_);
        QVERIFY(json.value(QStringLiteral("problem")).isNull());
    } else {
        QVERIFY(json.value(QStringLiteral("problem")).isObject());
    }
    const QJsonObject problem = json.value(QStringLiteral("problem")).toObject();
    if (record >= 0)
        QCOMPARE(problem.value(QStringLiteral("record")).toInteger(-1), record);
    if (byteOffset >= 0)
        QCOMPARE(problem.value(QStringLiteral("byte_offset")).toInteger(-1), byteOffset);
    if (status != QLatin1String("sealed")) {
        // docs/cli-json.md: the members are there, null when unknown.
        for (const char* member : {"record_type", "transaction", "frame_offset"})
            QVERIFY2(problem.contains(QLatin1String(member)), member);
        if (transaction >= 0) {
            QCOMPARE(problem.value(QStringLiteral("transaction")).toInteger(-1), transaction);
            QCOMPARE(problem.value(QStringLiteral("record_type")).toString(), QStringLiteral("transaction"));
        } else {
            QVERIFY(problem.value(QStringLiteral("transaction")).isNull());
        }
    }
}

void TestCli::corruptTapeIsLocated()
{
    const Result result = runAudit({QStringLiteral("verify"), expand(QStringLiteral("{corrupt}"))});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    QVERIFY2(result.all().contains(QStringLiteral("record %1 (transaction 13) at byte ").arg(corruptRecord_)), qPrintable(result.describe()));
    QVERIFY2(result.all().contains(QStringLiteral("corrupt")), qPrintable(result.describe()));
}

void TestCli::demoRefusesToReplaceAFile()
{
    const std::string existing = dir_.file("precious.zkdv");
    const std::string content = "an existing file that must survive\n";
    writeAll(existing, std::vector<std::uint8_t>(content.begin(), content.end()), content.size());
    const std::vector<std::uint8_t> before = readAll(existing);

    const Result refused = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), QString::fromStdString(existing),
                                     QStringLiteral("--steps"), QStringLiteral("3"), QStringLiteral("--quiet")});
    QVERIFY2(!refused.crashed && refused.exitCode == 2, qPrintable(refused.describe()));
    QVERIFY2(refused.err.contains(QString::fromStdString(existing)), qPrintable(refused.describe()));
    QVERIFY(readAll(existing) == before);

    const Result replaced = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), QString::fromStdString(existing),
                                      QStringLiteral("--steps"), QStringLiteral("3"), QStringLiteral("--overwrite"), QStringLiteral("--quiet")});
    QVERIFY2(!replaced.crashed && replaced.exitCode == 0, qPrintable(replaced.describe()));
    QVERIFY(readAll(existing) != before);
    QCOMPARE(scanTape(existing).status, TapeStatus::Sealed);
}

void TestCli::demoWritesAVerifiableTape()
{
    const QString out = path("cli-demo.zkdv");
    const Result demo = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), out, QStringLiteral("--steps"), QStringLiteral("25"),
                                  QStringLiteral("--seed"), QStringLiteral("3"), QStringLiteral("--snapshot-interval"), QStringLiteral("5")});
    QVERIFY2(!demo.crashed && demo.exitCode == 0, qPrintable(demo.describe()));
    QVERIFY2(demo.out.contains(QStringLiteral("25 transactions")), qPrintable(demo.describe()));
    const TapeSummary summary = scanTape(out.toStdString());
    QCOMPARE(summary.status, TapeStatus::Sealed);
    QCOMPARE(summary.transactionCount, std::uint64_t(25));
    QCOMPARE(summary.snapshotCount, std::uint64_t(6));  // 0, 5, 10, 15, 20, 25
    QVERIFY2(demo.out.contains(QString::fromStdString(toHex(summary.chainHead))), qPrintable(demo.describe()));
    const Result verify = runAudit({QStringLiteral("verify"), out});
    QVERIFY2(!verify.crashed && verify.exitCode == 0, qPrintable(verify.describe()));
}

void TestCli::ingestAndInfo()
{
    const QString casePath = path("flow.zkaudit");
    const QString good = expand(QStringLiteral("{good}"));
    auto caseTapes = [&]() {
        const Result info = runAudit({QStringLiteral("info"), casePath, QStringLiteral("--json")});
        const QJsonObject json = jsonObject(info.out);
        return std::make_pair(info, json.value(QStringLiteral("tapes")).toArray());
    };

    const Result first = runAudit({QStringLiteral("ingest"), good, QStringLiteral("--case"), casePath});
    QVERIFY2(!first.crashed && first.exitCode == 0, qPrintable(first.describe()));
    QVERIFY2(first.out.contains(QStringLiteral("ingested as tape 1")), qPrintable(first.describe()));

    // The tape's identity is its chain head; the whole-file SHA-256 only when asked for, which
    // the same tape ingested again (a no-op otherwise) fills in.
    QVERIFY(caseTapes().second.at(0).toObject().value(QStringLiteral("file_sha256")).isNull());
    const Result again = runAudit({QStringLiteral("ingest"), good, QStringLiteral("--case"), casePath, QStringLiteral("--sha256")});
    QVERIFY2(!again.crashed && again.exitCode == 0, qPrintable(again.describe()));
    QVERIFY2(again.out.contains(QStringLiteral("already")), qPrintable(again.describe()));

    // A folder stands for the files under it: the same tape in a subfolder is the same tape.
    const QString folder = path("handed");
    QVERIFY(QDir().mkpath(folder + QStringLiteral("/sub")));
    QFile::remove(folder + QStringLiteral("/sub/copy.zkdv"));
    QVERIFY(QFile::copy(good, folder + QStringLiteral("/sub/copy.zkdv")));
    const Result fromFolder = runAudit({QStringLiteral("ingest"), folder, QStringLiteral("--case"), casePath, QStringLiteral("--json")});
    QVERIFY2(!fromFolder.crashed && fromFolder.exitCode == 0, qPrintable(fromFolder.describe()));
    const QJsonArray handed = jsonObject(fromFolder.out).value(QStringLiteral("files")).toArray();
    QCOMPARE(handed.size(), qsizetype(1));
    QCOMPARE(handed.at(0).toObject().value(QStringLiteral("file")).toString(), folder + QStringLiteral("/sub/copy.zkdv"));
    QCOMPARE(handed.at(0).toObject().value(QStringLiteral("result")).toString(), QStringLiteral("already-present"));

    const Result corrupt = runAudit({QStringLiteral("ingest"), expand(QStringLiteral("{corrupt}")), QStringLiteral("--case"), casePath});
    QVERIFY2(!corrupt.crashed && corrupt.exitCode == 1, qPrintable(corrupt.describe()));
    QVERIFY2(corrupt.err.contains(QStringLiteral("record %1 (transaction 13) at byte").arg(corruptRecord_)), qPrintable(corrupt.describe()));

    auto [info, tapes] = caseTapes();
    QVERIFY2(!info.crashed && info.exitCode == 0, qPrintable(info.describe()));
    QCOMPARE(jsonObject(info.out).value(QStringLiteral("kind")).toString(), QStringLiteral("case"));
    QCOMPARE(tapes.size(), qsizetype(1));
    const QJsonObject tape = tapes.at(0).toObject();
    QCOMPARE(tape.value(QStringLiteral("file_sha256")).toString().toStdString(), goodSha256_);
    QCOMPARE(tape.value(QStringLiteral("status")).toString(), QStringLiteral("sealed"));
    QCOMPARE(tape.value(QStringLiteral("transactions")).toInt(-1), kSteps);
    QCOMPARE(tape.value(QStringLiteral("program")).toObject().value(QStringLiteral("present")).toBool(), true);

    // A truncated tape is refused unless --allow-incomplete.
    const QString truncated = expand(QStringLiteral("{truncated}"));
    const Result refused = runAudit({QStringLiteral("ingest"), truncated, QStringLiteral("--case"), casePath});
    QVERIFY2(!refused.crashed && refused.exitCode == 1, qPrintable(refused.describe()));
    QVERIFY2(refused.err.contains(QStringLiteral("truncated")), qPrintable(refused.describe()));
    QCOMPARE(caseTapes().second.size(), qsizetype(1));

    const Result allowed = runAudit({QStringLiteral("ingest"), truncated, QStringLiteral("--case"), casePath, QStringLiteral("--allow-incomplete"),
                                     QStringLiteral("--json")});
    QVERIFY2(!allowed.crashed && allowed.exitCode == 0, qPrintable(allowed.describe()));
    const QJsonArray files = jsonObject(allowed.out).value(QStringLiteral("files")).toArray();
    QCOMPARE(files.size(), qsizetype(1));
    QCOMPARE(files.at(0).toObject().value(QStringLiteral("result")).toString(), QStringLiteral("ingested"));
    const QJsonArray both = caseTapes().second;
    QCOMPARE(both.size(), qsizetype(2));
    QCOMPARE(both.at(1).toObject().value(QStringLiteral("status")).toString(), QStringLiteral("truncated"));
    QCOMPARE(both.at(1).toObject().value(QStringLiteral("transactions")).toInt(-1), 20);

    // A file that is neither a tape nor a program of one: 2, and the case keeps its two tapes.
    const Result stray = runAudit({QStringLiteral("ingest"), expand(QStringLiteral("{text}")), QStringLiteral("--case"), casePath});
    QVERIFY2(!stray.crashed && stray.exitCode == 2, qPrintable(stray.describe()));
    QVERIFY2(stray.err.contains(QStringLiteral("matches no tape")), qPrintable(stray.describe()));
    QCOMPARE(caseTapes().second.size(), qsizetype(2));
}

void TestCli::infoJson_data()
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("kind");
    QTest::newRow("tape") << "{good}" << "tape";
    QTest::newRow("truncated tape") << "{truncated}" << "tape";
    QTest::newRow("case") << "{infocase}" << "case";
}

void TestCli::infoJson()
{
    QFETCH(QString, file);
    QFETCH(QString, kind);
    if (kind == QLatin1String("case")) {
        const QString casePath = path("info.zkaudit");
        fixtures_[QStringLiteral("infocase")] = casePath;
        const Result ingest = runAudit({QStringLiteral("ingest"), expand(QStringLiteral("{good}")), QStringLiteral("--case"), casePath,
                                        QStringLiteral("--embed"), QStringLiteral("--quiet")});
        QVERIFY2(!ingest.crashed && ingest.exitCode == 0, qPrintable(ingest.describe()));
    }
    const Result result = runAudit({QStringLiteral("info"), expand(file), QStringLiteral("--json")});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QVERIFY2(!json.contains(QStringLiteral("<invalid>")), qPrintable(result.describe()));
    QCOMPARE(json.value(QStringLiteral("kind")).toString(), kind);
    if (kind == QLatin1String("tape")) {
        const QJsonObject root = json.value(QStringLiteral("root")).toObject();
        QCOMPARE(root.value(QStringLiteral("optimizer")).toObject().value(QStringLiteral("contract")).toString(), QStringLiteral("SGD"));
        QCOMPARE(root.value(QStringLiteral("replay_snapshot_interval")).toInt(-1), 12);
        QCOMPARE(root.value(QStringLiteral("model")).toObject().value(QStringLiteral("parameters")).toArray().size(), qsizetype(2));
        QVERIFY(json.value(QStringLiteral("tape")).isObject());
    } else {
        const QJsonArray tapes = json.value(QStringLiteral("tapes")).toArray();
        QCOMPARE(tapes.size(), qsizetype(1));
        QCOMPARE(tapes.at(0).toObject().value(QStringLiteral("embedded")).toBool(), true);
        QCOMPARE(tapes.at(0).toObject().value(QStringLiteral("optimizer")).toString(), QStringLiteral("SGD"));
        QVERIFY(json.value(QStringLiteral("replay_runs")).isArray());
        QCOMPARE(json.value(QStringLiteral("replay_runs")).toArray().size(), qsizetype(0));
    }
}

void TestCli::replayCommand()
{
    const QString tape = path("cnn.zkdv"), replayCase = path("replay.zkaudit");
    Result result = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), tape, QStringLiteral("--steps"), QStringLiteral("26"),
                              QStringLiteral("--quiet")});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    result = runAudit({QStringLiteral("ingest"), tape, QStringLiteral("--case"), replayCase, QStringLiteral("--quiet")});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));

    // Usage and input errors: exit 2, nothing stored. The device is one past those present.
    const QString absent = QString::fromStdString(test::absentCudaDevice());
    const std::vector<std::pair<QStringList, QString>> refused = {
        {{QStringLiteral("replay"), replayCase}, QStringLiteral("--select")},
        {{QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("bogus:1")}, QStringLiteral("bogus:1")},
        {{QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("ids:999")}, QStringLiteral("999")},
        {{QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--device"), absent},
         absent},
        {{QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--tolerance"),
          QStringLiteral("ulp=x")},
         QStringLiteral("ulp")},
    };
    for (const auto& [arguments, message] : refused) {
        result = runAudit(arguments);
        QVERIFY2(!result.crashed && result.exitCode == 2, qPrintable(result.describe()));
        QVERIFY2(result.err.contains(message), qPrintable(result.describe()));
    }

    result = runAudit({QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--json"),
                       QStringLiteral("--quiet")});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("passed")).toBool(), true);
    QCOMPARE(json.value(QStringLiteral("replayed")).toInt(), 26);
    QCOMPARE(json.value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("exact")).toInt(), 26);
    // Member names are spelled with underscores, as the report's counts are (docs/cli-json.md, "Versions").
    QCOMPARE(json.value(QStringLiteral("json_version")).toInt(), 2);
    QCOMPARE(json.value(QStringLiteral("verdicts")).toObject().keys(),
             (QStringList{QStringLiteral("diverged"), QStringLiteral("exact"), QStringLiteral("unverifiable"), QStringLiteral("within_tolerance")}));
    QCOMPARE(json.value(QStringLiteral("device")).toString(), QStringLiteral("cpu"));
    QCOMPARE(json.value(QStringLiteral("first_failures")).toArray().size(), qsizetype(0));
    QVERIFY(!json.value(QStringLiteral("tolerance")).toString().isEmpty());
    // The intra-op default is the count the tape recorded.
    Result info = runAudit({QStringLiteral("info"), tape, QStringLiteral("--json"), QStringLiteral("--quiet")});
    const QJsonObject producer =
        jsonObject(info.out).value(QStringLiteral("root")).toObject().value(QStringLiteral("producer")).toObject();
    QVERIFY2(producer.value(QStringLiteral("intra_op_threads")).toInt(0) >= 1, qPrintable(info.describe()));
    QCOMPARE(json.value(QStringLiteral("intra_op_threads")).toInt(-1), producer.value(QStringLiteral("intra_op_threads")).toInt(0));

    result = runAudit({QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("random:3"), QStringLiteral("--seed"),
                       QStringLiteral("9")});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY2(result.out.contains(QStringLiteral("exact")), qPrintable(result.describe()));
    QVERIFY2(result.err.contains(QStringLiteral("replaying")), qPrintable(result.describe()));  // progress on stderr

    result = runAudit({QStringLiteral("info"), replayCase});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY2(result.out.contains(QStringLiteral("2 replay runs")) && result.out.contains(QStringLiteral("random:3 seed 9")) &&
                 result.out.contains(QStringLiteral("PASSED")),
             qPrintable(result.describe()));
    result = runAudit({QStringLiteral("info"), replayCase, QStringLiteral("--json")});
    json = jsonObject(result.out);
    const QJsonArray runs = json.value(QStringLiteral("replay_runs")).toArray();
    QCOMPARE(runs.size(), 2);
    QCOMPARE(runs[0].toObject().value(QStringLiteral("selection")).toString(), QStringLiteral("random:3"));
    QCOMPARE(runs[1].toObject().value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("exact")).toInt(), 26);
    QCOMPARE(json.value(QStringLiteral("json_version")).toInt(), 2);
    QVERIFY(runs[1].toObject().value(QStringLiteral("verdicts")).toObject().contains(QStringLiteral("within_tolerance")));

    // A synthetic tape has no program to run: every transaction unverifiable, exit 1.
    const QString syntheticCase = path("synthetic.zkaudit");
    result = runAudit({QStringLiteral("ingest"), fixtures_.at(QStringLiteral("good")), QStringLiteral("--case"), syntheticCase,
                       QStringLiteral("--quiet")});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    result = runAudit({QStringLiteral("replay"), syntheticCase, QStringLiteral("--select"), QStringLiteral("range:0-4"),
                       QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("unverifiable")).toInt(), 5);
    QVERIFY(json.value(QStringLiteral("problem")).toString().contains(QStringLiteral("synthetic")));
}

void TestCli::replaySeedIsDrawnUnlessGiven()
{
    // A seed the trainer could know voids a random audit's bound (issue 26, item 1): without
    // --seed each replay draws its own from the operating system, prints it, stores it as
    // drawn, and the report's bound and redo command name it; a given seed is said to be the
    // auditor's.
    const QString tape = path("seed.zkdv"), seedCase = path("seed.zkaudit");
    Result result = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), tape, QStringLiteral("--steps"), QStringLiteral("24"),
                              QStringLiteral("--quiet")});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    result = runAudit({QStringLiteral("ingest"), tape, QStringLiteral("--case"), seedCase, QStringLiteral("--quiet")});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));

    auto report = [&](qint64 runId) {
        const QString out = path("seed-report-" + std::to_string(runId) + ".json");
        const Result made = runAudit({QStringLiteral("report"), seedCase, QStringLiteral("--run"), QString::number(runId), QStringLiteral("--out"), out,
                                      QStringLiteral("--quiet")});
        QFile file(out);
        return made.exitCode == 0 && file.open(QIODevice::ReadOnly) ? jsonObject(QString::fromUtf8(file.readAll())) : QJsonObject{};
    };
    // Seeds above 2^53 do not survive a double: read them from the text.
    auto seedOf = [](const QString& jsonText) {
        const QRegularExpressionMatch match = QRegularExpression(QStringLiteral("\"seed\": (\\d+)")).match(jsonText);
        return match.hasMatch() ? match.captured(1) : QString();
    };

    std::vector<QString> drawn;
    for (int round = 0; round < 2; ++round) {
        result = runAudit({QStringLiteral("replay"), seedCase, QStringLiteral("--select"), QStringLiteral("random:4"), QStringLiteral("--json"),
                           QStringLiteral("--quiet")});
        QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
        const QJsonObject json = jsonObject(result.out);
        QCOMPARE(json.value(QStringLiteral("seed_source")).toString(), QStringLiteral("drawn"));
        const QString seed = seedOf(result.out);
        QVERIFY2(!seed.isEmpty() && seed != QStringLiteral("0"), qPrintable(result.out));
        drawn.push_back(seed);
        const QJsonObject made = report(json.value(QStringLiteral("run_id")).toInteger());
        const QJsonObject replay = made.value(QStringLiteral("replay")).toObject();
        QCOMPARE(replay.value(QStringLiteral("seed_source")).toString(), QStringLiteral("drawn"));
        QVERIFY2(replay.value(QStringLiteral("redo_command")).toString().contains(QStringLiteral("--seed ") + seed + QStringLiteral(" ")),
                 qPrintable(replay.value(QStringLiteral("redo_command")).toString()));
        const QString sentence = made.value(QStringLiteral("sampling")).toObject().value(QStringLiteral("sentence")).toString();
        QVERIFY2(sentence.contains(QStringLiteral("The seed ") + seed + QStringLiteral(" was drawn from the operating system")) &&
                     sentence.contains(QStringLiteral("the trainer could not know")),
                 qPrintable(sentence));
    }
    QVERIFY2(drawn[0] != drawn[1], qPrintable(drawn[0]));

    // Text output names the seed and that it was drawn.
    result = runAudit({QStringLiteral("replay"), seedCase, QStringLiteral("--select"), QStringLiteral("random:4"), QStringLiteral("--quiet")});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    const QRegularExpressionMatch printed = QRegularExpression(QStringLiteral("seed (\\d+) \\(drawn at audit time\\)")).match(result.out);
    QVERIFY2(printed.hasMatch(), qPrintable(result.describe()));
    drawn.push_back(printed.captured(1));
    QVERIFY(drawn[2] != drawn[0] && drawn[2] != drawn[1]);

    // A given seed is the auditor's, and the report says the bound rests on the trainer not knowing it.
    result = runAudit({QStringLiteral("replay"), seedCase, QStringLiteral("--select"), QStringLiteral("random:4"), QStringLiteral("--seed"),
                       QStringLiteral("5"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("seed_source")).toString(), QStringLiteral("given"));
    QCOMPARE(seedOf(result.out), QStringLiteral("5"));
    const QJsonObject given = report(json.value(QStringLiteral("run_id")).toInteger());
    QCOMPARE(given.value(QStringLiteral("replay")).toObject().value(QStringLiteral("seed_source")).toString(), QStringLiteral("given"));
    const QString sentence = given.value(QStringLiteral("sampling")).toObject().value(QStringLiteral("sentence")).toString();
    QVERIFY2(sentence.contains(QStringLiteral("The auditor chose seed 5")) &&
                 sentence.contains(QStringLiteral("the bound holds only if the trainer could not know 5")),
             qPrintable(sentence));

    // Stored with each run: info lists every seed with its source.
    result = runAudit({QStringLiteral("info"), seedCase, QStringLiteral("--json")});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    const QJsonArray runs = jsonObject(result.out).value(QStringLiteral("replay_runs")).toArray();
    QCOMPARE(runs.size(), 4);
    QStringList sources;
    for (const QJsonValue& run : runs)
        sources << run.toObject().value(QStringLiteral("seed_source")).toString();
    QCOMPARE(sources, (QStringList{QStringLiteral("given"), QStringLiteral("drawn"), QStringLiteral("drawn"), QStringLiteral("drawn")}));
    for (const QString& seed : drawn)
        QVERIFY2(result.out.contains(QStringLiteral("\"seed\": ") + seed + QStringLiteral(",")), qPrintable(seed));
    result = runAudit({QStringLiteral("info"), seedCase});
    QVERIFY2(result.out.contains(QStringLiteral("seed ") + drawn[0] + QStringLiteral(" (drawn)")) &&
                 result.out.contains(QStringLiteral("seed 5 (given)")),
             qPrintable(result.describe()));
}

// "Another CPU" by its kernel settings: the trainer's torch ran its baseline kernels
// (ATEN_CPU_CAPABILITY=default, as on a CPU without AVX2), the auditor's shell has none. The
// replay's workers run the training's settings (--kernels recorded, the default), so the
// environments are the same and every transaction is bit for bit; with the auditor's own
// kernels (--kernels host) the run says the environments differ and judges accordingly.
void TestCli::replayRunsTheTrainingsKernels()
{
    const QString tape = path("capped.zkdv"), replayCase = path("capped.zkaudit");
    QProcessEnvironment capped = QProcessEnvironment::systemEnvironment();
    capped.insert(QStringLiteral("ATEN_CPU_CAPABILITY"), QStringLiteral("default"));
    QProcessEnvironment auditor = QProcessEnvironment::systemEnvironment();
    auditor.remove(QStringLiteral("ATEN_CPU_CAPABILITY"));
    Result result = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), tape, QStringLiteral("--steps"), QStringLiteral("12"),
                              QStringLiteral("--quiet")},
                             capped);
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    result = runAudit({QStringLiteral("info"), tape, QStringLiteral("--json"), QStringLiteral("--quiet")}, auditor);
    const QJsonObject numerics = jsonObject(result.out).value(QStringLiteral("root")).toObject().value(QStringLiteral("numerics")).toObject();
    QVERIFY2(numerics.value(QStringLiteral("settings")).toObject().value(QStringLiteral("ATEN_CPU_CAPABILITY")).toString() ==
                 QStringLiteral("default"),
             qPrintable(result.describe()));
    // torch 1.13 names the baseline "NO AVX", later releases "DEFAULT".
    const QString level = numerics.value(QStringLiteral("torch_cpu_capability")).toString();
    QVERIFY2(level == QStringLiteral("DEFAULT") || level == QStringLiteral("NO AVX"), qPrintable(level));
    result = runAudit({QStringLiteral("ingest"), tape, QStringLiteral("--case"), replayCase, QStringLiteral("--quiet")}, auditor);
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));

    result = runAudit({QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--json"),
                       QStringLiteral("--quiet")},
                      auditor);
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("numeric_regime")).toString(), QStringLiteral("same-environment"));
    QCOMPARE(json.value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("exact")).toInt(), 12);
    const QJsonObject profile = json.value(QStringLiteral("kernel_profile")).toObject();
    QCOMPARE(profile.value(QStringLiteral("choice")).toString(), QStringLiteral("recorded"));
    QCOMPARE(profile.value(QStringLiteral("variables")).toObject().value(QStringLiteral("ATEN_CPU_CAPABILITY")).toString(),
             QStringLiteral("default"));

    result = runAudit({QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--kernels"),
                       QStringLiteral("host"), QStringLiteral("--json"), QStringLiteral("--quiet")},
                      auditor);
    QVERIFY2(!result.crashed, qPrintable(result.describe()));
    json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("kernel_profile")).toObject().value(QStringLiteral("choice")).toString(), QStringLiteral("host"));
    QCOMPARE(json.value(QStringLiteral("numeric_regime")).toString(), QStringLiteral("cross-environment"));
    QVERIFY2(json.value(QStringLiteral("numeric_regime_reason")).toString().contains(QStringLiteral("settings.ATEN_CPU_CAPABILITY")),
             qPrintable(result.describe()));
    QCOMPARE(json.value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("diverged")).toInt(), 0);

    // The report names the settings the workers ran and redoes the replay with the same choice.
    const QString reportPath = path("capped-report.json");
    result = runAudit({QStringLiteral("report"), replayCase, QStringLiteral("--out"), reportPath, QStringLiteral("--quiet")}, auditor);
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    QFile reportFile(reportPath);
    QVERIFY(reportFile.open(QIODevice::ReadOnly));
    const QJsonObject replay = jsonObject(QString::fromUtf8(reportFile.readAll())).value(QStringLiteral("replay")).toObject();
    QCOMPARE(replay.value(QStringLiteral("kernel_profile")).toString(), QStringLiteral("host"));
    QVERIFY2(replay.value(QStringLiteral("redo_command")).toString().endsWith(QStringLiteral(" --kernels host")),
             qPrintable(replay.value(QStringLiteral("redo_command")).toString()));

    result = runAudit({QStringLiteral("replay"), replayCase, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--kernels"),
                       QStringLiteral("mine")},
                      auditor);
    QVERIFY2(!result.crashed && result.exitCode == 2 && result.err.contains(QStringLiteral("--kernels")), qPrintable(result.describe()));
}

void TestCli::libtorchLoadsOnlyForDemoAndReplay()
{
    // libtorch's static initialisation costs most of a second, so of these only demo (in the
    // zkdv-audit-torch module) may load it; replay loads it only in its worker processes
    // (test_contained_replay checks that). The dynamic loader lists every file it loads under
    // LD_DEBUG=files; demo must appear there too, or the list was not read.
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("LD_DEBUG"), QStringLiteral("files"));
    const QString casePath = path("libtorch-at-start.zkaudit");
    const QString tape = path("libtorch-at-start.zkdv");
    const QList<std::pair<QStringList, bool>> commands = {
        {{QStringLiteral("--help")}, false},
        {{QStringLiteral("--version")}, false},
        {{QStringLiteral("verify"), expand(QStringLiteral("{good}")), QStringLiteral("--quiet")}, false},
        {{QStringLiteral("ingest"), expand(QStringLiteral("{good}")), QStringLiteral("--case"), casePath, QStringLiteral("--quiet")}, false},
        {{QStringLiteral("info"), casePath}, false},
        {{QStringLiteral("demo"), QStringLiteral("--synthetic"), QStringLiteral("--steps"), QStringLiteral("5"), QStringLiteral("--out"), tape,
          QStringLiteral("--quiet")},
         true},
    };
    for (const auto& [arguments, loadsTorch] : commands) {
        const Result result = runAudit(arguments, environment);
        const QString command = arguments.join(QLatin1Char(' '));
        QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(command + QStringLiteral(": exit %1, stdout: ").arg(result.exitCode) + result.out.left(300)));
        const qsizetype at = result.err.indexOf(QStringLiteral("libtorch"));
        const QString line = at < 0 ? QString() : result.err.mid(std::max<qsizetype>(0, result.err.lastIndexOf(QLatin1Char('\n'), at)), 160);
        QVERIFY2((at >= 0) == loadsTorch, qPrintable(command + (loadsTorch ? QStringLiteral(": libtorch not loaded") : QStringLiteral(": ") + line)));
    }
}

void TestCli::signedTapesVerifyAgainstTrustedKeys()
{
    // Its own config folder: the user's keyring is not read.
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    const QString config = path("config");
    environment.insert(QStringLiteral("ZKDV_CONFIG_HOME"), config);
    auto audit = [&](const QStringList& arguments) { return runAudit(arguments, environment); };

    for (const QString algorithm : {QStringLiteral("ecdsa-p256"), QStringLiteral("ed25519")}) {
        const QString key = path("trainer-" + algorithm.toStdString() + ".pem");
        const Result made = audit({QStringLiteral("keygen"), QStringLiteral("--out"), key, QStringLiteral("--algorithm"), algorithm, QStringLiteral("--json")});
        QVERIFY2(!made.crashed && made.exitCode == 0, qPrintable(made.describe()));
        const QString keyId = jsonObject(made.out).value(QStringLiteral("key_id")).toString();
        QCOMPARE(keyId.size(), 64);
        QCOMPARE(QFileInfo(key).permissions() & (QFileDevice::ReadGroup | QFileDevice::ReadOther | QFileDevice::WriteGroup | QFileDevice::WriteOther),
                 QFileDevice::Permissions());
        QFile privateKey(key);
        QVERIFY(privateKey.open(QIODevice::ReadOnly));
        const QByteArray secret = privateKey.readAll().split('\n').value(1);  // the key's first base64 line
        QVERIFY(!secret.isEmpty());
        // A key is never replaced.
        const Result again = audit({QStringLiteral("keygen"), QStringLiteral("--out"), key});
        QVERIFY2(!again.crashed && again.exitCode == 2 && again.err.contains(QStringLiteral("never replaced")), qPrintable(again.describe()));

        const QString tape = path("signed-" + algorithm.toStdString() + ".zkdv");
        const Result recorded = audit({QStringLiteral("demo"), QStringLiteral("--out"), tape, QStringLiteral("--steps"), QStringLiteral("3"),
                                       QStringLiteral("--batch-size"), QStringLiteral("4"), QStringLiteral("--signing-key"), key, QStringLiteral("--quiet")});
        QVERIFY2(!recorded.crashed && recorded.exitCode == 0, qPrintable(recorded.describe()));

        // Signed by a key nobody trusts: a warning; a failure when a trusted key is required.
        const Result unknown = audit({QStringLiteral("verify"), tape, QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY2(!unknown.crashed && unknown.exitCode == 0 && unknown.err.contains(QStringLiteral("not trusted")), qPrintable(unknown.describe()));
        QCOMPARE(jsonObject(unknown.out).value(QStringLiteral("signature_trust")).toString(), QStringLiteral("unknown-key"));
        QCOMPARE(jsonObject(unknown.out).value(QStringLiteral("signer")).toObject().value(QStringLiteral("key_id")).toString(), keyId);
        const Result required = audit({QStringLiteral("verify"), tape, QStringLiteral("--require-trusted"), QStringLiteral("--quiet")});
        QVERIFY2(!required.crashed && required.exitCode == 1, qPrintable(required.describe()));

        const Result trusted = audit({QStringLiteral("verify"), tape, QStringLiteral("--trusted-key"), key + QStringLiteral(".pub"),
                                      QStringLiteral("--require-trusted"), QStringLiteral("--json"), QStringLiteral("--quiet")});
        QVERIFY2(!trusted.crashed && trusted.exitCode == 0, qPrintable(trusted.describe()));
        QCOMPARE(jsonObject(trusted.out).value(QStringLiteral("signature_trust")).toString(), QStringLiteral("trusted"));
        for (const Result* result : {&made, &recorded, &unknown, &required, &trusted})
            QVERIFY2(!result->all().toUtf8().contains(secret) && !result->all().contains(QStringLiteral("PRIVATE KEY")), qPrintable(result->describe()));
    }

    // A key in the keyring folder is trusted without naming it.
    QVERIFY(QDir().mkpath(config + QStringLiteral("/trainer-keys")));
    QVERIFY(QFile::copy(path("trainer-ed25519.pem.pub"), config + QStringLiteral("/trainer-keys/alice.pem")));
    const Result fromKeyring = audit({QStringLiteral("verify"), path("signed-ed25519.zkdv"), QStringLiteral("--require-trusted"), QStringLiteral("--quiet")});
    QVERIFY2(!fromKeyring.crashed && fromKeyring.exitCode == 0 && fromKeyring.out.contains(QStringLiteral("trusted (")), qPrintable(fromKeyring.describe()));
    const Result otherKey = audit({QStringLiteral("verify"), path("signed-ecdsa-p256.zkdv"), QStringLiteral("--require-trusted"), QStringLiteral("--quiet")});
    QVERIFY2(!otherKey.crashed && otherKey.exitCode == 1, qPrintable(otherKey.describe()));

    // An unsigned tape, a trusted key required: fails. A key file that is not a key: usage.
    const Result unsignedTape = audit({QStringLiteral("verify"), expand(QStringLiteral("{good}")), QStringLiteral("--require-trusted"), QStringLiteral("--quiet")});
    QVERIFY2(!unsignedTape.crashed && unsignedTape.exitCode == 1 && unsignedTape.err.contains(QStringLiteral("not signed")), qPrintable(unsignedTape.describe()));
    const Result notAKey = audit({QStringLiteral("verify"), expand(QStringLiteral("{good}")), QStringLiteral("--trusted-key"), expand(QStringLiteral("{text}"))});
    QVERIFY2(!notAKey.crashed && notAKey.exitCode == 2 && notAKey.err.contains(QStringLiteral("notes.txt")), qPrintable(notAKey.describe()));
}

// A forger who cannot sign with the trainer's key can strip the signature instead: where the
// keyring holds keys, an unsigned tape is warned of as loudly as a forger's key, and
// --require-trusted holds on report and replay as on verify.
void TestCli::strippingASignatureReadsNoBetterThanForgingIt()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    const QString config = path("strip-config");
    environment.insert(QStringLiteral("ZKDV_CONFIG_HOME"), config);
    auto audit = [&](const QStringList& arguments) { return runAudit(arguments, environment); };
    const QString trainer = path("strip-trainer.pem"), forger = path("strip-forger.pem");
    for (const QString& key : {trainer, forger})
        QCOMPARE(audit({QStringLiteral("keygen"), QStringLiteral("--out"), key, QStringLiteral("--algorithm"), QStringLiteral("ed25519")}).exitCode, 0);
    // The same training signed by the trainer, by the forger, and by nobody (what a stripped tape reads as).
    const std::vector<std::pair<QString, QString>> signers = {{QStringLiteral("trusted"), trainer}, {QStringLiteral("forged"), forger},
                                                              {QStringLiteral("unsigned"), QString()}};
    auto tape = [&](const QString& name) { return path("strip-" + name.toStdString() + ".zkdv"); };
    auto casePath = [&](const QString& name) { return path("strip-" + name.toStdString() + ".zkaudit"); };
    for (const auto& [name, key] : signers) {
        QStringList arguments = {QStringLiteral("demo"), QStringLiteral("--out"), tape(name), QStringLiteral("--steps"), QStringLiteral("3"),
                                 QStringLiteral("--batch-size"), QStringLiteral("4"), QStringLiteral("--quiet")};
        if (!key.isEmpty())
            arguments << QStringLiteral("--signing-key") << key;
        const Result made = audit(arguments);
        QVERIFY2(!made.crashed && made.exitCode == 0, qPrintable(made.describe()));
    }

    // An empty keyring expects no signature: unsigned, no warning.
    const Result nothingExpected = audit({QStringLiteral("verify"), tape(QStringLiteral("unsigned")), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!nothingExpected.crashed && nothingExpected.exitCode == 0 && !nothingExpected.err.contains(QStringLiteral("not signed")),
             qPrintable(nothingExpected.describe()));
    QCOMPARE(jsonObject(nothingExpected.out).value(QStringLiteral("signature_trust")).toString(), QStringLiteral("unsigned"));
    // A key named on the command line, or one in the keyring folder: a signature is expected.
    const Result named = audit({QStringLiteral("verify"), tape(QStringLiteral("unsigned")), QStringLiteral("--trusted-key"),
                                trainer + QStringLiteral(".pub"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!named.crashed && named.exitCode == 0 && named.err.contains(QStringLiteral("warning: the tape is not signed")), qPrintable(named.describe()));
    QCOMPARE(jsonObject(named.out).value(QStringLiteral("signature_trust")).toString(), QStringLiteral("unsigned-expected"));
    QVERIFY(QDir().mkpath(config + QStringLiteral("/trainer-keys")));
    QVERIFY(QFile::copy(trainer + QStringLiteral(".pub"), config + QStringLiteral("/trainer-keys/trainer.pem")));
    const Result text = audit({QStringLiteral("verify"), tape(QStringLiteral("unsigned")), QStringLiteral("--quiet")});
    QVERIFY2(!text.crashed && text.exitCode == 0 && text.err.contains(QStringLiteral("warning: the tape is not signed")) &&
                 text.out.contains(QStringLiteral("signed: no, though your trainer keyring expects a signature")),
             qPrintable(text.describe()));
    const Result forgedText = audit({QStringLiteral("verify"), tape(QStringLiteral("forged")), QStringLiteral("--quiet")});
    QVERIFY2(!forgedText.crashed && forgedText.exitCode == 0 && forgedText.err.contains(QStringLiteral("warning: the tape is signed by a key that is not trusted")),
             qPrintable(forgedText.describe()));
    // info says it too, of the tape and of a case holding it.
    const Result info = audit({QStringLiteral("info"), tape(QStringLiteral("unsigned")), QStringLiteral("--quiet")});
    QVERIFY2(!info.crashed && info.exitCode == 0 && info.err.contains(QStringLiteral("not signed")) &&
                 info.out.contains(QStringLiteral("Unsigned, though your trainer keyring expects a signature")),
             qPrintable(info.describe()));
    const Result infoJson = audit({QStringLiteral("info"), tape(QStringLiteral("unsigned")), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QCOMPARE(jsonObject(infoJson.out).value(QStringLiteral("tape")).toObject().value(QStringLiteral("signature_trust")).toString(),
             QStringLiteral("unsigned-expected"));

    for (const auto& [name, key] : signers) {
        const Result ingested = audit({QStringLiteral("ingest"), tape(name), QStringLiteral("--case"), casePath(name), QStringLiteral("--quiet")});
        QVERIFY2(!ingested.crashed && ingested.exitCode == 0, qPrintable(ingested.describe()));
    }
    const Result caseInfo = audit({QStringLiteral("info"), casePath(QStringLiteral("unsigned")), QStringLiteral("--json")});
    QVERIFY2(caseInfo.exitCode == 0 && caseInfo.err.contains(QStringLiteral("not signed")), qPrintable(caseInfo.describe()));
    QCOMPARE(jsonObject(caseInfo.out).value(QStringLiteral("tapes")).toArray().at(0).toObject().value(QStringLiteral("signature_trust")).toString(),
             QStringLiteral("unsigned-expected"));

    // replay --require-trusted: refuses before replaying a tape no trusted key signed, nothing stored.
    auto replay = [&](const QString& name, const QStringList& more) {
        return audit(QStringList{QStringLiteral("replay"), casePath(name), QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--quiet"),
                                 QStringLiteral("--time-budget-floor"), QStringLiteral("120")} +
                     more);
    };
    for (const auto& [name, why] : {std::pair{QStringLiteral("unsigned"), QStringLiteral("not signed")},
                                    std::pair{QStringLiteral("forged"), QStringLiteral("not trusted")}}) {
        const Result refused = replay(name, {QStringLiteral("--require-trusted")});
        QVERIFY2(!refused.crashed && refused.exitCode == 1 && refused.err.contains(QStringLiteral("refusing to replay")) && refused.err.contains(why),
                 qPrintable(refused.describe()));
        const Result runs = audit({QStringLiteral("info"), casePath(name), QStringLiteral("--json")});
        QCOMPARE(jsonObject(runs.out).value(QStringLiteral("replay_runs")).toArray().size(), qsizetype(0));
        // Without the requirement the replay runs (and passes: the training is honest), so there is a run to report on.
        const Result replayed = replay(name, {});
        QVERIFY2(!replayed.crashed && replayed.exitCode == 0, qPrintable(replayed.describe()));
    }
    const Result trustedReplay = replay(QStringLiteral("trusted"), {QStringLiteral("--require-trusted")});
    QVERIFY2(!trustedReplay.crashed && trustedReplay.exitCode == 0, qPrintable(trustedReplay.describe()));

    // report --require-trusted: written, NOT VERIFIED and exit 1 without a trusted signer; PASSED with one.
    auto report = [&](const QString& name, const QStringList& more, int exitCode) {
        const QString out = path("strip-" + name.toStdString() + "-report.json");
        const Result written = audit(QStringList{QStringLiteral("report"), casePath(name), QStringLiteral("-o"), out} + more);
        [&] { QVERIFY2(!written.crashed && written.exitCode == exitCode, qPrintable(written.describe())); }();
        QFile file(out);
        return file.open(QIODevice::ReadOnly) ? jsonObject(file.readAll()) : QJsonObject();
    };
    auto outcome = [](const QJsonObject& r) { return r.value(QStringLiteral("conclusion")).toObject().value(QStringLiteral("outcome")).toString(); };
    auto warned = [](const QJsonObject& r, const QString& what) {
        for (const QJsonValue& warning : r.value(QStringLiteral("conclusion")).toObject().value(QStringLiteral("warnings")).toArray())
            if (warning.toString().contains(what))
                return true;
        return false;
    };
    const QJsonObject unsignedWarned = report(QStringLiteral("unsigned"), {}, 0);
    QCOMPARE(outcome(unsignedWarned), QStringLiteral("PASSED"));
    QVERIFY(warned(unsignedWarned, QStringLiteral("The tape is not signed, though the trainer keyring holds keys")));
    QCOMPARE(unsignedWarned.value(QStringLiteral("tape")).toObject().value(QStringLiteral("signature")).toObject().value(QStringLiteral("trust")).toString(),
             QStringLiteral("unsigned-expected"));
    for (const QString name : {QStringLiteral("unsigned"), QStringLiteral("forged")}) {
        const QJsonObject required = report(name, {QStringLiteral("--require-trusted")}, 1);
        QCOMPARE(outcome(required), QStringLiteral("NOT VERIFIED"));
        QCOMPARE(required.value(QStringLiteral("conclusion")).toObject().value(QStringLiteral("passed")).toBool(true), false);
        QVERIFY(warned(required, QStringLiteral("requires a trusted signer")));
    }
    QCOMPARE(outcome(report(QStringLiteral("trusted"), {QStringLiteral("--require-trusted")}, 0)), QStringLiteral("PASSED"));
    // --trusted-key is read by report as by verify: the forger's key, named, is trusted.
    QCOMPARE(outcome(report(QStringLiteral("forged"), {QStringLiteral("--require-trusted"), QStringLiteral("--trusted-key"), forger + QStringLiteral(".pub")}, 0)),
             QStringLiteral("PASSED"));
}

void TestCli::aSignedVerdictVerifiesForItsTapeAndKeyOnly()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("ZKDV_CONFIG_HOME"), path("verdict-config"));
    auto audit = [&](const QStringList& arguments) { return runAudit(arguments, environment); };
    // A replayed CNN tape (its verdicts PASSED), and another sealed tape.
    const QString tape = path("verdict.zkdv"), other = path("verdict-other.zkdv"), casePath = path("verdict.zkaudit");
    for (const auto& [file, seed] : {std::pair{tape, QStringLiteral("5")}, std::pair{other, QStringLiteral("6")}}) {
        const Result made = audit({QStringLiteral("demo"), QStringLiteral("--out"), file, QStringLiteral("--steps"), QStringLiteral("4"),
                                   QStringLiteral("--batch-size"), QStringLiteral("4"), QStringLiteral("--seed"), seed, QStringLiteral("--quiet")});
        QVERIFY2(!made.crashed && made.exitCode == 0, qPrintable(made.describe()));
    }
    QCOMPARE(audit({QStringLiteral("ingest"), tape, QStringLiteral("--case"), casePath, QStringLiteral("--quiet")}).exitCode, 0);
    const Result replayed = audit({QStringLiteral("replay"), casePath, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--quiet"),
                                   QStringLiteral("--time-budget-floor"), QStringLiteral("120")});
    QVERIFY2(!replayed.crashed && replayed.exitCode == 0, qPrintable(replayed.describe()));
    const QString auditor = path("auditor.pem"), stranger = path("stranger.pem");
    QCOMPARE(audit({QStringLiteral("keygen"), QStringLiteral("--out"), auditor, QStringLiteral("--algorithm"), QStringLiteral("ed25519")}).exitCode, 0);
    QCOMPARE(audit({QStringLiteral("keygen"), QStringLiteral("--out"), stranger}).exitCode, 0);

    const QString attestation = path("verdict.intoto.json");
    const Result attested = audit({QStringLiteral("report"), casePath, QStringLiteral("--attest"), auditor, QStringLiteral("-o"), attestation});
    QVERIFY2(!attested.crashed && attested.exitCode == 0 && attested.out.contains(QStringLiteral("PASSED")), qPrintable(attested.describe()));
    QFile file(attestation);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject bundle = jsonObject(file.readAll());
    QCOMPARE(bundle.value(QStringLiteral("mediaType")).toString(), QStringLiteral("application/vnd.dev.sigstore.bundle.v0.3+json"));
    const QJsonObject envelope = bundle.value(QStringLiteral("dsseEnvelope")).toObject();
    const QJsonObject statement = jsonObject(QByteArray::fromBase64(envelope.value(QStringLiteral("payload")).toString().toLatin1()));
    QCOMPARE(statement.value(QStringLiteral("predicateType")).toString(), QStringLiteral("https://slsa.dev/verification_summary/v1"));
    QCOMPARE(statement.value(QStringLiteral("predicate")).toObject().value(QStringLiteral("verificationResult")).toString(), QStringLiteral("PASSED"));

    auto verify = [&](const QString& bundlePath, const QString& key, const QStringList& more = {}) {
        return audit(QStringList{QStringLiteral("verify-attestation"), bundlePath, QStringLiteral("--trusted-key"), key + QStringLiteral(".pub")} + more);
    };
    const Result good = verify(attestation, auditor, {QStringLiteral("--tape"), tape, QStringLiteral("--require-passed"), QStringLiteral("--json")});
    QVERIFY2(!good.crashed && good.exitCode == 0, qPrintable(good.describe()));
    QCOMPARE(jsonObject(good.out).value(QStringLiteral("verification_result")).toString(), QStringLiteral("PASSED"));
    // Another tape, another key: not this verdict.
    const Result otherTape = verify(attestation, auditor, {QStringLiteral("--tape"), other});
    QVERIFY2(!otherTape.crashed && otherTape.exitCode == 1 && otherTape.err.contains(QStringLiteral("another tape")), qPrintable(otherTape.describe()));
    const Result otherKey = verify(attestation, stranger);
    QVERIFY2(!otherKey.crashed && otherKey.exitCode == 1 && otherKey.err.contains(QStringLiteral("no trusted key")), qPrintable(otherKey.describe()));
    // The verdict turned in the statement: the signature no longer holds.
    QJsonObject forgedStatement = statement;
    QJsonObject predicate = forgedStatement.value(QStringLiteral("predicate")).toObject();
    predicate.insert(QStringLiteral("verificationResult"), QStringLiteral("FAILED"));
    forgedStatement.insert(QStringLiteral("predicate"), predicate);
    QJsonObject forgedEnvelope = envelope;
    forgedEnvelope.insert(QStringLiteral("payload"), QString::fromLatin1(QJsonDocument(forgedStatement).toJson(QJsonDocument::Compact).toBase64()));
    QJsonObject forgedBundle = bundle;
    forgedBundle.insert(QStringLiteral("dsseEnvelope"), forgedEnvelope);
    const QString forged = path("forged.intoto.json");
    QFile forgedFile(forged);
    QVERIFY(forgedFile.open(QIODevice::WriteOnly));
    forgedFile.write(QJsonDocument(forgedBundle).toJson());
    forgedFile.close();
    const Result forgedResult = verify(forged, auditor);
    QVERIFY2(!forgedResult.crashed && forgedResult.exitCode == 1, qPrintable(forgedResult.describe()));
    // Not an attestation, and no key: exit 2.
    const Result notOne = verify(expand(QStringLiteral("{text}")), auditor);
    QVERIFY2(!notOne.crashed && notOne.exitCode == 2, qPrintable(notOne.describe()));
    const Result noKey = audit({QStringLiteral("verify-attestation"), attestation});
    QVERIFY2(!noKey.crashed && noKey.exitCode == 2 && noKey.err.contains(QStringLiteral("--trusted-key")), qPrintable(noKey.describe()));
    QVERIFY(!good.all().contains(QStringLiteral("PRIVATE KEY")) && !attested.all().contains(QStringLiteral("PRIVATE KEY")));
}

void TestCli::aDetachedSignatureBesideATapeIsChecked()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("ZKDV_CONFIG_HOME"), path("detached-config"));
    auto audit = [&](const QStringList& arguments) { return runAudit(arguments, environment); };
    const QString key = path("detached.pem"), tape = path("detached.zkdv");
    QCOMPARE(audit({QStringLiteral("keygen"), QStringLiteral("--out"), key}).exitCode, 0);
    QVERIFY(QFile::copy(expand(QStringLiteral("{good}")), tape));

    const Result signedTape = audit({QStringLiteral("sign"), tape, QStringLiteral("--key"), key, QStringLiteral("--json")});
    QVERIFY2(!signedTape.crashed && signedTape.exitCode == 0, qPrintable(signedTape.describe()));
    QCOMPARE(jsonObject(signedTape.out).value(QStringLiteral("signature")).toString(), tape + QStringLiteral(".sig"));
    QVERIFY(QFileInfo::exists(tape + QStringLiteral(".sig")));
    const Result again = audit({QStringLiteral("sign"), tape, QStringLiteral("--key"), key});
    QVERIFY2(!again.crashed && again.exitCode == 2 && again.err.contains(QStringLiteral("--overwrite")), qPrintable(again.describe()));

    // Found beside the tape: trusted with the signer's key, which an unsigned seal does not need.
    const Result trusted = audit({QStringLiteral("verify"), tape, QStringLiteral("--trusted-key"), key + QStringLiteral(".pub"),
                                  QStringLiteral("--require-trusted"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!trusted.crashed && trusted.exitCode == 0, qPrintable(trusted.describe()));
    const QJsonObject detached = jsonObject(trusted.out).value(QStringLiteral("detached_signature")).toObject();
    QCOMPARE(detached.value(QStringLiteral("signature_trust")).toString(), QStringLiteral("trusted"));
    QCOMPARE(detached.value(QStringLiteral("valid")).toBool(), true);
    QCOMPARE(jsonObject(trusted.out).value(QStringLiteral("signature_trust")).toString(), QStringLiteral("trusted"));
    // Without the key it proves nothing: a warning, a failure when a trusted key is required.
    const Result unknown = audit({QStringLiteral("verify"), tape, QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!unknown.crashed && unknown.exitCode == 0 && unknown.err.contains(QStringLiteral("not trusted")), qPrintable(unknown.describe()));
    QCOMPARE(jsonObject(unknown.out).value(QStringLiteral("detached_signature")).toObject().value(QStringLiteral("signature_trust")).toString(),
             QStringLiteral("unknown-key"));
    QCOMPARE(audit({QStringLiteral("verify"), tape, QStringLiteral("--require-trusted"), QStringLiteral("--quiet")}).exitCode, 1);

    // Another file's bundle, and a file that is no bundle, fail the check and say why.
    const QString foreign = QStringLiteral(ZKDV_TEST_DATA_DIR "/model_signing/weights.bin.sig");
    const Result other = audit({QStringLiteral("verify"), tape, QStringLiteral("--signature"), foreign, QStringLiteral("--trusted-key"),
                                key + QStringLiteral(".pub"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!other.crashed && other.exitCode == 1 && other.err.contains(QStringLiteral("other content")), qPrintable(other.describe()));
    QCOMPARE(jsonObject(other.out).value(QStringLiteral("detached_signature")).toObject().value(QStringLiteral("valid")).toBool(), false);
    const Result garbage = audit({QStringLiteral("verify"), tape, QStringLiteral("--signature"), expand(QStringLiteral("{text}")), QStringLiteral("--quiet")});
    QVERIFY2(!garbage.crashed && garbage.exitCode == 1 && garbage.err.contains(QStringLiteral("detached signature")), qPrintable(garbage.describe()));
    // A signature named but missing cannot be read: exit 2.
    const Result missing = audit({QStringLiteral("verify"), tape, QStringLiteral("--signature"), path("nowhere.sig"), QStringLiteral("--quiet")});
    QVERIFY2(!missing.crashed && missing.exitCode == 2 && missing.err.contains(QStringLiteral("nowhere.sig")), qPrintable(missing.describe()));
    for (const Result* result : {&signedTape, &trusted, &unknown, &other})
        QVERIFY2(!result->all().contains(QStringLiteral("PRIVATE KEY")), qPrintable(result->describe()));
}

void TestCli::planSplitsASelectionIntoWholeSegments()
{
    const QString casePath = path("plan.zkaudit");
    QCOMPARE(runAudit({QStringLiteral("ingest"), expand(QStringLiteral("{good}")), QStringLiteral("--case"), casePath, QStringLiteral("--quiet")}).exitCode, 0);
    const QStringList plan = {QStringLiteral("plan"), casePath, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--seed"),
                              QStringLiteral("7"), QStringLiteral("--shards"), QStringLiteral("2"), QStringLiteral("--json")};
    const Result planned = runAudit(plan);
    QVERIFY2(!planned.crashed && planned.exitCode == 0, qPrintable(planned.describe()));
    const QJsonObject out = jsonObject(planned.out);
    QCOMPARE(out.value(QStringLiteral("selected")).toInt(), kSteps);
    // Every segment in one shard, each whole: the snapshots cover the tape once.
    QSet<int> snapshots;
    int replayed = 0;
    for (const QJsonValue shard : out.value(QStringLiteral("shards")).toArray()) {
        replayed += shard.toObject().value(QStringLiteral("replayed")).toInt();
        for (const QJsonValue segment : shard.toObject().value(QStringLiteral("segments")).toArray()) {
            const int snapshot = segment.toObject().value(QStringLiteral("snapshot")).toInt();
            QVERIFY2(!snapshots.contains(snapshot), qPrintable(planned.out));
            snapshots.insert(snapshot);
        }
    }
    QCOMPARE(replayed, kSteps);
    QCOMPARE(snapshots.size(), out.value(QStringLiteral("segments")).toInt());
    QCOMPARE(runAudit(plan).out, planned.out);  // the same plan again
    // Without a seed the shards could draw different selections: refused.
    const Result seedless = runAudit({QStringLiteral("plan"), casePath, QStringLiteral("--select"), QStringLiteral("random:5"), QStringLiteral("--shards"), QStringLiteral("2")});
    QVERIFY2(!seedless.crashed && seedless.exitCode == 2 && seedless.err.contains(QStringLiteral("--seed")), qPrintable(seedless.describe()));
    const Result zero = runAudit({QStringLiteral("plan"), casePath, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--seed"),
                                  QStringLiteral("1"), QStringLiteral("--shards"), QStringLiteral("0")});
    QVERIFY2(!zero.crashed && zero.exitCode == 2, qPrintable(zero.describe()));
}

// Issue 48, the outcome ladder: PASSED means bit for bit. The last transaction's loss altered
// by two ulps (an edit within the default tolerance, re-chained as a forger would) reads
// CONSISTENT WITHIN ROUNDING in the replay's words and JSON, the report, info and the signed
// verdict — an excuse buys at most that word, never PASSED — and FAILED with --tolerance exact.
void TestCli::aPassRestingOnAToleranceIsNeverPassed()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("ZKDV_CONFIG_HOME"), path("ladder-config"));
    auto audit = [&](const QStringList& arguments) { return runAudit(arguments, environment); };
    const QString honest = path("ladder-honest.zkdv"), edited = path("ladder.zkdv"), casePath = path("ladder.zkaudit");
    const Result made = audit({QStringLiteral("demo"), QStringLiteral("--out"), honest, QStringLiteral("--steps"), QStringLiteral("4"),
                               QStringLiteral("--batch-size"), QStringLiteral("4"), QStringLiteral("--seed"), QStringLiteral("9"), QStringLiteral("--quiet")});
    QVERIFY2(!made.crashed && made.exitCode == 0, qPrintable(made.describe()));
    test::rewriteTape(honest.toStdString(), edited.toStdString(), [](test::RawRecord& record) {
        if (test::isTransaction(record, 3))
            test::scaleElement(record, "loss", 0, 1.0000002f);
    });
    QCOMPARE(audit({QStringLiteral("verify"), edited, QStringLiteral("--quiet")}).exitCode, 0);
    QCOMPARE(audit({QStringLiteral("ingest"), edited, QStringLiteral("--case"), casePath, QStringLiteral("--quiet")}).exitCode, 0);
    const QStringList replayAll{QStringLiteral("replay"), casePath, QStringLiteral("--select"), QStringLiteral("all"),
                                QStringLiteral("--time-budget-floor"), QStringLiteral("120")};
    const Result text = audit(replayAll + QStringList{QStringLiteral("--quiet")});
    QVERIFY2(!text.crashed && text.exitCode == 0 && text.out.contains(QStringLiteral(": consistent within rounding — ")) &&
                 !text.out.contains(QStringLiteral(": passed — ")),
             qPrintable(text.describe()));
    const Result json = audit(replayAll + QStringList{QStringLiteral("--json"), QStringLiteral("--quiet")});
    const QJsonObject summary = jsonObject(json.out);
    QCOMPARE(summary.value(QStringLiteral("passed")).toBool(), false);
    QCOMPARE(summary.value(QStringLiteral("consistent_within_rounding")).toBool(), true);
    QCOMPARE(summary.value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("within_tolerance")).toInt(), 1);

    const QString reportPath = path("ladder-report.json");
    QCOMPARE(audit({QStringLiteral("report"), casePath, QStringLiteral("--out"), reportPath, QStringLiteral("--quiet")}).exitCode, 0);
    QFile reportFile(reportPath);
    QVERIFY(reportFile.open(QIODevice::ReadOnly));
    const QJsonObject conclusion = jsonObject(reportFile.readAll()).value(QStringLiteral("conclusion")).toObject();
    QCOMPARE(conclusion.value(QStringLiteral("outcome")).toString(), QStringLiteral("CONSISTENT WITHIN ROUNDING"));
    QCOMPARE(conclusion.value(QStringLiteral("passed")).toBool(), false);
    QCOMPARE(conclusion.value(QStringLiteral("confirms_tape")).toBool(), true);
    QVERIFY2(conclusion.value(QStringLiteral("headline")).toString().startsWith(QStringLiteral("CONSISTENT WITHIN ROUNDING: ")),
             qPrintable(conclusion.value(QStringLiteral("headline")).toString()));
    const Result info = audit({QStringLiteral("info"), casePath});
    QVERIFY2(info.out.contains(QStringLiteral(": CONSISTENT WITHIN ROUNDING")) && !info.out.contains(QStringLiteral(": PASSED")), qPrintable(info.describe()));

    // The signed verdict: SLSA's PASSED is bit for bit; the weaker word is signed beside it.
    const QString auditor = path("ladder-auditor.pem"), attestation = path("ladder.intoto.json");
    QCOMPARE(audit({QStringLiteral("keygen"), QStringLiteral("--out"), auditor}).exitCode, 0);
    const Result attested = audit({QStringLiteral("report"), casePath, QStringLiteral("--attest"), auditor, QStringLiteral("-o"), attestation});
    QVERIFY2(!attested.crashed && attested.exitCode == 0 && attested.out.contains(QStringLiteral("CONSISTENT WITHIN ROUNDING")),
             qPrintable(attested.describe()));
    QFile file(attestation);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QJsonObject envelope = jsonObject(file.readAll()).value(QStringLiteral("dsseEnvelope")).toObject();
    const QJsonObject predicate =
        jsonObject(QByteArray::fromBase64(envelope.value(QStringLiteral("payload")).toString().toLatin1())).value(QStringLiteral("predicate")).toObject();
    QCOMPARE(predicate.value(QStringLiteral("verificationResult")).toString(), QStringLiteral("FAILED"));
    QCOMPARE(predicate.value(QStringLiteral("zkdv")).toObject().value(QStringLiteral("outcome")).toString(), QStringLiteral("CONSISTENT WITHIN ROUNDING"));
    const Result required = audit({QStringLiteral("verify-attestation"), attestation, QStringLiteral("--trusted-key"), auditor + QStringLiteral(".pub"),
                                   QStringLiteral("--require-passed")});
    QVERIFY2(!required.crashed && required.exitCode == 1, qPrintable(required.describe()));

    // In the recording environment, --tolerance exact decides: the edit is diverged.
    const Result exact = audit(replayAll + QStringList{QStringLiteral("--tolerance"), QStringLiteral("exact"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!exact.crashed && exact.exitCode == 1, qPrintable(exact.describe()));
    QCOMPARE(jsonObject(exact.out).value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("diverged")).toInt(), 1);
}

QTEST_GUILESS_MAIN(TestCli)
#include "test_cli.moc"
