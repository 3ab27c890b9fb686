#pragma once
// Asks a replay worker, once and off the GUI thread, what replays here run on (its libtorch,
// its CUDA devices): the workstation lists devices and prints versions without linking
// libtorch. finished() fires on the GUI thread with the answer or why there is none.

#include <QObject>
#include <QString>
#include <QStringList>

namespace zkdv::ui {

class ReplayWorkerProbe : public QObject {
    Q_OBJECT
public:
    explicit ReplayWorkerProbe(QObject* parent = nullptr);
    ~ReplayWorkerProbe() override;

    // Starts the worker in a thread; a second call while one runs, or after it answered, does nothing.
    void start();
    bool answered() const { return answered_; }

    QStringList devices() const { return devices_; }  // "cpu", "cuda:0", …; only "cpu" until answered
    QString libtorchVersion() const { return libtorch_; }
    QString cudaVersion() const { return cuda_; }  // "" without CUDA
    QString problem() const { return problem_; }   // why the worker did not answer ("" when it did)

Q_SIGNALS:
    void finished();

private:
    QThread* thread_ = nullptr;
    bool answered_ = false;
    QStringList devices_{QStringLiteral("cpu")};
    QString libtorch_, cuda_, problem_;
};

}  // namespace zkdv::ui
