// zkdv-audit on untrusted input: tapes whose JSON nests past the limit, cases whose stored
// JSON does, cases holding text that is not UTF-8, and FIFOs in place of files. Every
// command answers with a located error or valid output: no crash, no hang, no exit 2 for
// output it could have written.

#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "file_bytes.h"
#include "tape_rewriter.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/database.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/utf8.h"

using namespace zkdv;

using test::readText;

namespace {

constexpr std::size_t kDeep = 200000;
// A libtorch error about a damaged archive, with the archive's own bytes in it.
const std::string kNotUtf8 = "PytorchStreamReader failed reading zip archive: bad entry \xFF\xFE\xC3";

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Not test::AuditRun: these tests read the output as raw bytes (that no invalid UTF-8 from a
// hostile file reaches it), which decoding to QString would hide.
struct Result {
    int exitCode = -1;
    bool crashed = true;  // or hung
    QByteArray out;
    QByteArray err;
    QString describe() const
    {
        return QStringLiteral("exit %1%2\n--- stdout ---\n%3\n--- stderr ---\n%4")
            .arg(exitCode)
            .arg(crashed ? QStringLiteral(" (crashed or hung)") : QString())
            .arg(QString::fromUtf8(out.left(4000)), QString::fromUtf8(err.left(4000)));
    }
};

Result runAudit(const QStringList& arguments)
{
    QProcess process;
    process.setProgram(QStringLiteral(ZKDV_AUDIT_EXECUTABLE));
    process.setArguments(arguments);
    process.start();
    Result result;
    if (!process.waitForStarted(30000))
        return result;
    process.closeWriteChannel();
    const bool finished = process.waitForFinished(120000);
    if (!finished) {
        process.kill();
        process.waitForFinished();
    }
    result.out = process.readAllStandardOutput();
    result.err = process.readAllStandardError();
    if (finished) {
        result.crashed = process.exitStatus() != QProcess::NormalExit;
        result.exitCode = process.exitCode();
    }
    return result;
}

// The JSON document `bytes` holds, or an empty object when it is not valid UTF-8 JSON.
QJsonObject validJson(const QByteArray& bytes)
{
    if (!isValidUtf8(std::string_view(bytes.constData(), static_cast<std::size_t>(bytes.size()))))
        return {};
    QJsonParseError error{};
    const QJsonDocument document = QJsonDocument::fromJson(bytes, &error);
    return error.error == QJsonParseError::NoError && document.isObject() ? document.object() : QJsonObject();
}

// The root record the case stores for its tape, with an array nested kDeep levels added to
// its metadata: everything else about it is valid.
std::string rootWithDeepMetadata(const std::string& casePath)
{
    Database db(casePath, Database::Mode::ReadOnly);
    Statement row = db.prepare("SELECT root_json FROM tapes");
    if (!row.step())
        throw Error("no tape in " + casePath);
    std::string root = row.text(0);
    const std::string anchor = "\"metadata\":{";
    root.replace(root.find(anchor), anchor.size(), anchor + "\"deep\":" + nested(kDeep) + ",");
    return root;
}

void exec(const std::string& casePath, const std::string& sql, const std::string& text)
{
    Database db(casePath, Database::Mode::ReadWrite);
    Statement statement = db.prepare(sql);
    statement.bind(1, text);
    statement.run();
}

}  // namespace

class TestUntrustedInputCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void deepJsonInATape_data();
    void deepJsonInATape();
    void deepJsonStoredInACase_data();
    void deepJsonStoredInACase();
    void deepRootStoredInACaseStopsTheReplay();
    void textThatIsNotUtf8();
    void fifosAreRefused();

private:
    QString path(const std::string& name) const { return QString::fromStdString(dir_.file(name)); }
    // A fresh case holding the synthetic tape and one replay run.
    QString syntheticCase(const std::string& name);

    test::TempDir dir_;
    std::string synthetic_;
    std::string cnnCase_;
};

