// Calibrated envelopes end to end, through the real zkdv-audit: "another device" is simulated
// by replaying CNN demo tapes recorded with 1 intra-op thread with 2 (docs/replay.md,
// "Tolerances"). A calibration measured on one honest tape lets another honest tape (another
// seed) replay with none diverged, while a tampered copy of it is diverged at the altered
// transaction; a calibration for another pair is not used, naming what differs; a hostile
// calibration file is an input error naming the file and the member.

#include <QtTest>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>

#include <cmath>
#include <string>

#include "dishonest_trainer.h"
#include "audit_run.h"
#include "temp_dir.h"

using namespace zkdv;

namespace {

using Result = test::AuditRun;

// One shell for the trainer and the auditor, whatever runs the tests: OMP_NUM_THREADS=1
// (recorded in the tape's numerics.settings, and the workers keep the shell's), so the
// trainer runs 1 intra-op thread and the two environments differ only by the replay's
// --intra-op-threads.
QProcessEnvironment auditorEnvironment()
{
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("OMP_NUM_THREADS"), QStringLiteral("1"));
    environment.remove(QStringLiteral("MKL_NUM_THREADS"));
    return environment;
}

Result runAudit(const QStringList& arguments, const QProcessEnvironment& environment = auditorEnvironment()) { return test::runAuditCommand(arguments, environment); }

QJsonObject jsonObject(const QString& text)
{
    const QJsonDocument document = QJsonDocument::fromJson(text.toUtf8());
    return document.isObject() ? document.object() : QJsonObject{{QStringLiteral("<invalid>"), text}};
}

QJsonObject jsonFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return {};
    return jsonObject(QString::fromUtf8(file.readAll()));
}

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly | QIODevice::Truncate));
    QCOMPARE(file.write(bytes), qint64(bytes.size()));
}

const QString kSteps = QStringLiteral("24");

}  // namespace

class TestCalibrateCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void calibrationMeasuresThePair();
    void honestTapeIsNeverDivergedInTheCalibratedEnvelope();
    void tamperedTapeIsDivergedAtItsTransaction();
    void poisonedCalibrationWidensNothing();
    void longHonestTapeIsNeverDivergedAcrossThreads_data();
    void longHonestTapeIsNeverDivergedAcrossThreads();
    void amplifiedRoundingExcusesNoTampering();
    void anotherPairFallsBackNamingWhatDiffers();
    void tooFewSamplesAreRefusedForUse();
    void sameEnvironmentHasNothingToCalibrate();
    void hostileCalibrationIsAnInputError_data();
    void hostileCalibrationIsAnInputError();

private:
    QString path(const std::string& name) const { return QString::fromStdString(dir_.file(name)); }
    // Records the CNN demo with 1 intra-op thread and ingests it into `name`.zkaudit.
    void recordDemo(const std::string& name, const QString& seed, const QString& steps = kSteps);
    Result replay(const QString& casePath, const QStringList& more);

    test::TempDir dir_;
    QString calibration_;
};

void TestCalibrateCli::recordDemo(const std::string& name, const QString& seed, const QString& steps)
{
    Result result = runAudit({QStringLiteral("demo"), QStringLiteral("--out"), path(name + ".zkdv"), QStringLiteral("--steps"), steps,
                              QStringLiteral("--seed"), seed, QStringLiteral("--snapshot-interval"), QStringLiteral("12"),
                              QStringLiteral("--batch-size"), QStringLiteral("8"), QStringLiteral("--update-check"), QStringLiteral("1"),
                              QStringLiteral("--state-check"), QStringLiteral("0.5"), QStringLiteral("--quiet")});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
}

Result TestCalibrateCli::replay(const QString& casePath, const QStringList& more)
{
    return runAudit(QStringList{QStringLiteral("replay"), casePath, QStringLiteral("--select"), QStringLiteral("all"), QStringLiteral("--json"),
                                QStringLiteral("--quiet")} +
                    more);
}

