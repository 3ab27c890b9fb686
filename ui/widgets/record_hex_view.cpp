#include "widgets/record_hex_view.h"

#include <QFontDatabase>
#include <QHelpEvent>
#include <QMouseEvent>
#include <QPainter>
#include <QScrollBar>
#include <QToolTip>

#include "plots/verdict_palette.h"

namespace zkdv::ui {

namespace {
// Blank characters around and between the columns.
constexpr int kMarginChars = 1;
constexpr int kColumnGapChars = 2;
}  // namespace

RecordHexView::RecordHexView(QWidget* parent) : QAbstractScrollArea(parent)
{
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setFocusPolicy(Qt::StrongFocus);
    verticalScrollBar()->setSingleStep(1);
    updateScrollBars();
}

void RecordHexView::setBytes(const QByteArray& bytes, quint64 firstOffset)
{
    bytes_ = bytes;
    first_ = firstOffset;
    selection_.reset();
    finding_.reset();
    verticalScrollBar()->setValue(0);
    updateScrollBars();
    viewport()->update();
}

void RecordHexView::clear() { setBytes(QByteArray(), 0); }

void RecordHexView::setSelection(std::optional<ByteRange> range)
{
    selection_ = range;
    if (range && range->end > range->begin && holds(range->begin) && !isVisible(range->begin))
        scrollTo(range->begin);
    viewport()->update();
}

void RecordHexView::setFinding(std::optional<quint64> offset)
{
    finding_ = offset;
    if (offset && holds(*offset))
        scrollTo(*offset);
    viewport()->update();
}

int RecordHexView::rowHeight() const { return fontMetrics().height(); }

int RecordHexView::charWidth() const { return fontMetrics().horizontalAdvance(QLatin1Char('0')); }

int RecordHexView::visibleRows() const { return std::max(1, viewport()->height() / std::max(1, rowHeight())); }

// Offsets are decimal, as every message of the workstation names a byte ("at byte 40312").
int RecordHexView::offsetDigits() const
{
    const quint64 last = first_ + static_cast<quint64>(bytes_.size());
    return std::max(8, static_cast<int>(QString::number(last).size()));
}

int RecordHexView::hexX() const { return (kMarginChars + offsetDigits() + kColumnGapChars) * charWidth(); }

// Two digits and a space per byte, and one more space between the two halves of a row.
int RecordHexView::hexCellX(int column) const { return hexX() + (column * 3 + (column >= kBytesPerRow / 2 ? 1 : 0)) * charWidth(); }

int RecordHexView::asciiX() const { return hexCellX(kBytesPerRow) + kColumnGapChars * charWidth(); }

void RecordHexView::updateScrollBars()
{
    verticalScrollBar()->setRange(0, std::max(0, rowCount() - visibleRows()));
    verticalScrollBar()->setPageStep(visibleRows());
    const int width = asciiX() + (kBytesPerRow + kMarginChars) * charWidth();
    horizontalScrollBar()->setRange(0, std::max(0, width - viewport()->width()));
    horizontalScrollBar()->setPageStep(viewport()->width());
}

bool RecordHexView::isVisible(quint64 offset) const
{
    if (!holds(offset))
        return false;
    const int row = static_cast<int>((offset - first_) / kBytesPerRow);
    const int top = verticalScrollBar()->value();
    return row >= top && row < top + visibleRows();
}

void RecordHexView::scrollTo(quint64 offset)
{
    if (!holds(offset))
        return;
    const int row = static_cast<int>((offset - first_) / kBytesPerRow);
    // A third of the way down, so the bytes before it show too.
    verticalScrollBar()->setValue(std::max(0, row - visibleRows() / 3));
}

std::optional<quint64> RecordHexView::offsetAt(const QPoint& position) const
{
    const int x = position.x() + horizontalScrollBar()->value();
    const int row = verticalScrollBar()->value() + position.y() / std::max(1, rowHeight());
    int column = -1;
    const int cw = charWidth();
    for (int c = 0; c < kBytesPerRow && column < 0; ++c) {
        if ((x >= hexCellX(c) && x < hexCellX(c) + 2 * cw) || (x >= asciiX() + c * cw && x < asciiX() + (c + 1) * cw))
            column = c;
    }
    if (column < 0 || position.y() < 0)
        return std::nullopt;
    const quint64 offset = first_ + static_cast<quint64>(row) * kBytesPerRow + static_cast<quint64>(column);
    return holds(offset) ? std::optional<quint64>(offset) : std::nullopt;
}

void RecordHexView::paintEvent(QPaintEvent*)
{
    QPainter painter(viewport());
    const QPalette& colours = palette();
    painter.fillRect(viewport()->rect(), colours.base());
    painter.setFont(font());
    painter.translate(-horizontalScrollBar()->value(), 0);
    const int height = rowHeight();
    const int cw = charWidth();
    const int ascent = fontMetrics().ascent();
    const int digits = offsetDigits();
    const QColor findingBackground = VerdictPalette::cellBackground(Verdict::Diverged, colours);
    const QColor findingText = VerdictPalette::cellText(Verdict::Diverged, colours);
    const QColor selectedBackground = colours.color(QPalette::Highlight);
    const QColor selectedText = colours.color(QPalette::HighlightedText);
    const int top = verticalScrollBar()->value();
    const int last = std::min(rowCount(), top + visibleRows() + 1);
    static constexpr char kHex[] = "0123456789abcdef";
    for (int row = top; row < last; ++row) {
        const int y = (row - top) * height;
        const quint64 rowOffset = first_ + static_cast<quint64>(row) * kBytesPerRow;
        painter.setPen(colours.color(QPalette::PlaceholderText));
        painter.drawText(kMarginChars * cw, y + ascent, QString::number(rowOffset).rightJustified(digits, QLatin1Char(' ')));
        const int begin = row * kBytesPerRow;
        const int end = std::min(static_cast<int>(bytes_.size()), begin + kBytesPerRow);
        for (int i = begin; i < end; ++i) {
            const int column = i - begin;
            const quint64 offset = first_ + static_cast<quint64>(i);
            const auto byte = static_cast<unsigned char>(bytes_.at(i));
            QColor text = colours.color(QPalette::Text);
            const QRect hexCell(hexCellX(column), y, 2 * cw, height);
            const QRect asciiCell(asciiX() + column * cw, y, cw, height);
            if (finding_ && *finding_ == offset) {
                painter.fillRect(hexCell, findingBackground);
                painter.fillRect(asciiCell, findingBackground);
                text = findingText;
            } else if (selection_ && selection_->contains(offset)) {
                // The gap after a selected byte is filled too, so a range reads as one band.
                const bool next = column + 1 < kBytesPerRow && selection_->contains(offset + 1);
                painter.fillRect(hexCell.adjusted(0, 0, next ? cw : 0, 0), selectedBackground);
                painter.fillRect(asciiCell, selectedBackground);
                text = selectedText;
            }
            painter.setPen(text);
            const char pair[2] = {kHex[byte >> 4], kHex[byte & 0xF]};
            painter.drawText(hexCell.x(), y + ascent, QString::fromLatin1(pair, 2));
            const QChar shown = byte >= 0x20 && byte < 0x7f ? QChar(byte) : QLatin1Char('.');
            painter.drawText(asciiCell.x(), y + ascent, QString(shown));
        }
    }
}

void RecordHexView::resizeEvent(QResizeEvent* event)
{
    QAbstractScrollArea::resizeEvent(event);
    updateScrollBars();
    // The pane's message may grow by a line or two after the finding was scrolled to.
    if (finding_ && holds(*finding_) && !isVisible(*finding_))
        scrollTo(*finding_);
}

void RecordHexView::changeEvent(QEvent* event)
{
    QAbstractScrollArea::changeEvent(event);
    if (event->type() == QEvent::FontChange)
        updateScrollBars();
}

void RecordHexView::mousePressEvent(QMouseEvent* event)
{
    if (event->button() == Qt::LeftButton) {
        if (const std::optional<quint64> offset = offsetAt(event->position().toPoint()))
            Q_EMIT byteClicked(*offset);
    }
    QAbstractScrollArea::mousePressEvent(event);
}

bool RecordHexView::viewportEvent(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        auto* help = static_cast<QHelpEvent*>(event);
        if (const std::optional<quint64> offset = offsetAt(help->pos())) {
            const auto byte = static_cast<unsigned char>(bytes_.at(static_cast<qsizetype>(*offset - first_)));
            QToolTip::showText(help->globalPos(),
                               tr("file byte %1 (0x%2), frame byte %3: 0x%4 = %5")
                                   .arg(*offset)
                                   .arg(*offset, 0, 16)
                                   .arg(*offset - first_)
                                   .arg(byte, 2, 16, QLatin1Char('0'))
                                   .arg(byte),
                               viewport());
        } else {
            QToolTip::hideText();
        }
        return true;
    }
    return QAbstractScrollArea::viewportEvent(event);
}

}  // namespace zkdv::ui
