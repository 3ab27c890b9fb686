// zkdv-audit explain (issue 32, "Where a divergence starts"): the side grammar, the trace
// comparison on made-up traces (the innermost call that differs is named, rounding is not a
// divergence, integers do not round, sides that call other operators part), and the command
// on the CNN demo recorded with one intra-op thread: replayed with two, the first operator
// beyond rounding is in the convolution's backward; the same side twice is bit for bit; a
// bad side is a usage error.

#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <cmath>
#include <cstring>

#include "audit_run.h"
#include "temp_dir.h"
#include "zkdv/replay/divergence_explain.h"

using namespace zkdv;

namespace {

using Result = test::AuditRun;

Result runAudit(const QStringList& arguments, const QProcessEnvironment& environment) { return test::runAuditCommand(arguments, environment); }

// The environment without a thread count of its own: the sides choose theirs.
QProcessEnvironment plainEnvironment()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS"})
        environment.remove(QString::fromLatin1(name));
    return environment;
}

QJsonObject jsonObject(const QString& text)
{
    const QJsonDocument document = QJsonDocument::fromJson(text.toUtf8());
    return document.isObject() ? document.object() : QJsonObject{{QStringLiteral("<invalid>"), text}};
}

TracedOutput f32(std::vector<float> values)
{
    TracedOutput output;
    output.kind = TracedOutput::Kind::Values;
    output.dtype = DType::F32;
    output.shape = {static_cast<std::int64_t>(values.size())};
    output.bytes.resize(values.size() * 4);
    std::memcpy(output.bytes.data(), values.data(), output.bytes.size());
    output.digest = Sha256::of(ByteSpan(output.bytes));
    return output;
}

TracedOutput i64(std::int64_t value)
{
    TracedOutput output;
    output.kind = TracedOutput::Kind::Values;
    output.dtype = DType::I64;
    output.bytes.resize(8);
    std::memcpy(output.bytes.data(), &value, 8);
    output.digest = Sha256::of(ByteSpan(output.bytes));
    return output;
}

TracedOperator call(const char* name, const char* phase, std::uint32_t depth, std::uint64_t finished, std::vector<TracedOutput> outputs)
{
    TracedOperator op;
    op.name = name;
    op.phase = phase;
    op.depth = depth;
    op.finished = finished;
    op.outputs = std::move(outputs);
    return op;
}

float nextUp(float value, int steps)
{
    for (int k = 0; k < steps; ++k)
        value = std::nextafter(value, 1e30f);
    return value;
}

// A step as a worker traces it: a forward call with one inside it, a backward node with an
// operator inside it, then an optimizer operator; `grad` is what the inner backward operator
// gives, `update` what the optimizer gives.
std::vector<TracedOperator> step(std::vector<float> grad, std::vector<float> update, std::int64_t count = 3)
{
    return {call("aten::linear", "forward", 0, 1, {f32({1, 2})}),
            call("aten::matmul", "forward", 1, 0, {f32({1, 2})}),
            call("AddmmBackward0", "backward", 0, 3, {}),
            call("aten::mm", "backward", 1, 2, {f32(grad)}),
            call("aten::sum", "optimizer", 0, 4, {f32(update), i64(count)})};
}

}  // namespace

class TestExplain : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void sidesParse_data();
    void sidesParse();
    void badSidesAreRefused_data();
    void badSidesAreRefused();
    void traceComparisonNamesTheInnermostCallBeyondRounding();
    void roundingAloneIsNoDivergence();
    void integersDoNotRound();
    void sidesThatCallOtherOperatorsPart();
    void threadCountNamesTheConvolutionsBackward();
    void theSameSideTwiceIsBitForBit();
    void badSidesAreUsageErrors_data();
    void badSidesAreUsageErrors();

private:
    test::TempDir dir_;
    QString case_;
    bool recorded_ = false;
};

