#pragma once
// What was wrong with tapes that could not be ingested, in full (file, record, byte offset,
// what was expected and what was found), in a banner that stays until dismissed, with what
// the auditor can do next: ingest an incomplete tape's readable part, report the finding, look
// at the bytes of the record at fault.

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
    // The first finding whose problem lies in a record's frame (its bytes can be shown).
    const TapeFinding* recordAtFault() const;

Q_SIGNALS:
    void ingestReadablePartRequested(const QStringList& tapes);
    void exportReportRequested();
    // The record at fault, to show in the record bytes pane: where its frame starts, the byte
    // at fault (both file offsets) and the record's name ("record 17 (transaction 14) of t.zkdv").
    void recordBytesRequested(const QString& tapePath, quint64 frameOffset, quint64 faultByte, const QString& caption);

private:
    QLabel* text_;
    QPushButton* ingestPart_;
    QPushButton* exportReport_;
    QPushButton* showBytes_;
    QList<TapeFinding> findings_;
};

}  // namespace zkdv::ui