void TestCalibrateCli::initTestCase()
{
    recordDemo("a", QStringLiteral("7"));
    recordDemo("b", QStringLiteral("8"));
    // Trained far (the loss falls to about 0.006): where an ulp decides steps (docs/replay.md,
    // "Amplified rounding"). The dishonest trainer scales an element of transaction 400's
    // fc.weight delta by 1.5.
    recordDemo("long", QStringLiteral("10"), QStringLiteral("600"));
    // Longer still (loss about 0.0007): BatchNorm weights near 1, whose deltas round to their
    // grid of 1.2e-7 (docs/replay.md, "The parameter's grid").
    recordDemo("longer", QStringLiteral("13"), QStringLiteral("1200"));
    test::rewriteTape(dir_.file("long.zkdv"), dir_.file("long-tampered.zkdv"), [](test::RawRecord& record) {
        if (test::isTransaction(record, 400))
            test::scaleElement(record, "delta/fc.weight", 3, 1.5f);
    });
    // The dishonest trainer scales one element of transaction 5's fc.weight delta by 1.5.
    test::rewriteTape(dir_.file("b.zkdv"), dir_.file("tampered.zkdv"), [](test::RawRecord& record) {
        if (test::isTransaction(record, 5))
            test::scaleElement(record, "delta/fc.weight", 3, 1.5f);
    });
    // A calibration tape the trainer poisoned: one row of fc.weight (16 elements) scaled by 1.8
    // in snapshot 12, re-chained.
    test::rewriteTape(dir_.file("a.zkdv"), dir_.file("poisoned.zkdv"), [](test::RawRecord& record) {
        if (test::isSnapshot(record, 12))
            for (std::size_t element = 0; element < 16; ++element)
                test::scaleElement(record, "param/fc.weight", element, 1.8f);
    });
    for (const char* name : {"a", "b", "tampered", "long", "long-tampered", "longer", "poisoned"}) {
        const Result result = runAudit({QStringLiteral("ingest"), path(std::string(name) + ".zkdv"), QStringLiteral("--case"),
                                        path(std::string(name) + ".zkaudit"), QStringLiteral("--quiet")});
        QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    }
    calibration_ = path("a-1to2.calibration.json");
}

