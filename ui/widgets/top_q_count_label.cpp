#include "widgets/top_q_count_label.h"

#include <QCoreApplication>
#include <QPointer>
#include <QThreadPool>

#include <mutex>

#include "zkdv/audit/selection.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"

namespace zkdv::ui {

struct TopQCountLabel::Shared {
    std::mutex mutex;
    std::shared_ptr<const SelectionInput> input;
};

TopQCountLabel::TopQCountLabel(QWidget* parent) : QLabel(parent)
{
    setObjectName(QStringLiteral("topQCount"));
    setWordWrap(true);
}

TopQCountLabel::~TopQCountLabel() = default;  // a count still running posts to a QPointer

void TopQCountLabel::setCase(const QString& casePath, qint64 tapeId)
{
    casePath_ = casePath;
    tapeId_ = tapeId;
    shared_ = std::make_shared<Shared>();
    count_.reset();
    if (q_ > 0 && !running_)
        start();  // else finished() starts again for this case
}

void TopQCountLabel::setQ(int q)
{
    if (q == q_ && (count_ || running_))
        return;
    q_ = q;
    count_.reset();
    setText(tr("Counting the transactions top-%1 replays…").arg(q));
    if (!running_)
        start();  // else finished() starts the newest q
}

void TopQCountLabel::start()
{
    if (casePath_.isEmpty() || tapeId_ == 0 || q_ <= 0)
        return;
    running_ = true;
    const std::string path = casePath_.toStdString();
    const std::int64_t tape = tapeId_;
    const int q = q_;
    QPointer<TopQCountLabel> self(this);
    QThreadPool::globalInstance()->start([self, shared = shared_, path, tape, q] {
        std::optional<quint64> count;
        quint64 transactions = 0;
        QString problem;
        try {
            std::shared_ptr<const SelectionInput> input;
            {
                std::lock_guard<std::mutex> lock(shared->mutex);
                if (!shared->input) {
                    CaseStore store(path, CaseStore::Access::ReadOnly);
                    shared->input = std::make_shared<const SelectionInput>(ReplayStore(store.database()).selectionInput(tape, true));
                }
                input = shared->input;
            }
            SelectionSpec spec;
            spec.kind = SelectionSpec::Kind::TopQ;
            spec.count = static_cast<std::uint64_t>(q);
            count = selectTransactions(spec, 0, *input).size();
            transactions = input->transactionCount;
        } catch (const std::exception& error) {
            problem = QString::fromUtf8(error.what());
        }
        // To the GUI thread, through the application (which outlives the label): the label
        // is looked at only there.
        QMetaObject::invokeMethod(QCoreApplication::instance(), [self, shared, q, count, transactions, problem] {
            if (self && self->shared_ == shared)  // not counted for a case since replaced
                self->finished(q, count, transactions, problem);
            else if (self)
                self->finished(-1, std::nullopt, 0, QString());
        }, Qt::QueuedConnection);
    });
}

void TopQCountLabel::finished(int q, std::optional<quint64> count, quint64 transactions, const QString& problem)
{
    running_ = false;
    if (q != q_) {
        start();  // q changed while this one was counted: count the newest
        return;
    }
    if (!count) {
        setText(tr("The transactions top-%1 replays cannot be counted: %2").arg(q).arg(problem));
        return;
    }
    count_ = count;
    setText(tr("Top-%1 selects %L2 of %L3 transactions (%4 %); each is replayed from its nearest snapshot.")
                .arg(q)
                .arg(*count)
                .arg(transactions)
                .arg(transactions ? QString::number(100.0 * static_cast<double>(*count) / static_cast<double>(transactions), 'g', 3)
                                  : QStringLiteral("0")));
    Q_EMIT counted(q, *count, transactions);
}

}  // namespace zkdv::ui
