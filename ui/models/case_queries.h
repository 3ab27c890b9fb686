#pragma once
// What the window asks the open case between jobs: short reads, each opening the case
// read-only on the GUI thread and throwing zkdv::Error with the reason when it cannot.

#include <QList>
#include <QString>

namespace zkdv::ui {

struct MovedTape {
    qint64 tapeId = 0;
    QString path;     // where the case expected it
    QString problem;  // tapeFileProblem()
};

// Creates the case when missing, or brings its schema up to date.
void prepareCase(const QString& casePath);
// The transactions tape `tapeId` holds (0 when it is not in the case).
quint64 tapeTransactionCount(const QString& casePath, qint64 tapeId);
// The case's tapes whose files are missing or changed since ingest.
QList<MovedTape> movedTapes(const QString& casePath);
// Why tape `tapeId`'s file cannot be replayed now ("" when it can).
QString tapeFileProblemOf(const QString& casePath, qint64 tapeId);
// Why a replay of tape `tapeId` would verify nothing ("" when it can verify).
QString whyNothingToVerify(const QString& casePath, qint64 tapeId);
// A case that holds no tape; false too when it cannot be read as a case (not ours to remove).
bool caseHoldsNoTape(const QString& casePath);
// Removes the case file with its SQLite side files (close it first).
void removeCaseFiles(const QString& casePath);

}  // namespace zkdv::ui
