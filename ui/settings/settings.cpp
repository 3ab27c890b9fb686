#include "settings/settings.h"

#include <QDir>
#include <QFileInfo>
#include <QSettings>

namespace zkdv::ui {

namespace {
const QString kRecentFiles = QStringLiteral("files/recent");
const QString kGeometry = QStringLiteral("window/geometry");
const QString kState = QStringLiteral("window/state");
const QString kColumns = QStringLiteral("table/columns");
const QString kDevice = QStringLiteral("replay/device");
const QString kSampleSpec = QStringLiteral("replay/sample");
const QString kTopQ = QStringLiteral("replay/topq");
const QString kReplayCalibration = QStringLiteral("replay/calibration");
const QString kDatasetFolder = QStringLiteral("provenance/datasetFolder");
const QString kModelFolder = QStringLiteral("provenance/modelFolder");
}  // namespace

QStringList Settings::recentFiles()
{
    QStringList files;
    for (const QString& file : QSettings().value(kRecentFiles).toStringList())
        if (QFileInfo::exists(file))
            files << file;
    return files;
}

void Settings::addRecentFile(const QString& path)
{
    const QString absolute = QFileInfo(path).absoluteFilePath();
    QStringList files = recentFiles();
    files.removeAll(absolute);
    files.prepend(absolute);
    while (files.size() > kMaxRecentFiles)
        files.removeLast();
    QSettings().setValue(kRecentFiles, files);
}

void Settings::clearRecentFiles() { QSettings().remove(kRecentFiles); }

void Settings::removeRecentFile(const QString& path)
{
    QStringList files = recentFiles();
    files.removeAll(QFileInfo(path).absoluteFilePath());
    QSettings().setValue(kRecentFiles, files);
}

QByteArray Settings::windowGeometry() { return QSettings().value(kGeometry).toByteArray(); }
void Settings::setWindowGeometry(const QByteArray& geometry) { QSettings().setValue(kGeometry, geometry); }
QByteArray Settings::windowState() { return QSettings().value(kState).toByteArray(); }
void Settings::setWindowState(const QByteArray& state) { QSettings().setValue(kState, state); }

QString Settings::replayDevice() { return QSettings().value(kDevice, QStringLiteral("cpu")).toString(); }
void Settings::setReplayDevice(const QString& device) { QSettings().setValue(kDevice, device); }
QString Settings::sampleSpec() { return QSettings().value(kSampleSpec, QStringLiteral("random:100")).toString(); }
void Settings::setSampleSpec(const QString& spec) { QSettings().setValue(kSampleSpec, spec); }
QString Settings::replayCalibration() { return QSettings().value(kReplayCalibration, QString()).toString(); }
void Settings::setReplayCalibration(const QString& path) { QSettings().setValue(kReplayCalibration, path); }
int Settings::topQ() { return QSettings().value(kTopQ, 10).toInt(); }
void Settings::setTopQ(int q) { QSettings().setValue(kTopQ, q); }
QString Settings::datasetFolder() { return QSettings().value(kDatasetFolder, QDir::homePath()).toString(); }
void Settings::setDatasetFolder(const QString& folder) { QSettings().setValue(kDatasetFolder, folder); }
QString Settings::modelFolder() { return QSettings().value(kModelFolder, QDir::homePath()).toString(); }
void Settings::setModelFolder(const QString& folder) { QSettings().setValue(kModelFolder, folder); }

QByteArray Settings::transactionColumns() { return QSettings().value(kColumns).toByteArray(); }

void Settings::setTransactionColumns(const QByteArray& state)
{
    if (state.isEmpty())
        QSettings().remove(kColumns);
    else
        QSettings().setValue(kColumns, state);
}

}  // namespace zkdv::ui
