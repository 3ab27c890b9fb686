#include "jobs/background_job.h"

#include <QThread>

#include "zkdv/util/error.h"

namespace zkdv::ui {

BackgroundJob::BackgroundJob(QString title, Interruption interruption, Work work, QObject* parent)
    : QObject(parent), title_(std::move(title)), interruption_(interruption), work_(std::move(work))
{
}

QString BackgroundJob::interruptLabel() const { return interruption_ == Interruption::Stop ? tr("Stop") : tr("Cancel"); }

QString BackgroundJob::interruptToolTip() const
{
    return interruption_ == Interruption::Stop ? tr("Stop the running job (Esc); what it finished is kept")
                                               : tr("Cancel the running job (Esc); nothing of it is kept");
}

BackgroundJob::~BackgroundJob()
{
    if (thread_) {
        cancelled_ = true;
        thread_->wait();
        delete thread_;
    }
}

void BackgroundJob::start()
{
    running_ = true;
    clock_.start();
    thread_ = QThread::create([this] {
        bool ok = true;
        QString message;
        try {
            message = work_(*this);
        } catch (const OperationCancelled&) {
            ok = false;
            message = title_ + QStringLiteral(": cancelled");
        } catch (const std::exception& error) {
            ok = false;
            message = title_ + QStringLiteral(": ") + QString::fromStdString(error.what());
        }
        QMetaObject::invokeMethod(
            this,
            [this, ok, message] {
                running_ = false;
                Q_EMIT finished(ok, message);
            },
            Qt::QueuedConnection);
    });
    thread_->start();
}

void BackgroundJob::cancel() { cancelled_ = true; }

double BackgroundJob::etaSeconds() const
{
    const std::uint64_t done = done_, total = total_;
    const double elapsed = clock_.isValid() ? clock_.elapsed() / 1000.0 : 0.0;
    if (done == 0 || total <= done || elapsed < 0.5)
        return -1;
    return elapsed * static_cast<double>(total - done) / static_cast<double>(done);
}

void BackgroundJob::report(std::uint64_t done, std::uint64_t total, std::string_view phase)
{
    done_ = done;
    total_ = total;
    // At most ~20 updates a second reach the window, whatever the core's reporting rate.
    const qint64 now = clock_.elapsed();
    if (done < total && now - lastReport_ < 50)
        return;
    lastReport_ = now;
    const QString text = QString::fromUtf8(phase.data(), static_cast<int>(phase.size()));
    QMetaObject::invokeMethod(
        this, [this, done, total, text] { Q_EMIT progressed(done, total, text); }, Qt::QueuedConnection);
}

}  // namespace zkdv::ui
