#pragma once
// Tapes of the open case whose files moved or changed since ingest: said when the case is
// opened, with Locate Tape… to point the case at the file's new place.

#include <QFrame>
#include <QList>
#include <QString>

#include "models/case_queries.h"

class QLabel;

namespace zkdv::ui {

class MissingTapeBar : public QFrame {
    Q_OBJECT
public:
    explicit MissingTapeBar(QWidget* parent = nullptr);
    void showMissing(const QList<MovedTape>& missing);  // empty: hides
    const QList<MovedTape>& missing() const { return missing_; }
    bool isMissing(qint64 tapeId) const;
    QString text() const;

Q_SIGNALS:
    void locateRequested(qint64 tapeId);

private:
    QLabel* text_;
    QList<MovedTape> missing_;
};

}  // namespace zkdv::ui