void TestExplain::initTestCase()
{
    // The CNN demo recorded with one intra-op thread (the thread count a replay uses by default).
    const QString tape = QString::fromStdString(dir_.file("demo.zkdv"));
    case_ = QString::fromStdString(dir_.file("demo.zkaudit"));
    QProcessEnvironment oneThread = plainEnvironment();
    oneThread.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    Result result = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), tape, QStringLiteral("--steps"), QStringLiteral("12"),
                              QStringLiteral("--batch-size"), QStringLiteral("8"), QStringLiteral("--snapshot-interval"), QStringLiteral("12"),
                              QStringLiteral("--quiet")},
                             oneThread);
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    result = runAudit({QStringLiteral("info"), tape, QStringLiteral("--json")}, plainEnvironment());
    const QJsonObject producer = jsonObject(result.out).value(QStringLiteral("root")).toObject().value(QStringLiteral("producer")).toObject();
    QVERIFY2(producer.value(QStringLiteral("intra_op_threads")).toInt() == 1, qPrintable(result.describe()));
    result = runAudit({QStringLiteral("ingest"), tape, QStringLiteral("--case"), case_, QStringLiteral("--quiet")}, plainEnvironment());
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    recorded_ = true;
}

void TestExplain::sidesParse_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("canonical");
    QTest::addColumn<QString>("device");
    QTest::addColumn<int>("threads");
    QTest::newRow("cpu") << "cpu" << "cpu" << "cpu" << 0;
    QTest::newRow("cuda") << "cuda" << "cuda" << "cuda" << 0;
    QTest::newRow("cuda:1") << "cuda:1" << "cuda:1" << "cuda:1" << 0;
    QTest::newRow("threads") << "cpu@threads=2" << "cpu@threads=2" << "cpu" << 2;
    QTest::newRow("kernels") << "cpu@kernels=host" << "cpu@kernels=host" << "cpu" << 0;
    QTest::newRow("both, either order") << "cpu@kernels=host@threads=4" << "cpu@threads=4@kernels=host" << "cpu" << 4;
}

void TestExplain::sidesParse()
{
    QFETCH(QString, text);
    QFETCH(QString, canonical);
    QFETCH(QString, device);
    QFETCH(int, threads);
    const ExplainSide side = ExplainSide::parse(text.toStdString());
    QCOMPARE(QString::fromStdString(side.toString()), canonical);
    QCOMPARE(QString::fromStdString(side.device), device);
    QCOMPARE(side.intraOpThreads, threads);
    QCOMPARE(QString::fromStdString(ExplainSide::parse(side.toString()).toString()), canonical);
}

void TestExplain::badSidesAreRefused_data()
{
    QTest::addColumn<QString>("devices");
    QTest::addColumn<QString>("says");
    QTest::newRow("one side") << "cpu" << "two sides";
    QTest::newRow("three sides") << "cpu,cpu,cpu" << "two sides";
    QTest::newRow("empty side") << "cpu," << "unknown device";
    QTest::newRow("unknown device") << "cpu,gpu" << "unknown device \"gpu\"";
    QTest::newRow("cuda:x") << "cpu,cuda:x" << "unknown device";
    QTest::newRow("zero threads") << "cpu,cpu@threads=0" << "threads must be a number from 1";
    QTest::newRow("threads word") << "cpu,cpu@threads=two" << "threads must be a number from 1";
    QTest::newRow("too many threads") << "cpu,cpu@threads=5000" << "threads must be a number from 1";
    QTest::newRow("threads twice") << "cpu,cpu@threads=2@threads=3" << "threads given twice";
    QTest::newRow("kernels unknown") << "cpu,cpu@kernels=mine" << "kernels must be recorded or host";
    QTest::newRow("modifier on cuda") << "cpu,cuda:0@threads=2" << "cpu sides only";
    QTest::newRow("unknown modifier") << "cpu,cpu@fast" << "unknown modifier";
}

