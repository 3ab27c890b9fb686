// zkdv-workstation: the Qt desktop audit workstation.

#include <QApplication>
#include <QCommandLineParser>
#include <QTimer>

#include "jobs/background_job.h"
#include "main_window.h"
#include "zkdv/version.h"

namespace {

struct Options {
    QCommandLineOption replay{QStringLiteral("replay"), QStringLiteral("After loading, replay SPEC (e.g. random:100)."), QStringLiteral("SPEC")};
    QCommandLineOption seed{QStringLiteral("seed"), QStringLiteral("Seed of --replay (default: drawn from the operating system when the replay starts)."),
                            QStringLiteral("S")};
    QCommandLineOption screenshot{QStringLiteral("screenshot"),
                                  QStringLiteral("When loading (and --replay) finished, save the window as PNG to FILE and quit."),
                                  QStringLiteral("FILE")};
};

void describe(QCommandLineParser& parser, const Options& options)
{
    parser.setApplicationDescription(QStringLiteral(
        "The ZKDV audit workstation: load verification tapes and sealed programs into an audit case, replay chosen\n"
        "transactions, chart the divergence, export reports. Files may be cases (*.zkaudit), tapes (*.zkdv), sealed\n"
        "programs or folders. Headless, use zkdv-audit."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("files"), QStringLiteral("A case, or tapes and sealed programs to ingest."), QStringLiteral("[FILE...]"));
    parser.addOption(options.replay);
    parser.addOption(options.seed);
    parser.addOption(options.screenshot);
}

void nameApplication()
{
    QCoreApplication::setOrganizationName(QStringLiteral("zkdv"));
    QCoreApplication::setApplicationName(QStringLiteral("zkdv-workstation"));
    QCoreApplication::setApplicationVersion(QString::fromLatin1(zkdv::kVersion));
}

}  // namespace

int main(int argc, char** argv)
{
    // --help and --version need no display: answer them before the GUI starts.
    for (int i = 1; i < argc; ++i) {
        const QByteArray argument(argv[i]);
        if (argument == "--help" || argument == "-h" || argument == "--help-all" || argument == "--version" || argument == "-v") {
            QCoreApplication app(argc, argv);
            nameApplication();
            QCommandLineParser parser;
            Options options;
            describe(parser, options);
            parser.process(app);
            return 0;
        }
    }
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
        fprintf(stderr, "zkdv-workstation: no display (neither DISPLAY nor WAYLAND_DISPLAY is set); use zkdv-audit on a machine without one\n");
        return 2;
    }
    QApplication app(argc, argv);
    nameApplication();
    QApplication::setDesktopFileName(QStringLiteral("org.zkdv.Workstation"));

    QCommandLineParser parser;
    Options cli;
    describe(parser, cli);
    const QCommandLineOption& replay = cli.replay;
    const QCommandLineOption& seed = cli.seed;
    const QCommandLineOption& screenshot = cli.screenshot;
    parser.process(app);
    std::optional<quint64> seedValue;
    if (parser.isSet(seed)) {
        bool seedOk = false;
        seedValue = parser.value(seed).toULongLong(&seedOk);
        if (!seedOk) {
            fprintf(stderr, "zkdv-workstation: --seed needs a non-negative integer, found '%s'\n", qPrintable(parser.value(seed)));
            return 2;
        }
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
