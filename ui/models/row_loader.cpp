#include "models/row_loader.h"

#include <QMutexLocker>

#include <exception>

#include "zkdv/store/case_store.h"

namespace zkdv::ui {

RowLoader::RowLoader() = default;

RowLoader::~RowLoader() = default;

void RowLoader::load(const QString& casePath, qint64 tapeId, quint64 generation, const TransactionTable::View& view, int window, int rows)
{
    QString problem;
    try {
        if (!table_ || casePath != casePath_ || tapeId != tapeId_) {
            table_.reset();
            case_ = std::make_unique<CaseStore>(casePath.toStdString(), CaseStore::Access::ReadOnly);
            table_ = std::make_unique<TransactionTable>(case_->database(), tapeId);
            casePath_ = casePath;
            tapeId_ = tapeId;
            generation_ = 0;
        }
        if (generation != generation_) {
            // The model re-read, sorted or filtered: the same here, on this connection.
            table_->refresh();
            table_->setView(view);
            generation_ = generation;
        }
        std::vector<TransactionRow> result = table_->rows(static_cast<std::uint64_t>(window) * static_cast<std::uint64_t>(rows),
                                                          static_cast<std::uint64_t>(rows));
        QMutexLocker lock(&mutex_);
        // Only the newest generation's windows are wanted.
        for (auto it = ready_.begin(); it != ready_.end();)
            it = it->first.first < generation ? ready_.erase(it) : std::next(it);
        ready_[{generation, window}] = std::move(result);
    } catch (const std::exception& error) {
        table_.reset();
        case_.reset();
        problem = QString::fromStdString(error.what());
    }
    Q_EMIT loaded(generation, window, problem);
}

std::vector<TransactionRow> RowLoader::take(quint64 generation, int window)
{
    QMutexLocker lock(&mutex_);
    auto found = ready_.find({generation, window});
    if (found == ready_.end())
        return {};
    std::vector<TransactionRow> rows = std::move(found->second);
    ready_.erase(found);
    return rows;
}

}  // namespace zkdv::ui