void TestExplain::badSidesAreRefused()
{
    QFETCH(QString, devices);
    QFETCH(QString, says);
    try {
        ExplainSide::parsePair(devices.toStdString());
        QFAIL("accepted");
    } catch (const ExplainSideError& error) {
        QVERIFY2(QString::fromUtf8(error.what()).contains(says), error.what());
    }
}

void TestExplain::traceComparisonNamesTheInnermostCallBeyondRounding()
{
    const std::vector<TracedOperator> a = step({1.0f, 2.0f}, {0.5f});
    const std::vector<TracedOperator> b = step({1.0f, 2.5f}, {0.75f});
    const DivergenceExplanation e = compareOperatorTraces(a, b, Tolerance::defaults());
    QCOMPARE(e.nodes.size(), std::size_t(5));
    QCOMPARE(e.granularity, std::string("operator"));
    QVERIFY(e.first);
    const ExplainedNode& first = e.nodes[*e.first];
    QCOMPARE(first.op, std::string("aten::mm"));  // not its node, not the optimizer after it
    QVERIFY(first.inside == std::vector<std::string>{"AddmmBackward0"});
    QVERIFY(first.agreement == NodeAgreement::Beyond);
    QCOMPARE(first.maxAbs, 0.5);
    QVERIFY(std::abs(first.relativeL2 - 0.5 / std::sqrt(5.0)) < 1e-12);
    QCOMPARE(e.same, std::uint64_t(3));  // the forward and the backward node, which gives nothing
    QCOMPARE(e.beyond, std::uint64_t(2));
    QVERIFY(e.diverged());
    // The rows: every call of the step itself, and the named one inside its node.
    const std::vector<std::size_t> rows = explanationRows(e);
    QVERIFY(rows == (std::vector<std::size_t>{0, 2, 3, 4}));
    QVERIFY(explanationRows(e, 0) == (std::vector<std::size_t>{0, 2, 3}));
}

void TestExplain::roundingAloneIsNoDivergence()
{
    const DivergenceExplanation e = compareOperatorTraces(step({1.0f, 2.0f}, {0.5f}), step({1.0f, nextUp(2.0f, 3)}, {0.5f}), Tolerance::defaults());
    QVERIFY(!e.first);
    QVERIFY(!e.diverged());
    QVERIFY(e.firstDifference);
    QCOMPARE(e.nodes[*e.firstDifference].op, std::string("aten::mm"));
    QCOMPARE(e.nodes[*e.firstDifference].maxUlp, 3.0);
    QCOMPARE(e.rounding, std::uint64_t(1));
    // Under an exact tolerance the same difference is beyond.
    const DivergenceExplanation exact = compareOperatorTraces(step({1.0f, 2.0f}, {0.5f}), step({1.0f, nextUp(2.0f, 3)}, {0.5f}), Tolerance::parse("exact"));
    QVERIFY(exact.first);
    QCOMPARE(exact.nodes[*exact.first].op, std::string("aten::mm"));
    // Past the value cap only digests come back: a difference there is unmeasured, not beyond.
    std::vector<TracedOperator> digested = step({1.0f, 2.5f}, {0.5f});
    for (TracedOperator& op : digested)
        for (TracedOutput& output : op.outputs) {
            output.kind = TracedOutput::Kind::Digest;
            output.bytes.clear();
        }
    const DivergenceExplanation unmeasured = compareOperatorTraces(step({1.0f, 2.0f}, {0.5f}), digested, Tolerance::defaults());
    QVERIFY(!unmeasured.first);
    QCOMPARE(unmeasured.unmeasured, std::uint64_t(1));
}

void TestExplain::integersDoNotRound()
{
    const DivergenceExplanation e = compareOperatorTraces(step({1.0f, 2.0f}, {0.5f}, 3), step({1.0f, 2.0f}, {0.5f}, 4), Tolerance::defaults());
    QVERIFY(e.first);
    QCOMPARE(e.nodes[*e.first].op, std::string("aten::sum"));
    QVERIFY2(e.nodes[*e.first].note.find("integers do not round") != std::string::npos, e.nodes[*e.first].note.c_str());
}

