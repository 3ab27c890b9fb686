#include "job_runner.h"

#include <QTimer>

#include <utility>

#include "background_job.h"

namespace zkdv::ui {

JobRunner::JobRunner(QObject* parent) : QObject(parent) {}

bool JobRunner::isBusy() const { return job_ && job_->isRunning(); }

QString JobRunner::busyText() const
{
    return tr("Busy: %1. Wait for it or cancel it (Esc) first.").arg(job_ ? job_->title() : QString());
}

bool JobRunner::start(BackgroundJob* job, Finish finish, bool readsOnly)
{
    if (isBusy()) {
        Q_EMIT refused(busyText());
        delete job;
        return false;
    }
    delete job_;
    job_ = job;
    job->setParent(this);
    connect(job, &BackgroundJob::finished, this, [this, finish = std::move(finish), readsOnly](bool jobOk, const QString& jobMessage) {
        bool ok = jobOk;
        QString message = jobMessage;
        if (finish)
            finish(ok, message);
        if (continuation_) {
            // The work goes on in another job: started once this one is gone.
            QTimer::singleShot(0, this, [next = std::exchange(continuation_, {})] { next(); });
            return;
        }
        Q_EMIT finished(ok, message, readsOnly);
    });
    job->start();
    Q_EMIT started(job);  // a job's results arrive through the event loop: none is missed
    return true;
}

void JobRunner::cancel()
{
    if (job_)
        job_->cancel();
}

}  // namespace zkdv::ui
