#include "widgets/wheel_guard.h"

#include <QAbstractScrollArea>
#include <QAbstractSpinBox>
#include <QApplication>
#include <QComboBox>
#include <QSlider>
#include <QWheelEvent>

namespace zkdv::ui {

namespace {

QAbstractScrollArea* scrollAreaAround(QWidget* widget)
{
    for (QWidget* w = widget->parentWidget(); w; w = w->parentWidget())
        if (auto* area = qobject_cast<QAbstractScrollArea*>(w))
            return area;
    return nullptr;
}

}  // namespace

bool WheelGuard::guards(const QWidget* widget)
{
    return qobject_cast<const QComboBox*>(widget) || qobject_cast<const QAbstractSpinBox*>(widget) || qobject_cast<const QSlider*>(widget);
}

void WheelGuard::guard(QWidget* control)
{
    if (!control || !guards(control) || control->findChild<WheelGuard*>(QString(), Qt::FindDirectChildrenOnly))
        return;
    if (control->focusPolicy() == Qt::WheelFocus)
        control->setFocusPolicy(Qt::StrongFocus);
    control->installEventFilter(new WheelGuard(control));  // owned by the control
}

void WheelGuard::guardChildren(QWidget* root)
{
    if (!root)
        return;
    guard(root);
    for (QWidget* child : root->findChildren<QWidget*>())
        guard(child);
}

bool WheelGuard::eventFilter(QObject* watched, QEvent* event)
{
    if (event->type() != QEvent::Wheel)
        return false;
    auto* control = static_cast<QWidget*>(watched);
    if (control->hasFocus())
        return false;  // the auditor chose it: the wheel steps its value
    auto* wheel = static_cast<QWheelEvent*>(event);
    wheel->ignore();
    if (QAbstractScrollArea* area = scrollAreaAround(control)) {
        QWidget* viewport = area->viewport();
        const QPointF at = viewport->mapFromGlobal(wheel->globalPosition());
        QWheelEvent scroll(at, wheel->globalPosition(), wheel->pixelDelta(), wheel->angleDelta(), wheel->buttons(), wheel->modifiers(),
                           wheel->phase(), wheel->inverted(), wheel->source());
        QCoreApplication::sendEvent(viewport, &scroll);
        wheel->setAccepted(scroll.isAccepted());
    }
    return true;  // never to the control
}

}  // namespace zkdv::ui