void TestCalibrateCli::calibrationMeasuresThePair()
{
    Result result = runAudit({QStringLiteral("calibrate"), path("a.zkaudit"), QStringLiteral("--out"), calibration_, QStringLiteral("--intra-op-threads"),
                              QStringLiteral("2"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!result.crashed && result.exitCode == 0, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QVERIFY2(json.value(QStringLiteral("usable")).toBool(), qPrintable(result.describe()));
    const double samples = json.value(QStringLiteral("samples")).toDouble();
    QVERIFY2(samples >= 100, qPrintable(result.describe()));
    // conv1.bias's noise gradient reaches its update and the BatchNorm buffers: left out.
    QVERIFY2(json.value(QStringLiteral("excluded")).toObject().value(QStringLiteral("noise")).toDouble() > 0, qPrintable(result.out));
    const double maxRatio = json.value(QStringLiteral("max_ratio")).toDouble();
    QCOMPARE(json.value(QStringLiteral("envelope")).toDouble(), std::max(1.0, 4.0 * maxRatio));
    QCOMPARE(json.value(QStringLiteral("quantile_level")).toDouble(), 1.0 - 1.0 / (samples + 1.0));
    // Every kind holds ordered quantiles, and their counts add up to the samples.
    double counted = 0, largest = 0;
    QStringList kinds;
    for (const QJsonValue& value : json.value(QStringLiteral("kinds")).toArray()) {
        const QJsonObject kind = value.toObject();
        kinds << kind.value(QStringLiteral("kind")).toString();
        counted += kind.value(QStringLiteral("count")).toDouble();
        for (const char* statistic : {"max_ulp", "relative_l2", "ratio"}) {
            const QJsonObject q = kind.value(QLatin1String(statistic)).toObject();
            QVERIFY(q.value(QStringLiteral("p50")).toDouble() <= q.value(QStringLiteral("p90")).toDouble());
            QVERIFY(q.value(QStringLiteral("p90")).toDouble() <= q.value(QStringLiteral("p99")).toDouble());
            QVERIFY(q.value(QStringLiteral("p99")).toDouble() <= q.value(QStringLiteral("max")).toDouble());
        }
        largest = std::max(largest, kind.value(QStringLiteral("ratio")).toObject().value(QStringLiteral("max")).toDouble());
    }
    QCOMPARE(counted, samples);
    QCOMPARE(largest, maxRatio);
    QVERIFY2(kinds.contains(QStringLiteral("loss")) && kinds.contains(QStringLiteral("delta")) && kinds.contains(QStringLiteral("snapshot/param")),
             qPrintable(kinds.join(QLatin1Char(','))));
    // The file is keyed by the pair: the tape's environment (1 thread) and the workers' (2).
    const QJsonObject file = jsonFile(calibration_);
    QCOMPARE(file.value(QStringLiteral("recorded")).toObject().value(QStringLiteral("numerics")).toObject().value(QStringLiteral("intra_op_threads")).toInt(), 1);
    QCOMPARE(file.value(QStringLiteral("replay")).toObject().value(QStringLiteral("numerics")).toObject().value(QStringLiteral("intra_op_threads")).toInt(), 2);
    QCOMPARE(file.value(QStringLiteral("replay")).toObject().value(QStringLiteral("device")).toString(), QStringLiteral("cpu"));
    QVERIFY(!file.value(QStringLiteral("recorded")).toObject().value(QStringLiteral("torch")).toString().isEmpty());
    QJsonObject recorded = file.value(QStringLiteral("recorded")).toObject().value(QStringLiteral("numerics")).toObject();
    QJsonObject replayed = file.value(QStringLiteral("replay")).toObject().value(QStringLiteral("numerics")).toObject();
    recorded.remove(QStringLiteral("intra_op_threads"));
    replayed.remove(QStringLiteral("intra_op_threads"));
    QCOMPARE(recorded, replayed);
    qInfo("calibrated 1 -> 2 intra-op threads: %s", qPrintable(QString::fromUtf8(QJsonDocument(json.value(QStringLiteral("kinds")).toArray()).toJson(QJsonDocument::Compact))));

    // It refuses to replace the file without --overwrite.
    result = runAudit({QStringLiteral("calibrate"), path("a.zkaudit"), QStringLiteral("--out"), calibration_, QStringLiteral("--quiet")});
    QVERIFY2(result.exitCode == 2 && result.err.contains(QStringLiteral("--overwrite")), qPrintable(result.describe()));
}

void TestCalibrateCli::honestTapeIsNeverDivergedInTheCalibratedEnvelope()
{
    const QJsonObject calibration = jsonFile(calibration_);
    QVERIFY2(!calibration.isEmpty(), "calibrationMeasuresThePair wrote no calibration");
    const Result result = replay(path("b.zkaudit"), {QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--calibration"), calibration_});
    QVERIFY2(!result.crashed && result.exitCode != 2, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("numeric_regime")).toString(), QStringLiteral("cross-environment"));
    QCOMPARE(json.value(QStringLiteral("envelope_source")).toString(), QStringLiteral("calibrated"));
    QCOMPARE(json.value(QStringLiteral("envelope")).toDouble(), calibration.value(QStringLiteral("envelope")).toDouble());
    const QJsonObject used = json.value(QStringLiteral("calibration")).toObject();
    QVERIFY(used.value(QStringLiteral("used")).toBool());
    QCOMPARE(used.value(QStringLiteral("sha256")).toString().size(), 64);
    const QJsonObject verdicts = json.value(QStringLiteral("verdicts")).toObject();
    QVERIFY2(verdicts.value(QStringLiteral("diverged")).toInt() == 0, qPrintable(result.describe()));
    QCOMPARE(json.value(QStringLiteral("replayed")).toInt(), kSteps.toInt());
    // Honest: unverifiable only where conv1.bias's noise gradient reaches, never the trainer's failure.
    QCOMPARE(json.value(QStringLiteral("trainers_failures")).toInt(), 0);
    for (const QJsonValue& failure : json.value(QStringLiteral("first_failures")).toArray())
        QVERIFY2(failure.toObject().value(QStringLiteral("detail")).toString().startsWith(QStringLiteral("unverifiable across numerical environments")),
                 qPrintable(failure.toObject().value(QStringLiteral("detail")).toString()));

    // The case keeps which envelope applied and why; the report carries it.
    Result info = runAudit({QStringLiteral("info"), path("b.zkaudit"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(info.exitCode == 0, qPrintable(info.describe()));
    QVERIFY2(info.out.contains(QStringLiteral("\"envelope_source\": \"calibrated\"")), qPrintable(info.out));
    const QString reportPath = path("b-report.json");
    const Result report = runAudit({QStringLiteral("report"), path("b.zkaudit"), QStringLiteral("--out"), reportPath, QStringLiteral("--quiet")});
    QVERIFY2(report.exitCode == 0, qPrintable(report.describe()));
    const QJsonObject replayed = jsonFile(reportPath).value(QStringLiteral("replay")).toObject();
    QCOMPARE(replayed.value(QStringLiteral("envelope_source")).toString(), QStringLiteral("calibrated"));
    QCOMPARE(replayed.value(QStringLiteral("calibration")).toObject().value(QStringLiteral("sha256")).toString(), used.value(QStringLiteral("sha256")).toString());
    QVERIFY2(replayed.value(QStringLiteral("envelope_note")).toString().startsWith(QStringLiteral("calibrated: ")),
             qPrintable(replayed.value(QStringLiteral("envelope_note")).toString()));
    // The redo command reproduces the envelope without the file.
    const QString redo = replayed.value(QStringLiteral("redo_command")).toString();
    QVERIFY2(redo.contains(QStringLiteral("envelope=")), qPrintable(redo));

    // The text output says where the envelope came from.
    const Result text = runAudit({QStringLiteral("replay"), path("b.zkaudit"), QStringLiteral("--select"), QStringLiteral("ids:0"),
                                  QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--calibration"), calibration_,
                                  QStringLiteral("--quiet")});
    QVERIFY2(text.out.contains(QStringLiteral("envelope (calibrated): calibrated: ")), qPrintable(text.describe()));
}

// Issue 48, item 3: the envelope was 4 x the largest ratio measured on the calibration tapes,
// which the trainer records; one poisoned row made an envelope under which a x1.5 edit of the
// audited tape passed. A calibration narrows the envelope and never widens it: what calibrate
// writes from the poisoned tape, replay accepts, caps at the envelope it would use without it,
// says so, and the tampered tape stays diverged at its transaction.
void TestCalibrateCli::poisonedCalibrationWidensNothing()
{
    const QString poisoned = path("poisoned.calibration.json");
    const Result calibrated = runAudit({QStringLiteral("calibrate"), path("poisoned.zkaudit"), QStringLiteral("--out"), poisoned,
                                        QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--json"), QStringLiteral("--quiet")});
    QVERIFY2(!calibrated.crashed && calibrated.exitCode == 0, qPrintable(calibrated.describe()));
    const double written = jsonObject(calibrated.out).value(QStringLiteral("envelope")).toDouble();
    QVERIFY2(written > 1024.0, qPrintable(calibrated.describe()));  // the poison is in the file
    const Result result = replay(path("tampered.zkaudit"), {QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--calibration"), poisoned});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));  // accepted (not 2), and failed
    const QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("envelope_source")).toString(), QStringLiteral("calibrated"));
    QCOMPARE(json.value(QStringLiteral("envelope")).toDouble(), 1024.0);
    QVERIFY2(json.value(QStringLiteral("envelope_note")).toString().contains(QStringLiteral("capped at 1024")),
             qPrintable(json.value(QStringLiteral("envelope_note")).toString()));
    bool foundAtFive = false;
    for (const QJsonValue& value : json.value(QStringLiteral("first_failures")).toArray())
        foundAtFive = foundAtFive || (value.toObject().value(QStringLiteral("index")).toInt() == 5 &&
                                      value.toObject().value(QStringLiteral("verdict")).toString() == QStringLiteral("diverged"));
    QVERIFY2(foundAtFive, qPrintable(result.describe()));
}

void TestCalibrateCli::tamperedTapeIsDivergedAtItsTransaction()
{
    const Result result = replay(path("tampered.zkaudit"), {QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--calibration"), calibration_});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("envelope_source")).toString(), QStringLiteral("calibrated"));
    QVERIFY(json.value(QStringLiteral("failed")).toBool());
    bool foundAtFive = false;
    for (const QJsonValue& value : json.value(QStringLiteral("first_failures")).toArray()) {
        const QJsonObject failure = value.toObject();
        const int index = failure.value(QStringLiteral("index")).toInt();
        const QString verdict = failure.value(QStringLiteral("verdict")).toString();
        // Nothing before the alteration diverged.
        if (index < 5)
            QVERIFY2(verdict != QStringLiteral("diverged"), qPrintable(failure.value(QStringLiteral("detail")).toString()));
        if (index == 5) {
            QCOMPARE(verdict, QStringLiteral("diverged"));
            QVERIFY2(failure.value(QStringLiteral("detail")).toString().contains(QStringLiteral("fc.weight delta")),
                     qPrintable(failure.value(QStringLiteral("detail")).toString()));
            // The altered delta was judged against the calibrated envelope, and is far outside it.
            for (const QJsonValue& c : failure.value(QStringLiteral("not_exact")).toArray())
                if (c.toObject().value(QStringLiteral("tensor")).toString() == QStringLiteral("fc.weight") &&
                    c.toObject().value(QStringLiteral("slot")).toString() == QStringLiteral("delta")) {
                    QCOMPARE(c.toObject().value(QStringLiteral("verdict")).toString(), QStringLiteral("diverged"));
                    QVERIFY(c.toObject().value(QStringLiteral("envelope_ratio")).toDouble() > json.value(QStringLiteral("envelope")).toDouble());
                    qInfo("the altered delta: %g u x the model's update, the calibrated envelope %g",
                          c.toObject().value(QStringLiteral("envelope_ratio")).toDouble(), json.value(QStringLiteral("envelope")).toDouble());
                }
            foundAtFive = true;
        }
    }
    QVERIFY2(foundAtFive, qPrintable(result.describe()));
}

void TestCalibrateCli::longHonestTapeIsNeverDivergedAcrossThreads_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<int>("steps");
    // Before the amplified-rounding probe, this machine called transaction 215 of the first
    // diverged (its conv1.weight delta 5,140 u x the model's update apart); before the grid
    // rule, transactions 643 and 994 of the second (bn1.weight's delta one ulp of the weight
    // apart, 1,040 u x the model's update).
    QTest::newRow("600 steps") << QStringLiteral("long") << 600;
    QTest::newRow("1200 steps") << QStringLiteral("longer") << 1200;
}

void TestCalibrateCli::longHonestTapeIsNeverDivergedAcrossThreads()
{
    QFETCH(QString, name);
    QFETCH(int, steps);
    // The default envelope, no calibration: recorded with 1 intra-op thread, replayed with 2.
    // Whichever transactions an ulp decides on another CPU, none may be called diverged.
    const Result result = replay(path(name.toStdString() + ".zkaudit"), {QStringLiteral("--intra-op-threads"), QStringLiteral("2")});
    QVERIFY2(!result.crashed && result.exitCode != 2, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("numeric_regime")).toString(), QStringLiteral("cross-environment"));
    QCOMPARE(json.value(QStringLiteral("replayed")).toInt(), steps);
    QVERIFY2(json.value(QStringLiteral("verdicts")).toObject().value(QStringLiteral("diverged")).toInt() == 0, qPrintable(result.describe()));
    QCOMPARE(json.value(QStringLiteral("trainers_failures")).toInt(), 0);
    int amplified = 0;
    for (const QJsonValue& failure : json.value(QStringLiteral("first_failures")).toArray()) {
        const QString detail = failure.toObject().value(QStringLiteral("detail")).toString();
        QVERIFY2(detail.startsWith(QStringLiteral("unverifiable across numerical environments")), qPrintable(detail));
        amplified += detail.contains(QStringLiteral("rounding is amplified here")) ? 1 : 0;
    }
    qInfo("of the first failures listed, %d made unverifiable by the amplified-rounding probe", amplified);
}

void TestCalibrateCli::amplifiedRoundingExcusesNoTampering()
{
    // The altered delta fails the envelope, so the probe replays the segment a second time:
    // the two replays agree far better than either does with the tape, and it stays diverged.
    const Result result = replay(path("long-tampered.zkaudit"), {QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--select"),
                                                                  QStringLiteral("range:396-407")});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    bool found = false;
    for (const QJsonValue& value : json.value(QStringLiteral("first_failures")).toArray()) {
        const QJsonObject failure = value.toObject();
        const int index = failure.value(QStringLiteral("index")).toInt();
        const QString detail = failure.value(QStringLiteral("detail")).toString();
        if (index < 400)
            QVERIFY2(failure.value(QStringLiteral("verdict")).toString() != QStringLiteral("diverged"), qPrintable(detail));
        if (index != 400)
            continue;
        found = true;
        QCOMPARE(failure.value(QStringLiteral("verdict")).toString(), QStringLiteral("diverged"));
        QVERIFY2(detail.contains(QStringLiteral("fc.weight delta")), qPrintable(detail));
        QVERIFY2(detail.contains(QStringLiteral("is beyond what rounding does here")), qPrintable(detail));
    }
    QVERIFY2(found, qPrintable(result.describe()));
}

void TestCalibrateCli::anotherPairFallsBackNamingWhatDiffers()
{
    // Three threads: the replay side of the pair differs from the calibration's (two).
    const Result result = replay(path("b.zkaudit"), {QStringLiteral("--select"), QStringLiteral("ids:0"), QStringLiteral("--intra-op-threads"),
                                                     QStringLiteral("3"), QStringLiteral("--calibration"), calibration_});
    QVERIFY2(!result.crashed && result.exitCode != 2, qPrintable(result.describe()));
    const QJsonObject json = jsonObject(result.out);
    QCOMPARE(json.value(QStringLiteral("envelope_source")).toString(), QStringLiteral("default"));
    QCOMPARE(json.value(QStringLiteral("envelope")).toDouble(), 1024.0);
    QVERIFY(!json.value(QStringLiteral("calibration")).toObject().value(QStringLiteral("used")).toBool());
    const QString note = json.value(QStringLiteral("envelope_note")).toString();
    QVERIFY2(note.contains(QStringLiteral("replay.intra_op_threads \"2\" -> \"3\"")) && note.contains(QStringLiteral("default envelope 1024")),
             qPrintable(note));

    // --calibration and an envelope of --tolerance contradict each other.
    const Result both = replay(path("b.zkaudit"), {QStringLiteral("--calibration"), calibration_, QStringLiteral("--tolerance"), QStringLiteral("envelope=5")});
    QVERIFY2(both.exitCode == 2 && both.err.contains(QStringLiteral("choose one")), qPrintable(both.describe()));
}

void TestCalibrateCli::tooFewSamplesAreRefusedForUse()
{
    // One transaction of a segment of 12 is far fewer than 100 comparisons: written, not usable.
    const QString few = path("few.calibration.json");
    const Result result = runAudit({QStringLiteral("calibrate"), path("a.zkaudit"), QStringLiteral("--out"), few, QStringLiteral("--select"),
                                    QStringLiteral("ids:0"), QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--json"),
                                    QStringLiteral("--quiet")});
    QVERIFY2(!result.crashed && result.exitCode == 1, qPrintable(result.describe()));
    QVERIFY(!jsonObject(result.out).value(QStringLiteral("usable")).toBool());
    const Result used = replay(path("b.zkaudit"), {QStringLiteral("--select"), QStringLiteral("ids:0"), QStringLiteral("--intra-op-threads"),
                                                   QStringLiteral("2"), QStringLiteral("--calibration"), few});
    const QJsonObject json = jsonObject(used.out);
    QCOMPARE(json.value(QStringLiteral("envelope_source")).toString(), QStringLiteral("default"));
    QVERIFY2(json.value(QStringLiteral("envelope_note")).toString().contains(QStringLiteral("fewer than the 100")), qPrintable(used.describe()));
}

void TestCalibrateCli::sameEnvironmentHasNothingToCalibrate()
{
    const Result result = runAudit({QStringLiteral("calibrate"), path("a.zkaudit"), QStringLiteral("--out"), path("same.json"), QStringLiteral("--select"),
                                    QStringLiteral("ids:0"), QStringLiteral("--intra-op-threads"), QStringLiteral("1"), QStringLiteral("--quiet")});
    QVERIFY2(!result.crashed && result.exitCode == 2 && result.err.contains(QStringLiteral("same-environment")), qPrintable(result.describe()));
    QVERIFY(!QFile::exists(path("same.json")));
}

void TestCalibrateCli::hostileCalibrationIsAnInputError_data()
{
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("named");
    QFile file(calibration_);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const QByteArray good = file.readAll();
    QJsonObject document = QJsonDocument::fromJson(good).object();
    auto withRatio = [&](const char* member, const QJsonValue& value) {
        QJsonObject edited = document;
        QJsonArray kinds = edited.value(QStringLiteral("kinds")).toArray();
        QJsonObject kind = kinds.at(0).toObject();
        QJsonObject ratio = kind.value(QStringLiteral("ratio")).toObject();
        ratio.insert(QLatin1String(member), value);
        kind.insert(QStringLiteral("ratio"), ratio);
        kinds.replace(0, kind);
        edited.insert(QStringLiteral("kinds"), kinds);
        return QJsonDocument(edited).toJson();
    };
    QTest::newRow("truncated") << good.left(good.size() / 3) << "not valid JSON";
    QTest::newRow("negative quantile") << withRatio("p50", -1.0) << "kinds[0].ratio.p50";
    QTest::newRow("NaN quantile") << withRatio("p90", QStringLiteral("NaN")) << "kinds[0].ratio.p90";
    QTest::newRow("huge quantile") << withRatio("max", 1e300) << "kinds[0].ratio.max";
    QTest::newRow("empty") << QByteArray() << "not valid JSON";
}

void TestCalibrateCli::hostileCalibrationIsAnInputError()
{
    QFETCH(QByteArray, text);
    QFETCH(QString, named);
    const QString hostile = path("hostile.calibration.json");
    writeFile(hostile, text);
    const Result result = replay(path("b.zkaudit"), {QStringLiteral("--intra-op-threads"), QStringLiteral("2"), QStringLiteral("--calibration"), hostile});
    QVERIFY2(!result.crashed && result.exitCode == 2, qPrintable(result.describe()));
    QVERIFY2(result.err.contains(hostile) && result.err.contains(named), qPrintable(result.describe()));
    QVERIFY(result.out.isEmpty());
}

QTEST_GUILESS_MAIN(TestCalibrateCli)
#include "test_calibrate_cli.moc"
