#pragma once
// "Replay random sample…": how many transactions (a count or a percentage), the seed, and
// whether to stratify by snapshot segment; yields a selection spec the core understands.

#include <QDialog>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSpinBox;

namespace zkdv::ui {

class SampleDialog : public QDialog {
    Q_OBJECT
public:
    SampleDialog(quint64 transactionCount, const QString& spec, quint64 seed, QWidget* parent = nullptr);

    QString selectionSpec() const;  // "random:100", "stratified:5%"
    quint64 seed() const;

private:
    void updateHint();

    quint64 transactionCount_;
    QComboBox* unit_;
    QSpinBox* count_;
    QDoubleSpinBox* percent_;
    QSpinBox* seed_;
    QCheckBox* stratified_;
    QLabel* hint_;
};

}  // namespace zkdv::ui
