#pragma once
// Keeps the mouse wheel from changing a control the pointer merely passes over: a combo box,
// spin box or slider takes the wheel only once it has the focus (a click or Tab gives it);
// otherwise the wheel scrolls the scroll area around it, as the auditor meant.

#include <QObject>

class QWidget;

namespace zkdv::ui {

class WheelGuard : public QObject {
    Q_OBJECT

public:
    // Guards `control` (a QComboBox, QAbstractSpinBox or QSlider; anything else is left
    // alone). Its focus policy becomes Qt::StrongFocus: with Qt::WheelFocus the wheel would
    // give it the focus first, and then the value.
    static void guard(QWidget* control);
    // Guards every such control inside `root` now.
    static void guardChildren(QWidget* root);
    // True when `widget` is a kind of control that guard() acts on.
    static bool guards(const QWidget* widget);

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    explicit WheelGuard(QObject* parent) : QObject(parent) {}
};

}  // namespace zkdv::ui
