#pragma once
// "Export Cluster Job…": a sharded replay of a selection handed to a cluster's scheduler
// (docs/replay.md, "Sharded replays"): Slurm (an sbatch array script with a dependent merge)
// or Kubernetes (an Indexed Job manifest). The seed it proposes is drawn from the operating
// system each time it opens: every shard must share it, and the trainer must not know it.

#include <QDialog>

#include "zkdv/workflow/cluster_job.h"

class QComboBox;
class QLineEdit;
class QSpinBox;
class QStackedWidget;

namespace zkdv::ui {

enum class ClusterScheduler { Slurm, Kubernetes };

class ClusterJobDialog : public QDialog {
    Q_OBJECT
public:
    // `spec`: the selection to propose (the last one used).
    ClusterJobDialog(const QString& spec, QWidget* parent = nullptr);

    ClusterScheduler scheduler() const;
    // The job as the fields say; auditExecutable and casePath are the caller's to fill.
    ClusterJob job() const;

private:
    QComboBox* scheduler_;
    QLineEdit* selection_;
    QLineEdit* seed_;
    QSpinBox* shards_;
    QLineEdit* device_;
    QStackedWidget* schedulerFields_;
    QLineEdit* partition_;
    QLineEdit* gres_;
    QLineEdit* time_;
    QLineEdit* image_;
    QLineEdit* claim_;
    QLineEdit* mountPath_;
};

}  // namespace zkdv::ui
