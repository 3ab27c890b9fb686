#include "case_queries.h"

#include <QFile>

#include "zkdv/store/case_store.h"
#include "zkdv/store/tape_location.h"
#include "zkdv/workflow/replay_precheck.h"

namespace zkdv::ui {

namespace {

CaseStore readCase(const QString& casePath) { return CaseStore(casePath.toStdString(), CaseStore::Access::ReadOnly); }

}  // namespace

void prepareCase(const QString& casePath) { CaseStore(casePath.toStdString(), CaseStore::Access::ReadWrite); }

quint64 tapeTransactionCount(const QString& casePath, qint64 tapeId)
{
    const std::optional<CaseTape> tape = readCase(casePath).tape(tapeId);
    return tape ? tape->transactionCount : 0;
}

QList<MovedTape> movedTapes(const QString& casePath)
{
    CaseStore store = readCase(casePath);
    QList<MovedTape> moved;
    for (const CaseTape& tape : misplacedTapes(store))
        moved.append({tape.id, QString::fromStdString(tape.path), QString::fromStdString(tapeFileProblem(tape))});
    return moved;
}

QString tapeFileProblemOf(const QString& casePath, qint64 tapeId)
{
    const std::optional<CaseTape> tape = readCase(casePath).tape(tapeId);
    return tape ? QString::fromStdString(tapeFileProblem(*tape)) : QString();
}

QString whyNothingToVerify(const QString& casePath, qint64 tapeId)
{
    const std::optional<CaseTape> tape = readCase(casePath).tape(tapeId);
    return tape ? QString::fromStdString(whyReplayVerifiesNothing(*tape)) : QString();
}

bool caseHoldsNoTape(const QString& casePath)
{
    try {
        return readCase(casePath).tapes().empty();
    } catch (const std::exception&) {
        return false;
    }
}

void removeCaseFiles(const QString& casePath)
{
    for (const QString& suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
        QFile::remove(casePath + suffix);
}

}  // namespace zkdv::ui
