#pragma once
// "Export Chart as PNG…": the image's width and height in pixels (the chart's size proposed)
// and its title (the tape and run proposed); shows the footer the image will carry.

#include <QDialog>

#include "plots/chart_tools.h"

class QLineEdit;
class QSpinBox;

namespace zkdv::ui {

class ChartImageDialog : public QDialog {
    Q_OBJECT

public:
    ChartImageDialog(const ChartImageOptions& proposed, QWidget* parent = nullptr);

    // The size and title as entered, the footer as proposed.
    ChartImageOptions options() const;

    QSpinBox* widthBox() const { return width_; }
    QSpinBox* heightBox() const { return height_; }
    QLineEdit* titleEdit() const { return title_; }

private:
    QString footer_;
    QSpinBox* width_ = nullptr;
    QSpinBox* height_ = nullptr;
    QLineEdit* title_ = nullptr;
};

}  // namespace zkdv::ui
