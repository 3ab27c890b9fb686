#pragma once
// One tape record's bytes beside its structure (Wireshark's packet details over its bytes
// pane): a tree of the record's fields (frame header, payload, safetensors header, tensor
// table, padding, digest) and a hex dump. Selecting a field highlights its bytes, clicking a
// byte selects the innermost field holding it, and a finding's byte has a colour of its own.
// The record is read and dissected off the GUI thread; a tape that is not where it was is a
// message in the pane, not an error box.

#include <QDockWidget>
#include <QHash>
#include <QString>

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "widgets/record_hex_view.h"

class QLabel;
class QTreeWidget;
class QTreeWidgetItem;

namespace zkdv {
struct DissectedField;
struct RecordBytes;
}

namespace zkdv::ui {

class RecordBytesPane : public QDockWidget {
    Q_OBJECT

public:
    // The most bytes of one record the dump holds unless told otherwise; a larger record
    // shows a window of them (its first bytes, or those around the finding's byte).
    static constexpr std::size_t kDefaultShownBytes = 16u << 20;

    explicit RecordBytesPane(QWidget* parent = nullptr);
    ~RecordBytesPane() override;

    // Reads the record whose frame starts at `frameOffset` of the tape at `tapePath`, in the
    // background, and shows it; a request made meanwhile supersedes it. `findingByte`, a file
    // offset, is marked in its own colour, its field selected and the byte scrolled into view.
    // `caption` names the record for the auditor ("transaction 14 (record 17)").
    void showRecord(const QString& tapePath, quint64 frameOffset, std::optional<quint64> findingByte, const QString& caption);
    // Empties the pane, saying why (nothing selected, the case closed).
    void clear(const QString& why = QString());
    // The record of the selected transaction (or, with an empty `tapePath`, why there is none):
    // read now when the pane is in view, else once it comes into view. The pane reads nothing
    // while it is hidden or its tab is behind another one.
    void follow(const QString& tapePath, quint64 frameOffset, const QString& caption, const QString& why);
    // Shown with its tab in front (unlike isVisible(), false when the tab is behind another).
    bool isInView() const { return inView_; }
    // Brings the pane to the front, or closes it when it is in front already (View > Record Bytes).
    void toggleInView();
    // Selects the innermost field whose bytes hold `offset` (what a click on the byte does);
    // false when no field holds it.
    bool selectFieldAt(quint64 offset);
    // For the records read from now on.
    void setShownBytesLimit(std::size_t bytes) { shownBytes_ = bytes; }

    bool isLoading() const { return reading_ != nullptr; }
    // The line above the views: what is shown, what part of it, what is wrong, or why nothing.
    QString message() const;
    int fieldCount() const;
    // The selected field's bytes, [begin, end) in the file.
    std::optional<ByteRange> highlightedRange() const { return hex_->selection(); }
    std::optional<quint64> findingByte() const { return hex_->finding(); }
    bool isByteVisible(quint64 offset) const { return hex_->isVisible(offset); }
    QTreeWidget* fieldTree() const { return tree_; }
    RecordHexView* hexView() const { return hex_; }
    // The record shown (nullptr while none is).
    const RecordBytes* record() const { return record_.get(); }

Q_SIGNALS:
    // A record, or the reason none could be read, is shown.
    void loaded();

private:
    struct Read;
    void finishRead(Read* read);
    void apply(std::unique_ptr<RecordBytes> record, const QString& caption, std::optional<quint64> findingByte);
    void addFields(const std::vector<DissectedField>& fields, QTreeWidgetItem* parent, int depth);
    void fieldSelected();
    void setMessage(const QString& text);
    void stopReading();

    QLabel* message_;
    QTreeWidget* tree_;
    RecordHexView* hex_;
    std::size_t shownBytes_ = kDefaultShownBytes;
    std::function<void()> followed_;  // the record to show once the pane is in view
    bool inView_ = false;
    QString caption_;  // with what part of the record is shown; field notes go after it
    std::unique_ptr<RecordBytes> record_;
    QHash<const DissectedField*, QTreeWidgetItem*> items_;
    std::unique_ptr<Read> reading_;
    std::vector<std::unique_ptr<Read>> superseded_;  // stopping; deleted when their thread ends
};

}  // namespace zkdv::ui
