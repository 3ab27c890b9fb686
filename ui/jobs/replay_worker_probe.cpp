#include "jobs/replay_worker_probe.h"

#include <QPointer>
#include <QThread>

#include "zkdv/replay/replay_worker_probe.h"

namespace zkdv::ui {

ReplayWorkerProbe::ReplayWorkerProbe(QObject* parent) : QObject(parent) {}

ReplayWorkerProbe::~ReplayWorkerProbe()
{
    if (thread_) {
        // The worker answers within seconds or is ended by the probe's own limit.
        thread_->wait();
        delete thread_;
    }
}

void ReplayWorkerProbe::start()
{
    if (thread_ || answered_)
        return;
    QPointer<ReplayWorkerProbe> self(this);
    thread_ = QThread::create([self] {
        QStringList devices;
        QString libtorch, cuda, problem;
        try {
            const worker::WorkerHello hello = probeReplayWorker();
            for (const std::string& device : replayDevicesOf(hello))
                devices << QString::fromStdString(device);
            libtorch = QString::fromStdString(hello.libtorchVersion);
            cuda = QString::fromStdString(hello.cudaVersion);
        } catch (const std::exception& error) {
            devices << QStringLiteral("cpu");
            problem = QString::fromStdString(error.what());
        }
        // The destructor waits for this thread, so `self` outlives it.
        QMetaObject::invokeMethod(
            self.data(), [self, devices, libtorch, cuda, problem] {
                if (!self)
                    return;
                self->answered_ = true;
                self->devices_ = devices;
                self->libtorch_ = libtorch;
                self->cuda_ = cuda;
                self->problem_ = problem;
                Q_EMIT self->finished();
            },
            Qt::QueuedConnection);
    });
    thread_->start();
}

}  // namespace zkdv::ui
