#pragma once
// "Match Weights…": a model (a .safetensors file or a folder of shards) and which state of the
// tape it should be: snapshot 0 (a published starting checkpoint) or the final state (the
// shipped model), for a check the case keeps.

#include <QDialog>

#include "zkdv/store/provenance_checks.h"

class QRadioButton;

namespace zkdv::ui {

class PathField;

class WeightMatchDialog : public QDialog {
    Q_OBJECT
public:
    explicit WeightMatchDialog(QWidget* parent = nullptr);

    QString model() const;
    ProvenanceKind kind() const;  // StartCheckpoint or FinalModel

    void accept() override;  // remembers where the model was picked from

private:
    PathField* model_;
    QRadioButton* start_;
    QRadioButton* final_;
};

}  // namespace zkdv::ui
