#pragma once
// The workstation's settings: every key and its default in one place, stored in QSettings.

#include <QByteArray>
#include <QString>
#include <QStringList>

namespace zkdv::ui {

class Settings {
public:
    static constexpr int kMaxRecentFiles = 8;

    // Most recent first; files that no longer exist are pruned on reading.
    static QStringList recentFiles();
    static void addRecentFile(const QString& path);
    static void clearRecentFiles();
    static void removeRecentFile(const QString& path);

    static QByteArray windowGeometry();
    static void setWindowGeometry(const QByteArray& geometry);
    static QByteArray windowState();
    static void setWindowState(const QByteArray& state);

    // The transaction table's columns (order, widths, hidden ones) as QHeaderView saves
    // them; empty: the default layout.
    static QByteArray transactionColumns();
    static void setTransactionColumns(const QByteArray& state);

    static QString replayDevice();  // default "cpu"
    static void setReplayDevice(const QString& device);
    static QString sampleSpec();    // default "random:100"
    static void setSampleSpec(const QString& spec);
    static int topQ();              // default 10
    // The envelope calibration replays use across environments (zkdv-audit calibrate);
    // default "": none, the default envelope.
    static QString replayCalibration();
    static void setReplayCalibration(const QString& path);
    static void setTopQ(int q);

    // Where the last dataset commitment (and its data) and the last model were picked from,
    // for the next Check Dataset Commitment… and Match Weights…; default the home folder.
    static QString datasetFolder();
    static void setDatasetFolder(const QString& folder);
    static QString modelFolder();
    static void setModelFolder(const QString& folder);
};

}  // namespace zkdv::ui
