#pragma once
// Reads windows of the transaction table on a thread of its own, over its own read-only
// connection, so that scrolling a million rows never waits for SQLite (DB Browser for
// SQLite's row loader is the model). The table model asks for windows and takes the rows
// when loaded() says they are in.

#include <QMutex>
#include <QObject>
#include <QString>

#include <map>
#include <memory>
#include <vector>

#include "zkdv/store/transaction_table.h"

namespace zkdv {
class CaseStore;
}

namespace zkdv::ui {

class RowLoader : public QObject {
    Q_OBJECT
public:
    RowLoader();
    ~RowLoader() override;

    // On the loader's thread: reads rows [window * rows, +rows) of tape `tapeId` of
    // `casePath` under `view`, then signals loaded(). `generation` names the model's state
    // the request was made in; a new generation re-reads the case (refresh) first.
    void load(const QString& casePath, qint64 tapeId, quint64 generation, const TransactionTable::View& view, int window, int rows);
    // On any thread: the rows of a window loaded(), once (empty when unknown).
    std::vector<TransactionRow> take(quint64 generation, int window);

Q_SIGNALS:
    void loaded(quint64 generation, int window, const QString& problem);

private:
    QString casePath_;
    qint64 tapeId_ = 0;
    quint64 generation_ = 0;
    std::unique_ptr<CaseStore> case_;
    std::unique_ptr<TransactionTable> table_;

    QMutex mutex_;
    std::map<std::pair<quint64, int>, std::vector<TransactionRow>> ready_;
};

}  // namespace zkdv::ui
