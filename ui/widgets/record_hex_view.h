#pragma once
// A record's bytes as a hex dump (file offset | 16 bytes in hex | the same as ASCII), with
// the selected field's bytes and the finding's byte highlighted. Paints only the rows in
// view, so a dump of many MiB costs no more than one screenful.

#include <QAbstractScrollArea>
#include <QByteArray>

#include <optional>

namespace zkdv::ui {

// [begin, end) of file offsets.
struct ByteRange {
    quint64 begin = 0;
    quint64 end = 0;
    bool contains(quint64 offset) const { return offset >= begin && offset < end; }
    bool operator==(const ByteRange& other) const { return begin == other.begin && end == other.end; }
};

class RecordHexView : public QAbstractScrollArea {
    Q_OBJECT

public:
    static constexpr int kBytesPerRow = 16;

    explicit RecordHexView(QWidget* parent = nullptr);

    // `bytes` are the file's bytes from `firstOffset` on. Clears the highlights.
    void setBytes(const QByteArray& bytes, quint64 firstOffset);
    void clear();
    // The selected field's bytes; scrolls their start into view when it is not.
    void setSelection(std::optional<ByteRange> range);
    // The finding's byte, in a colour of its own; scrolls it into view.
    void setFinding(std::optional<quint64> offset);

    std::optional<ByteRange> selection() const { return selection_; }
    std::optional<quint64> finding() const { return finding_; }
    quint64 firstOffset() const { return first_; }
    int byteCount() const { return static_cast<int>(bytes_.size()); }
    bool holds(quint64 offset) const { return offset >= first_ && offset - first_ < static_cast<quint64>(bytes_.size()); }
    // The byte is in the rows the viewport shows.
    bool isVisible(quint64 offset) const;
    void scrollTo(quint64 offset);
    // The file offset of the byte under a viewport position, if one is there.
    std::optional<quint64> offsetAt(const QPoint& position) const;

Q_SIGNALS:
    void byteClicked(quint64 offset);

protected:
    void paintEvent(QPaintEvent* event) override;
    void resizeEvent(QResizeEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    bool viewportEvent(QEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    int rowCount() const { return (static_cast<int>(bytes_.size()) + kBytesPerRow - 1) / kBytesPerRow; }
    int rowHeight() const;
    int visibleRows() const;
    int charWidth() const;
    int offsetDigits() const;
    // x of the hex column's and the ASCII column's first character.
    int hexX() const;
    int asciiX() const;
    int hexCellX(int column) const;
    void updateScrollBars();

    QByteArray bytes_;
    quint64 first_ = 0;
    std::optional<ByteRange> selection_;
    std::optional<quint64> finding_;
};

}  // namespace zkdv::ui
