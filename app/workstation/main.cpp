// zkdv-workstation: the Qt desktop audit workstation.

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include "jobs/background_job.h"
#include "main_window.h"
#include "zkdv/version.h"

int main(int argc, char** argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("zkdv"));
    QApplication::setApplicationName(QStringLiteral("zkdv-workstation"));
    QApplication::setApplicationVersion(QString::fromLatin1(zkdv::kVersion));
    QApplication::setDesktopFileName(QStringLiteral("org.zkdv.Workstation"));

    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "The ZKDV audit workstation: load verification tapes and sealed programs into an audit case, replay chosen\n"
        "transactions, chart the divergence. Files may be cases (*.zkaudit), tapes (*.zkdv), sealed programs or folders."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("A case, or tapes and sealed programs to ingest."), QStringLiteral("[FILE...]"));
    const QCommandLineOption replay(QStringLiteral("replay"), QStringLiteral("After loading, replay SPEC (e.g. random:100)."), QStringLiteral("SPEC"));
    const QCommandLineOption seed(QStringLiteral("seed"), QStringLiteral("Seed of --replay (default 1)."), QStringLiteral("S"), QStringLiteral("1"));
    const QCommandLineOption screenshot(QStringLiteral("screenshot"),
                                        QStringLiteral("When loading (and --replay) finished, save the window as PNG to FILE and quit."),
                                        QStringLiteral("FILE"));
    parser.addOption(replay);
    parser.addOption(seed);
    parser.addOption(screenshot);
    parser.process(app);
    bool seedOk = false;
    const quint64 seedValue = parser.value(seed).toULongLong(&seedOk);
    if (!seedOk) {
        fprintf(stderr, "zkdv-workstation: --seed needs a non-negative integer, found '%s'\n", qPrintable(parser.value(seed)));
        return 2;
    }

    zkdv::ui::MainWindow window;
    window.show();
    const QStringList files = parser.positionalArguments();
    const QString replaySpec = parser.value(replay), screenshotPath = parser.value(screenshot);
    // Scripted steps: load, then replay, then screenshot, each when the previous job is done.
    auto takeScreenshot = [&] {
        if (screenshotPath.isEmpty())
            return;
        QTimer::singleShot(700, &window, [&] {
            const bool saved = window.grab().save(screenshotPath, "PNG");
            fprintf(stderr, "%s %s\n", saved ? "saved" : "could not save", qPrintable(screenshotPath));
            QApplication::exit(saved ? 0 : 1);
        });
    };
    int stage = 0;  // 0 loading, 1 replaying, 2 done
    QObject::connect(&window, &zkdv::ui::MainWindow::jobFinished, &window, [&](bool ok, const QString& message) {
        if (!ok && !screenshotPath.isEmpty())
            fprintf(stderr, "%s\n", qPrintable(message));
        if (stage == 0 && !replaySpec.isEmpty()) {
            stage = 1;
            if (window.startReplay(replaySpec, seedValue))
                return;
        }
        if (stage < 2) {
            stage = 2;
            takeScreenshot();
        }
    });
    QTimer::singleShot(0, &window, [&] {
        window.openPaths(files);
        if (window.currentJob() && window.currentJob()->isRunning())
            return;  // jobFinished drives the rest
        stage = replaySpec.isEmpty() ? 2 : 1;
        if (!replaySpec.isEmpty() && window.startReplay(replaySpec, seedValue))
            return;
        stage = 2;
        takeScreenshot();
    });
    return app.exec();
}
