#pragma once
// "Replay random sample…": how many transactions (a count or a percentage), the seed, and
// whether to stratify by snapshot segment; yields a selection spec the core understands.
// The seed it proposes is drawn from the operating system each time it opens, never a fixed
// or the last one: a seed the trainer could guess voids the audit's bound. The auditor may
// type another; the run then records the seed as the auditor's (seedSource()).

#include <QDialog>

#include "zkdv/audit/audit_seed.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace zkdv::ui {

class PathField;

class SampleDialog : public QDialog {
    Q_OBJECT
public:
    // `calibration`: the envelope calibration file proposed (the last one used; "" for none).
    SampleDialog(quint64 transactionCount, const QString& spec, QWidget* parent = nullptr, const QString& calibration = QString());

    QString selectionSpec() const;  // "random:100", "stratified:5%"
    quint64 seed() const;
    quint64 proposedSeed() const { return proposedSeed_; }
    // Drawn while the seed is the one proposed, Given once the auditor changed it.
    SeedSource seedSource() const;
    // The calibration file chosen (docs/replay.md, "Calibration"); "" for none.
    QString calibrationPath() const;

private:
    void updateHint();

    quint64 transactionCount_;
    quint64 proposedSeed_;
    QComboBox* unit_;
    QSpinBox* count_;
    QDoubleSpinBox* percent_;
    QLineEdit* seed_;
    QCheckBox* stratified_;
    PathField* calibration_;
    QLabel* hint_;
    QPushButton* replay_ = nullptr;
};

}  // namespace zkdv::ui
