#pragma once
// What was wrong with tapes that could not be ingested, in full (file, record, byte offset,
// what was expected and what was found), in a banner that stays until dismissed, with what
// the auditor can do next: ingest an incomplete tape's readable part, report the finding.

#include <QFrame>
#include <QList>
#include <QString>

#include <optional>

#include "zkdv/tape/tape_scanner.h"

class QLabel;
class QPushButton;

namespace zkdv::ui {

struct TapeFinding {
    QString path;
    QString message;                     // the whole error, as the ingest gave it
    std::optional<TapeSummary> summary;  // what the scan read, when the file is a tape
    // Truncated or never sealed: its readable part can still be ingested and replayed.
    bool incomplete() const
    {
        return summary && (summary->status == TapeStatus::Truncated || summary->status == TapeStatus::Unsealed);
    }
};

class FindingBanner : public QFrame {
    Q_OBJECT
public:
    explicit FindingBanner(QWidget* parent = nullptr);

    void showFindings(const QList<TapeFinding>& findings);
    void dismiss();
    const QList<TapeFinding>& findings() const { return findings_; }
    QString text() const;
    // The first finding that can be reported (the file is a tape), if any.
    const TapeFinding* reportable() const;
    QStringList incompleteTapes() const;

Q_SIGNALS:
    void ingestReadablePartRequested(const QStringList& tapes);
    void exportReportRequested();

private:
    QLabel* text_;
    QPushButton* ingestPart_;
    QPushButton* exportReport_;
    QList<TapeFinding> findings_;
};

}  // namespace zkdv::ui
