#pragma once
// One background job at a time for the window: a second is refused while one runs, a job's
// result may be reworked on the GUI thread before it is told (a report drawn after its data
// was built), and a job may hand over to the one that continues it.

#include <QObject>
#include <QPointer>
#include <QString>

#include <functional>

namespace zkdv::ui {

class BackgroundJob;

class JobRunner : public QObject {
    Q_OBJECT
public:
    // Runs on the GUI thread when the job ends, before its result is told; may change it.
    using Finish = std::function<void(bool& ok, QString& message)>;

    explicit JobRunner(QObject* parent = nullptr);

    bool isBusy() const;
    BackgroundJob* current() const { return job_; }
    // "Busy: <title>. …": why another job cannot start now.
    QString busyText() const;
    // Starts `job` (taking it) unless one runs: then `job` is deleted, refused says why, and
    // the result is false. `readsOnly`: the job changes nothing in the case (an export).
    bool start(BackgroundJob* job, Finish finish = {}, bool readsOnly = false);
    // Called from a job's Finish: once that job is gone, `next` starts the job that continues
    // it, and finished is told for that one instead.
    void continueWith(std::function<void()> next) { continuation_ = std::move(next); }
    void cancel();

Q_SIGNALS:
    void started(BackgroundJob* job);
    void refused(const QString& why);
    void finished(bool ok, const QString& message, bool readsOnly);

private:
    QPointer<BackgroundJob> job_;
    std::function<void()> continuation_;
};

}  // namespace zkdv::ui