void TestUntrustedInputCli::initTestCase()
{
    QVERIFY2(QFileInfo(QStringLiteral(ZKDV_AUDIT_EXECUTABLE)).isExecutable(), ZKDV_AUDIT_EXECUTABLE);
    SyntheticDemoOptions options;
    options.steps = 5;
    options.batchSize = 2;
    synthetic_ = dir_.file("synthetic.zkdv");
    writeSyntheticDemoTape(synthetic_, options);

    // A replayable tape (the libtorch CNN) in a case, replayed once.
    const QString cnn = path("cnn.zkdv");
    cnnCase_ = dir_.file("cnn.zkaudit");
    Result result = runAudit({"demo", "--out", cnn, "--steps", "3", "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    result = runAudit({"ingest", cnn, "--case", QString::fromStdString(cnnCase_), "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    result = runAudit({"replay", QString::fromStdString(cnnCase_), "--select", "all", "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
}

QString TestUntrustedInputCli::syntheticCase(const std::string& name)
{
    const QString casePath = path(name);
    QFile::remove(casePath);
    Result result = runAudit({"ingest", QString::fromStdString(synthetic_), "--case", casePath, "--quiet"});
    if (result.exitCode != 0)
        qWarning("%s", qPrintable(result.describe()));
    // The synthetic tape's program cannot be replayed: the run stores that as its problem.
    runAudit({"replay", casePath, "--select", "all", "--quiet"});
    return casePath;
}

void TestUntrustedInputCli::deepJsonInATape_data()
{
    QTest::addColumn<int>("recordType");
    QTest::addColumn<QString>("anchor");
    QTest::addColumn<QString>("replacement");
    const int root = static_cast<int>(tape::RecordType::Root), seal = static_cast<int>(tape::RecordType::Seal);
    QTest::newRow("root metadata") << root << "\"metadata\":{" << "\"metadata\":{\"deep\":DEEP,";
    QTest::newRow("root optimizer options") << root << "\"options\":{" << "\"options\":{\"deep\":DEEP,";
    QTest::newRow("root tensor shape") << root << "\"shape\":[" << "\"shape\":[DEEP,";
    QTest::newRow("seal signature") << seal << "\"signature\":null" << "\"signature\":DEEP";
}

void TestUntrustedInputCli::deepJsonInATape()
{
    QFETCH(int, recordType);
    QFETCH(QString, anchor);
    QFETCH(QString, replacement);
    const std::string deep = dir_.file("deep.zkdv");
    std::uint64_t editedIndex = 0;
    test::rewriteTape(synthetic_, deep, [&](std::uint64_t index, std::uint32_t type, std::string payload) {
        if (type == static_cast<std::uint32_t>(recordType)) {
            std::string text = replacement.toStdString();
            text.replace(text.find("DEEP"), 4, nested(kDeep));
            payload.replace(payload.find(anchor.toStdString()), anchor.size(), text);
            editedIndex = index;
        }
        return payload;
    });
    const QString tape = QString::fromStdString(deep);
    const QString where = QStringLiteral("record %1 (%2) at byte ")
                              .arg(editedIndex)
                              .arg(QString::fromLatin1(tape::recordTypeName(static_cast<std::uint32_t>(recordType)).data()));

    Result result = runAudit({"verify", tape});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    QVERIFY2((result.out + result.err).contains(where.toUtf8()) && (result.out + result.err).contains("more than 64 levels deep"),
             qPrintable(result.describe()));

    result = runAudit({"verify", tape, "--json"});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    const QJsonObject problem = validJson(result.out).value(QStringLiteral("problem")).toObject();
    QCOMPARE(problem.value(QStringLiteral("record")).toInt(), static_cast<int>(editedIndex));
    QVERIFY(problem.value(QStringLiteral("message")).toString().contains(QStringLiteral("levels deep")));

    for (const QStringList& arguments : {QStringList{"info", tape}, QStringList{"info", tape, "--json"}}) {
        result = runAudit(arguments);  // info describes a damaged tape, and that is not a failure
        QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
        QVERIFY2((result.out + result.err).contains("levels deep"), qPrintable(result.describe()));
    }

    const QString casePath = path("deep.zkaudit");
    QFile::remove(casePath);
    result = runAudit({"ingest", tape, "--case", casePath, "--quiet"});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    QVERIFY2((result.out + result.err).contains(where.toUtf8()), qPrintable(result.describe()));
}

void TestUntrustedInputCli::deepJsonStoredInACase_data()
{
    QTest::addColumn<QString>("sql");
    QTest::addColumn<QString>("value");  // DEEP stands for the deep array
    QTest::newRow("tapes.root_json") << "UPDATE tapes SET root_json = ?1" << "ROOT";
    QTest::newRow("tensors.shape") << "UPDATE tensors SET shape = ?1" << "DEEP";
    QTest::newRow("optimizer_groups.options") << "UPDATE optimizer_groups SET options = ?1" << "{\"deep\":DEEP}";
    QTest::newRow("replay_runs.environment") << "UPDATE replay_runs SET environment = ?1" << "{\"os\":DEEP}";
}

void TestUntrustedInputCli::deepJsonStoredInACase()
{
    QFETCH(QString, sql);
    QFETCH(QString, value);
    const QString casePath = syntheticCase("stored-deep.zkaudit");
    std::string text = value.toStdString();
    if (text == "ROOT")
        text = rootWithDeepMetadata(casePath.toStdString());
    else
        text.replace(text.find("DEEP"), 4, nested(kDeep));
    exec(casePath.toStdString(), sql.toStdString(), text);

    const std::string report = dir_.file("stored-deep.json");
    Result result = runAudit({"report", casePath, "-o", QString::fromStdString(report)});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    const QJsonObject document = validJson(QByteArray::fromStdString(readText(report)));
    QVERIFY2(!document.isEmpty(), readText(report).substr(0, 2000).c_str());
    if (sql.contains(QStringLiteral("root_json")))
        QVERIFY2(QString::fromUtf8(QJsonDocument(document).toJson()).contains(QStringLiteral("more than 64 levels deep")),
                 "the report does not say the stored root is unreadable");

    for (const QStringList& arguments : {QStringList{"info", casePath, "--json"}, QStringList{"info", casePath}}) {
        result = runAudit(arguments);
        QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    }
}

void TestUntrustedInputCli::deepRootStoredInACaseStopsTheReplay()
{
    const QString casePath = syntheticCase("stored-deep-root.zkaudit");
    const std::string root = rootWithDeepMetadata(casePath.toStdString());
    exec(casePath.toStdString(), "UPDATE tapes SET root_json = ?1", root);
    const Result result = runAudit({"replay", casePath, "--select", "all", "--quiet"});
    QVERIFY2(!result.crashed && result.exitCode == 2, qPrintable(result.describe()));
    // The root object and the metadata object are open where the array starts.
    const std::size_t tooDeep = root.find(std::string(64, '[')) + 64 - 2;
    QVERIFY2(result.err.contains(QStringLiteral("root record in the case does not parse: root record nests JSON arrays and objects "
                                                "more than 64 levels deep (at byte %1)")
                                     .arg(tooDeep)
                                     .toUtf8()),
             qPrintable(result.describe()));
}

void TestUntrustedInputCli::textThatIsNotUtf8()
{
    const QString casePath = QString::fromStdString(cnnCase_);
    exec(cnnCase_, "UPDATE verdicts SET verdict = 'unverifiable', detail = ?1 WHERE idx = 1", kNotUtf8);
    exec(cnnCase_, "UPDATE replay_runs SET problem = ?1", kNotUtf8);
    const QString replacement = QString::fromStdString(toValidUtf8(kNotUtf8));

    Result result = runAudit({"info", casePath, "--json"});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    QJsonObject document = validJson(result.out);
    const QJsonObject run = document.value(QStringLiteral("replay_runs")).toArray().first().toObject();
    QCOMPARE(run.value(QStringLiteral("problem")).toString(), replacement);
    QCOMPARE(run.value(QStringLiteral("failures")).toArray().first().toObject().value(QStringLiteral("detail")).toString(), replacement);

    const std::string report = dir_.file("not-utf8.json");
    result = runAudit({"report", casePath, "-o", QString::fromStdString(report)});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY2(!validJson(QByteArray::fromStdString(readText(report))).isEmpty(), "the JSON report is not valid UTF-8 JSON");
    QVERIFY(QString::fromUtf8(QByteArray::fromStdString(readText(report))).contains(replacement));
    const std::string csv = dir_.file("not-utf8.csv");
    result = runAudit({"report", casePath, "-o", QString::fromStdString(csv)});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY(isValidUtf8(readText(csv)));

    // The replay names the tape it cannot find, before storing any run; here the stored path
    // is not UTF-8 either, and the message still is.
    exec(cnnCase_, "UPDATE tapes SET path = ?1", dir_.file("moved-\xFF.zkdv"));
    result = runAudit({"replay", casePath, "--select", "ids:1", "--json", "--quiet"});
    QVERIFY2(!result.crashed && result.exitCode == 2, qPrintable(result.describe()));
    QVERIFY2(QString::fromUtf8(result.err).contains(QStringLiteral("moved-\uFFFD.zkdv")) && !result.err.contains("\xFF") &&
                 result.err.contains("nothing was stored"),
             qPrintable(result.describe()));
    exec(cnnCase_, "UPDATE tapes SET path = ?1", dir_.file("cnn.zkdv"));
}

void TestUntrustedInputCli::fifosAreRefused()
{
    const std::string fifo = dir_.file("named.fifo");
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    const QString name = QString::fromStdString(fifo);
    const QString casePath = syntheticCase("fifo.zkaudit");
    const std::vector<QStringList> commands = {
        {"verify", name},
        {"info", name},
        {"ingest", name, "--case", path("fifo-ingest.zkaudit")},
        {"report", name, "-o", path("fifo-report.json")},
    };
    for (const QStringList& arguments : commands) {
        const Result result = runAudit(arguments);
        QVERIFY2(!result.crashed && result.exitCode == 2, qPrintable(arguments.join(' ') + ": " + result.describe()));
        QVERIFY2(result.err.contains("is a FIFO, not a regular file"), qPrintable(arguments.join(' ') + ": " + result.describe()));
    }

    // The tape the case points at was replaced by a FIFO: the replay says so and stops.
    exec(cnnCase_, "UPDATE tapes SET path = ?1", fifo);
    const Result result = runAudit({"replay", QString::fromStdString(cnnCase_), "--select", "ids:1", "--json", "--quiet"});
    exec(cnnCase_, "UPDATE tapes SET path = ?1", dir_.file("cnn.zkdv"));
    QVERIFY2(!result.crashed && result.exitCode == 2, qPrintable(result.describe()));
    QVERIFY2(result.err.contains("is a FIFO, not a regular file"), qPrintable(result.describe()));
}

QTEST_GUILESS_MAIN(TestUntrustedInputCli)
#include "test_untrusted_input_cli.moc"
