#pragma once
// A chart's title row that wraps its text at word boundaries to the chart's width, so that a
// long title (a tensor's name, shape and largest difference) stays whole in a narrow pane.

#include <qcustomplot.h>

namespace zkdv::ui {

class WrappedTextElement : public QCPTextElement {
    Q_OBJECT

public:
    WrappedTextElement(QCustomPlot* plot, const QString& text);

protected:
    QSize minimumOuterSizeHint() const override;
    QSize maximumOuterSizeHint() const override;

private:
    // The text's size wrapped to the width the row will have (the chart's, less margins).
    QSize wrappedSize() const;
};

}  // namespace zkdv::ui
