#pragma once
// Long core work (ingest, replay) on its own thread, with progress, ETA and a way to end it
// early (cancel or stop, as the work's Interruption says): the one way the workstation runs
// anything that could block the window.

#include <QElapsedTimer>
#include <QObject>
#include <QString>

#include <atomic>
#include <functional>

#include "zkdv/util/progress.h"

class QThread;

namespace zkdv::ui {

class BackgroundJob : public QObject, private ProgressSink {
    Q_OBJECT
public:
    // `work` runs on the job's thread and receives the job as its progress sink; it returns
    // a one-line result for the status bar, or throws (zkdv::Error: the message is shown).
    using Work = std::function<QString(ProgressSink& progress)>;

    BackgroundJob(QString title, Interruption interruption, Work work, QObject* parent = nullptr);
    ~BackgroundJob() override;

    void start();
    // Asks the work to end early: it cancels or stops, as interruption() says.
    void cancel();
    bool isRunning() const { return running_; }
    const QString& title() const { return title_; }
    Interruption interruption() const { return interruption_; }
    // The button and menu text for ending it early ("Cancel" or "Stop"), with its tooltip.
    QString interruptLabel() const;
    QString interruptToolTip() const;
    // Seconds left at the current rate, or -1 while unknown.
    double etaSeconds() const;

Q_SIGNALS:
    void progressed(quint64 done, quint64 total, const QString& phase);
    // ok false: failed or cancelled; message says which and why.
    void finished(bool ok, const QString& message);

private:
    void report(std::uint64_t done, std::uint64_t total, std::string_view phase) override;
    bool cancelRequested() const override { return cancelled_; }

    QString title_;
    Interruption interruption_;
    Work work_;
    QThread* thread_ = nullptr;
    std::atomic<bool> cancelled_{false};
    std::atomic<std::uint64_t> done_{0}, total_{0};
    QElapsedTimer clock_;
    std::atomic<qint64> lastReport_{-1000};
    bool running_ = false;
};

}  // namespace zkdv::ui
