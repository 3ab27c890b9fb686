#include "widgets/job_progress_frame.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QProgressBar>
#include <QToolButton>

#include "jobs/background_job.h"

namespace zkdv::ui {

JobProgressFrame::JobProgressFrame(QWidget* parent)
    : QWidget(parent), label_(new QLabel(this)), bar_(new QProgressBar(this)), cancel_(new QToolButton(this))
{
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(label_);
    layout->addWidget(bar_);
    layout->addWidget(cancel_);
    bar_->setMaximumWidth(220);
    bar_->setRange(0, 1000);
    connect(cancel_, &QToolButton::clicked, this, [this] {
        if (job_)
            job_->cancel();
    });
    hide();
}

void JobProgressFrame::follow(BackgroundJob* job)
{
    if (job_)
        disconnect(job_, nullptr, this, nullptr);
    job_ = job;
    if (!job) {
        hide();
        return;
    }
    label_->setText(job->title());
    cancel_->setText(job->interruptLabel());
    cancel_->setToolTip(job->interruptToolTip());
    bar_->setValue(0);
    connect(job, &BackgroundJob::progressed, this, &JobProgressFrame::update);
    connect(job, &BackgroundJob::finished, this, [this] { follow(nullptr); });
    connect(job, &QObject::destroyed, this, [this] {
        job_ = nullptr;
        hide();
    });
    show();
}

QString JobProgressFrame::buttonText() const { return cancel_->text(); }

void JobProgressFrame::update(quint64 done, quint64 total, const QString& phase)
{
    if (!job_)
        return;
    bar_->setValue(total ? static_cast<int>(1000.0 * static_cast<double>(done) / static_cast<double>(total)) : 0);
    QString text = job_->title() + QStringLiteral(" — ") + phase;
    const double eta = job_->etaSeconds();
    if (eta >= 0)
        text += eta < 90 ? tr(", %1 s left").arg(qRound(eta)) : tr(", %1 min left").arg(qRound(eta / 60));
    label_->setText(text);
}

}  // namespace zkdv::ui