void TestExplain::sidesThatCallOtherOperatorsPart()
{
    std::vector<TracedOperator> b = step({1.0f, 2.0f}, {0.5f});
    b[2].name = "MmBackward0";
    const DivergenceExplanation e = compareOperatorTraces(step({1.0f, 2.0f}, {0.5f}), b, Tolerance::defaults());
    QVERIFY(!e.first);
    QVERIFY(e.diverged());
    QVERIFY2(e.parted.find("side A calls AddmmBackward0, side B MmBackward0") != std::string::npos, e.parted.c_str());
    QCOMPARE(e.nodes.size(), std::size_t(2));  // compared up to where they part
    // Calls inside a call that differ between the sides (another device's kernels) are
    // compared at the level of the call around them.
    std::vector<TracedOperator> c = step({1.0f, 2.0f}, {0.5f});
    c[3].name = "aten::mkldnn_mm";
    const DivergenceExplanation inner = compareOperatorTraces(step({1.0f, 2.0f}, {0.5f}), c, Tolerance::defaults());
    QVERIFY(inner.parted.empty());
    QCOMPARE(inner.nodes.size(), std::size_t(4));
    QVERIFY(inner.nodes[2].note.find("compared at this level") != std::string::npos);
}

void TestExplain::threadCountNamesTheConvolutionsBackward()
{
    QVERIFY(recorded_);
    // Transaction 0 starts its segment: both sides start from the same snapshot, so the
    // forward is bit for bit and the first difference is made by the step itself.
    const Result result = runAudit({QStringLiteral("explain"), case_, QStringLiteral("0"), QStringLiteral("--devices"),
                                    QStringLiteral("cpu,cpu@threads=2"), QStringLiteral("--json")},
                                   plainEnvironment());
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("granularity")).toString(), QStringLiteral("operator"));
    const QJsonArray sides = json.value(QStringLiteral("sides")).toArray();
    QCOMPARE(sides.size(), 2);
    QCOMPARE(sides[0].toObject().value(QStringLiteral("intra_op_threads")).toInt(), 1);
    QCOMPARE(sides[1].toObject().value(QStringLiteral("intra_op_threads")).toInt(), 2);
    QCOMPARE(sides[1].toObject().value(QStringLiteral("side")).toString(), QStringLiteral("cpu@threads=2"));
    // One thread replays the recording bit for bit.
    QCOMPARE(sides[0].toObject().value(QStringLiteral("verdict")).toString(), QStringLiteral("exact"));
    QVERIFY(json.value(QStringLiteral("diverged")).toBool());
    QVERIFY(json.value(QStringLiteral("beyond")).toInt() > 0);
    const QJsonObject first = json.value(QStringLiteral("first")).toObject();
    QCOMPARE(first.value(QStringLiteral("agreement")).toString(), QStringLiteral("beyond"));
    QCOMPARE(first.value(QStringLiteral("phase")).toString(), QStringLiteral("backward"));
    // The convolution's backward: the operator itself, or the autograd node it runs in.
    QStringList names{first.value(QStringLiteral("op")).toString()};
    for (const QJsonValue& outer : first.value(QStringLiteral("inside")).toArray())
        names << outer.toString();
    QVERIFY2(names.join(QLatin1Char(' ')).contains(QStringLiteral("conv"), Qt::CaseInsensitive), qPrintable(result.out));
    QVERIFY(first.value(QStringLiteral("relative_l2")).toDouble() > Tolerance::defaults().relativeL2);
    QVERIFY(first.value(QStringLiteral("max_ulp")).toDouble() > Tolerance::defaults().maxUlp);
    // No call of the forward is beyond rounding (on this machine every one is bit for bit; a
    // CPU whose forward reductions split by thread count may round them); the table reaches
    // past the named call.
    const QJsonArray rows = json.value(QStringLiteral("rows")).toArray();
    QVERIFY(rows.size() > 2);
    bool past = false;
    for (const QJsonValue& value : rows) {
        const QJsonObject row = value.toObject();
        if (row.value(QStringLiteral("phase")).toString() == QStringLiteral("forward"))
            QVERIFY(row.value(QStringLiteral("agreement")).toString() != QStringLiteral("beyond"));
        past = past || row.value(QStringLiteral("node")).toInteger() > first.value(QStringLiteral("node")).toInteger();
    }
    QVERIFY(past);

    // The text names it too, with the table.
    const Result text = runAudit({QStringLiteral("explain"), case_, QStringLiteral("0"), QStringLiteral("--devices"),
                                  QStringLiteral("cpu,cpu@threads=2"), QStringLiteral("--quiet")},
                                 plainEnvironment());
    QVERIFY2(!text.crashed && text.exitCode == 1, qPrintable(text.describe()));
    QVERIFY2(text.out.contains(QStringLiteral("first beyond rounding: call ")) && text.out.contains(QStringLiteral("<== first beyond rounding")),
             qPrintable(text.describe()));
}

