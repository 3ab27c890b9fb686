// The real workstation window under Xvfb: loads the demo case, replays a sample, and saves a
// screenshot PNG in the build tree (the one docs/ shows), which must not be blank.

#include <QtTest>

#include <QImage>
#include <QProcess>

#include "temp_dir.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/store/case_store.h"

using namespace zkdv;

class TestScreenshot : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void helpAndNoDisplayNeedNoWindow();
    void realWindowUnderXvfb();

private:
    test::TempDir dir_;
};

void TestScreenshot::helpAndNoDisplayNeedNoWindow()
{
    QProcessEnvironment headless = QProcessEnvironment::systemEnvironment();
    for (const char* name : {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"})
        headless.remove(QString::fromLatin1(name));
    QProcess help;
    help.setProcessEnvironment(headless);
    help.start(QStringLiteral(ZKDV_WORKSTATION_EXECUTABLE), {QStringLiteral("--help")});
    QVERIFY(help.waitForFinished(60000));
    QCOMPARE(help.exitCode(), 0);
    QVERIFY(QString::fromUtf8(help.readAllStandardOutput()).contains(QStringLiteral("--replay")));

    QProcess noDisplay;
    noDisplay.setProcessEnvironment(headless);
    noDisplay.start(QStringLiteral(ZKDV_WORKSTATION_EXECUTABLE), {QString::fromStdString(dir_.file("none.zkaudit"))});
    QVERIFY(noDisplay.waitForFinished(60000));
    QCOMPARE(noDisplay.exitStatus(), QProcess::NormalExit);
    QCOMPARE(noDisplay.exitCode(), 2);
    QVERIFY(QString::fromUtf8(noDisplay.readAllStandardError()).contains(QStringLiteral("no display")));
    QVERIFY(!QFileInfo::exists(QString::fromStdString(dir_.file("none.zkaudit"))));
}

void TestScreenshot::realWindowUnderXvfb()
{
    QVERIFY2(QFileInfo(QStringLiteral("/usr/bin/xvfb-run")).isExecutable(), "xvfb-run is missing: install the xvfb package");
    const std::string tape = dir_.file("demo.zkdv"), casePath = dir_.file("demo.zkaudit");
    CnnDemoOptions options;
    options.steps = 240;
    runCnnDemo(tape, options);
    CaseStore(casePath, CaseStore::Access::ReadWrite).ingestTape(tape);

    const QString screenshot = QStringLiteral(ZKDV_SCREENSHOT_PATH);
    QFile::remove(screenshot);
    QProcess process;
    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("xcb"));
    process.setProcessEnvironment(environment);
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(QStringLiteral("/usr/bin/xvfb-run"),
                  {QStringLiteral("-a"), QStringLiteral("-s"), QStringLiteral("-screen 0 1600x1000x24"), QStringLiteral(ZKDV_WORKSTATION_EXECUTABLE),
                   QString::fromStdString(casePath), QStringLiteral("--replay"), QStringLiteral("random:24"), QStringLiteral("--seed"),
                   QStringLiteral("1"), QStringLiteral("--screenshot"), screenshot});
    QVERIFY(process.waitForFinished(300000));
    const QString output = QString::fromUtf8(process.readAll());
    QVERIFY2(process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0, qPrintable(output));

    QImage image(screenshot);
    QVERIFY2(!image.isNull(), qPrintable(output));
    QVERIFY(image.width() >= 800 && image.height() >= 500);
    // A blank or single-colour window would have a handful of colours.
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 3)
        for (int x = 0; x < image.width(); x += 3)
            colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 50, qPrintable(QStringLiteral("%1 colours").arg(colours.size())));
}

QTEST_GUILESS_MAIN(TestScreenshot)
#include "test_screenshot.moc"
