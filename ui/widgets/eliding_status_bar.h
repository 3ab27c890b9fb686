#pragma once
// The window's status bar: a message too long for the room left of the permanent widgets
// (the row counter, the job's progress) ends in "…" instead of being cut off mid-word under
// them; the whole message is its tooltip (and in the Messages log).

#include <QList>
#include <QPointer>
#include <QStatusBar>

namespace zkdv::ui {

class ElidingStatusBar : public QStatusBar {
    Q_OBJECT
public:
    explicit ElidingStatusBar(QWidget* parent = nullptr);

    // addPermanentWidget(), remembered: the message keeps left of these.
    void addPermanent(QWidget* widget);

    // Where the message is drawn: from the left edge to the first visible permanent widget.
    QRect messageArea() const;
    // The message as drawn in messageArea(): elided when it does not fit.
    QString shownMessage() const;

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    QList<QPointer<QWidget>> permanent_;
};

}  // namespace zkdv::ui