void TestExplain::theSameSideTwiceIsBitForBit()
{
    QVERIFY(recorded_);
    const Result result = runAudit({QStringLiteral("explain"), case_, QStringLiteral("5"), QStringLiteral("--devices"), QStringLiteral("cpu,cpu"),
                                    QStringLiteral("--json"), QStringLiteral("--quiet")},
                                   plainEnvironment());
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QVERIFY(!json.value(QStringLiteral("diverged")).toBool());
    QVERIFY(json.value(QStringLiteral("first")).isNull());
    QVERIFY(json.value(QStringLiteral("first_difference")).isNull());
    const int compared = json.value(QStringLiteral("compared")).toInt();
    QVERIFY(compared > 50);  // the CNN's forward, backward and Adam step, call by call
    QCOMPARE(json.value(QStringLiteral("same")).toInt(), compared);
    QCOMPARE(json.value(QStringLiteral("rows")).toArray().size(), 0);
    const Result text = runAudit({QStringLiteral("explain"), case_, QStringLiteral("5"), QStringLiteral("--devices"), QStringLiteral("cpu,cpu")},
                                 plainEnvironment());
    QVERIFY2(!text.crashed && text.exitCode == 0 && text.out.contains(QStringLiteral("no call differs beyond rounding: every output bit for bit")),
             qPrintable(text.describe()));
    QVERIFY2(text.err.contains(QStringLiteral("side B")), qPrintable(text.describe()));  // progress names the side
}

void TestExplain::badSidesAreUsageErrors_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<QString>("says");
    QTest::newRow("unknown device") << QStringList{QStringLiteral("--devices"), QStringLiteral("cpu,gpu")} << "unknown device";
    QTest::newRow("one side") << QStringList{QStringLiteral("--devices"), QStringLiteral("cpu")} << "two sides";
    QTest::newRow("zero threads") << QStringList{QStringLiteral("--devices"), QStringLiteral("cpu,cpu@threads=0")} << "threads";
    QTest::newRow("modifier on cuda") << QStringList{QStringLiteral("--devices"), QStringLiteral("cpu,cuda:0@kernels=host")} << "cpu sides only";
    QTest::newRow("no --devices") << QStringList{} << "--devices";
    QTest::newRow("absent device") << QStringList{QStringLiteral("--devices"), QStringLiteral("cpu,cuda:7")} << "cuda:7";
}

void TestExplain::badSidesAreUsageErrors()
{
    QVERIFY(recorded_);
    QFETCH(QStringList, arguments);
    QFETCH(QString, says);
    const Result result = runAudit(QStringList{QStringLiteral("explain"), case_, QStringLiteral("0"), QStringLiteral("--quiet")} + arguments,
                                   plainEnvironment());
    QVERIFY2(!result.crashed && result.exitCode == 2 && result.err.contains(says) && result.out.isEmpty(), qPrintable(result.describe()));
}

QTEST_GUILESS_MAIN(TestExplain)
#include "test_explain.moc"
