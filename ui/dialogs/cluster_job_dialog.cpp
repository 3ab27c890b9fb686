#include "dialogs/cluster_job_dialog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QSpinBox>
#include <QStackedWidget>

#include "zkdv/audit/audit_seed.h"
#include "zkdv/audit/shard_plan.h"

namespace zkdv::ui {

ClusterJobDialog::ClusterJobDialog(const QString& spec, QWidget* parent)
    : QDialog(parent), scheduler_(new QComboBox(this)), selection_(new QLineEdit(spec, this)), seed_(new QLineEdit(this)),
      shards_(new QSpinBox(this)), device_(new QLineEdit(QStringLiteral("cpu"), this)), schedulerFields_(new QStackedWidget(this)),
      partition_(new QLineEdit(this)), gres_(new QLineEdit(this)), time_(new QLineEdit(this)), image_(new QLineEdit(this)),
      claim_(new QLineEdit(this)), mountPath_(new QLineEdit(QStringLiteral("/audit"), this))
{
    setWindowTitle(tr("Export Cluster Job"));
    scheduler_->addItems({tr("Slurm (sbatch array script)"), tr("Kubernetes (Indexed Job manifest)")});
    scheduler_->setObjectName(QStringLiteral("scheduler"));
    selection_->setObjectName(QStringLiteral("selection"));
    selection_->setToolTip(tr("all, random:N, random:P%, stratified:N, topq:Q, ids:…, range:A-B, sampled"));
    seed_->setObjectName(QStringLiteral("seed"));
    seed_->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,20}")), seed_));
    seed_->setText(QString::number(drawAuditSeed()));
    seed_->setToolTip(tr("Drawn from the operating system when this dialog opened; every shard uses it"));
    shards_->setObjectName(QStringLiteral("shards"));
    shards_->setRange(1, static_cast<int>(kMaxShards));
    shards_->setValue(4);
    device_->setToolTip(tr("cpu, or cuda:0 on GPU nodes"));
    partition_->setPlaceholderText(tr("the cluster's default"));
    gres_->setPlaceholderText(tr("e.g. gpu:1"));
    time_->setPlaceholderText(tr("e.g. 02:00:00"));
    image_->setObjectName(QStringLiteral("image"));
    image_->setPlaceholderText(tr("an image with zkdv-audit and libtorch"));
    claim_->setObjectName(QStringLiteral("claim"));
    claim_->setPlaceholderText(tr("a PersistentVolumeClaim holding the case and tape"));

    auto* slurm = new QWidget(this);
    auto* slurmForm = new QFormLayout(slurm);
    slurmForm->setContentsMargins(0, 0, 0, 0);
    slurmForm->addRow(tr("Partition:"), partition_);
    slurmForm->addRow(tr("GRES per shard:"), gres_);
    slurmForm->addRow(tr("Time limit per shard:"), time_);
    auto* kubernetes = new QWidget(this);
    auto* kubernetesForm = new QFormLayout(kubernetes);
    kubernetesForm->setContentsMargins(0, 0, 0, 0);
    kubernetesForm->addRow(tr("Image:"), image_);
    kubernetesForm->addRow(tr("Volume claim:"), claim_);
    kubernetesForm->addRow(tr("Mounted at:"), mountPath_);
    schedulerFields_->addWidget(slurm);
    schedulerFields_->addWidget(kubernetes);

    auto* hint = new QLabel(tr("Each shard replays whole snapshot segments into a case of its own; the merge joins them "
                               "into this case as one run. The nodes need this case, its tape and zkdv-audit at the same paths."),
                            this);
    hint->setWordWrap(true);
    auto* form = new QFormLayout(this);
    form->addRow(tr("Scheduler:"), scheduler_);
    form->addRow(tr("Selection:"), selection_);
    form->addRow(tr("Seed:"), seed_);
    form->addRow(tr("Shards:"), shards_);
    form->addRow(tr("Device:"), device_);
    form->addRow(schedulerFields_);
    form->addRow(hint);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Export…"));
    form->addRow(buttons);
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(scheduler_, &QComboBox::currentIndexChanged, schedulerFields_, &QStackedWidget::setCurrentIndex);
}

ClusterScheduler ClusterJobDialog::scheduler() const
{
    return scheduler_->currentIndex() == 1 ? ClusterScheduler::Kubernetes : ClusterScheduler::Slurm;
}

ClusterJob ClusterJobDialog::job() const
{
    ClusterJob job;
    job.selection = selection_->text().trimmed().toStdString();
    job.seed = seed_->text().toULongLong();
    job.shards = static_cast<unsigned>(shards_->value());
    job.device = device_->text().trimmed().toStdString();
    job.partition = partition_->text().trimmed().toStdString();
    job.gres = gres_->text().trimmed().toStdString();
    job.time = time_->text().trimmed().toStdString();
    job.image = image_->text().trimmed().toStdString();
    job.claim = claim_->text().trimmed().toStdString();
    job.mountPath = mountPath_->text().trimmed().toStdString();
    return job;
}

}  // namespace zkdv::ui
