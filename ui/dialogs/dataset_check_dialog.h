#pragma once
// "Check Dataset Commitment…": the commitment document (JSON) a tape's trainer published, and
// optionally the folder of the data it commits to, for a check the case keeps.

#include <QDialog>

namespace zkdv::ui {

class PathField;

class DatasetCheckDialog : public QDialog {
    Q_OBJECT
public:
    explicit DatasetCheckDialog(QWidget* parent = nullptr);

    QString commitment() const;
    QString folder() const;  // empty: the commitment is checked against itself only

    void accept() override;  // remembers where the files were picked from

private:
    PathField* commitment_;
    PathField* folder_;
};

}  // namespace zkdv::ui
