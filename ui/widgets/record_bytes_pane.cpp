#include "widgets/record_bytes_pane.h"

#include <QHeaderView>
#include <QLabel>
#include <QSplitter>
#include <QThread>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <atomic>
#include <exception>

#include "plots/verdict_palette.h"
#include "zkdv/tape/record_dissection.h"
#include "zkdv/util/progress.h"

namespace zkdv::ui {

namespace {

constexpr int kOffsetRole = Qt::UserRole + 1;
constexpr int kLengthRole = Qt::UserRole + 2;
// A list longer than this (a snapshot's tensors) starts collapsed.
constexpr int kExpandedChildren = 64;

// Lets a superseded read stop while it hashes a large record.
class ReadStop : public ProgressSink {
public:
    void report(std::uint64_t, std::uint64_t, std::string_view) override {}
    bool cancelRequested() const override { return stop.load(std::memory_order_relaxed); }
    std::atomic<bool> stop{false};
};

// Offsets without digit grouping, as the dump and every finding ("at byte 40312") write them.
QString rangeText(quint64 offset, quint64 length)
{
    if (length == 0)
        return RecordBytesPane::tr("no bytes, at file byte %1").arg(offset);
    return RecordBytesPane::tr("file bytes %1–%2 (%L3 bytes)").arg(offset).arg(offset + length - 1).arg(length);
}

}  // namespace

struct RecordBytesPane::Read {
    QThread* thread = nullptr;
    QString caption;
    std::optional<quint64> findingByte;
    std::shared_ptr<ReadStop> stop = std::make_shared<ReadStop>();
    std::shared_ptr<std::unique_ptr<RecordBytes>> result = std::make_shared<std::unique_ptr<RecordBytes>>();
    std::shared_ptr<QString> problem = std::make_shared<QString>();
};

RecordBytesPane::RecordBytesPane(QWidget* parent) : QDockWidget(tr("Record Bytes"), parent)
{
    setObjectName(QStringLiteral("recordBytesPane"));  // saveState() restores it by name
    message_ = new QLabel(this);
    message_->setObjectName(QStringLiteral("recordBytesMessage"));
    message_->setTextFormat(Qt::PlainText);  // names come from the tape, never markup
    message_->setWordWrap(true);
    message_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    tree_ = new QTreeWidget(this);
    tree_->setObjectName(QStringLiteral("recordFieldTree"));
    tree_->setHeaderLabels({tr("Field"), tr("Value")});
    tree_->setUniformRowHeights(true);
    tree_->header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    hex_ = new RecordHexView(this);
    hex_->setObjectName(QStringLiteral("recordHexView"));
    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(tree_);
    splitter->addWidget(hex_);
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    auto* body = new QWidget(this);
    auto* layout = new QVBoxLayout(body);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(message_);
    layout->addWidget(splitter, 1);
    setWidget(body);
    connect(tree_, &QTreeWidget::itemSelectionChanged, this, &RecordBytesPane::fieldSelected);
    connect(hex_, &RecordHexView::byteClicked, this, [this](quint64 offset) { selectFieldAt(offset); });
    connect(this, &QDockWidget::visibilityChanged, this, [this](bool visible) {
        inView_ = visible;
        if (visible && followed_)
            std::exchange(followed_, {})();
    });
    clear(tr("Select a transaction, or a finding's record, to see its bytes."));
}

RecordBytesPane::~RecordBytesPane()
{
    stopReading();
    for (const std::unique_ptr<Read>& read : superseded_) {
        read->thread->wait();
        delete read->thread;
    }
}

void RecordBytesPane::follow(const QString& tapePath, quint64 frameOffset, const QString& caption, const QString& why)
{
    followed_ = [this, tapePath, frameOffset, caption, why] {
        if (tapePath.isEmpty())
            clear(why);
        else
            showRecord(tapePath, frameOffset, std::nullopt, caption);
    };
    if (inView_)
        std::exchange(followed_, {})();
}

void RecordBytesPane::toggleInView()
{
    if (inView_) {
        hide();
        return;
    }
    show();
    raise();
}

void RecordBytesPane::showRecord(const QString& tapePath, quint64 frameOffset, std::optional<quint64> findingByte, const QString& caption)
{
    followed_ = {};
    stopReading();
    auto read = std::make_unique<Read>();
    read->caption = caption;
    read->findingByte = findingByte;
    read->thread = QThread::create([path = tapePath.toStdString(), frameOffset, findingByte, shownBytes = shownBytes_, stop = read->stop,
                                    result = read->result, problem = read->problem] {
        try {
            RecordDissectionLimits limits;
            limits.progress = stop.get();
            *result = std::make_unique<RecordBytes>(readRecordBytes(path, frameOffset, shownBytes, findingByte, limits));
        } catch (const OperationCancelled&) {
            // superseded: nothing to show
        } catch (const std::exception& error) {
            *problem = QString::fromStdString(error.what());
        }
    });
    Read* raw = read.get();
    connect(read->thread, &QThread::finished, this, [this, raw] { finishRead(raw); });
    reading_ = std::move(read);
    setMessage(tr("Reading %1…").arg(caption));
    reading_->thread->start(QThread::LowPriority);
}

void RecordBytesPane::stopReading()
{
    if (!reading_)
        return;
    reading_->stop->stop = true;
    superseded_.push_back(std::move(reading_));
}

void RecordBytesPane::finishRead(Read* read)
{
    read->thread->deleteLater();
    if (reading_.get() != read) {
        for (auto it = superseded_.begin(); it != superseded_.end(); ++it) {
            if (it->get() == read) {
                superseded_.erase(it);
                break;
            }
        }
        return;
    }
    const std::unique_ptr<Read> done = std::move(reading_);
    if (!*done->result) {
        // A tape moved or removed since the case was made: said here, not in a box.
        clear(tr("Cannot show %1: %2").arg(done->caption, done->problem->isEmpty() ? tr("the read was stopped") : *done->problem));
        Q_EMIT loaded();
        return;
    }
    apply(std::move(*done->result), done->caption, done->findingByte);
    Q_EMIT loaded();
}

void RecordBytesPane::clear(const QString& why)
{
    followed_ = {};
    stopReading();
    record_.reset();
    items_.clear();
    tree_->clear();
    hex_->clear();
    caption_.clear();
    setMessage(why);
}

void RecordBytesPane::apply(std::unique_ptr<RecordBytes> record, const QString& caption, std::optional<quint64> findingByte)
{
    record_ = std::move(record);
    items_.clear();
    tree_->clear();
    const RecordDissection& dissection = record_->dissection;
    addFields(dissection.fields, nullptr, 0);
    hex_->setBytes(QByteArray(reinterpret_cast<const char*>(record_->bytes.data()), static_cast<qsizetype>(record_->bytes.size())),
                   record_->bytesOffset);

    QStringList lines;
    lines << tr("%1: a frame of %L2 bytes at file byte %3.").arg(caption).arg(dissection.frameLength).arg(dissection.frameOffset);
    if (record_->partial() && !record_->bytes.empty())
        lines << tr("Partial: the dump holds %1 of the frame.").arg(rangeText(record_->bytesOffset, record_->bytes.size()));
    if (dissection.stop)
        lines << tr("The dissection stops at file byte %1: %2.").arg(dissection.stop->offset).arg(QString::fromStdString(dissection.stop->reason));
    const std::vector<std::string> problems = dissection.problems();
    if (!problems.empty())
        lines << tr("%n problem(s), the first: %1", nullptr, static_cast<int>(problems.size())).arg(QString::fromStdString(problems.front()));
    if (findingByte && !hex_->holds(*findingByte))
        lines << tr("The finding's byte %1 lies outside the bytes the dump holds.").arg(*findingByte);
    caption_ = lines.join(QLatin1Char('\n'));
    setMessage(caption_);

    if (findingByte) {
        selectFieldAt(*findingByte);
        hex_->setFinding(*findingByte);  // after the selection, so the finding is what is scrolled to
    }
}

void RecordBytesPane::addFields(const std::vector<DissectedField>& fields, QTreeWidgetItem* parent, int depth)
{
    const QColor problemText = VerdictPalette::cellText(Verdict::Diverged, tree_->palette());
    for (const DissectedField& field : fields) {
        auto* item = parent ? new QTreeWidgetItem(parent) : new QTreeWidgetItem(tree_);
        const QString value = QString::fromStdString(field.value);
        item->setText(0, QString::fromStdString(field.name));
        QString tip = rangeText(field.offset, field.length) + QLatin1Char('\n') + value;
        if (field.problem) {
            const QString problem = QString::fromStdString(*field.problem);
            item->setText(1, value.isEmpty() ? problem : value + QStringLiteral(" — ") + problem);
            item->setForeground(0, problemText);
            item->setForeground(1, problemText);
            tip += QLatin1Char('\n') + problem;
        } else {
            item->setText(1, value);
        }
        item->setToolTip(0, tip);
        item->setToolTip(1, tip);
        item->setData(0, kOffsetRole, QVariant::fromValue<quint64>(field.offset));
        item->setData(0, kLengthRole, QVariant::fromValue<quint64>(field.length));
        items_.insert(&field, item);
        addFields(field.children, item, depth + 1);
        item->setExpanded(depth == 0 || (depth == 1 && field.children.size() <= kExpandedChildren));
    }
}

bool RecordBytesPane::selectFieldAt(quint64 offset)
{
    if (!record_)
        return false;
    const DissectedField* field = record_->dissection.innermostAt(offset);
    QTreeWidgetItem* item = field ? items_.value(field) : nullptr;
    if (!item)
        return false;
    tree_->setCurrentItem(item);
    tree_->scrollToItem(item);
    return true;
}

void RecordBytesPane::fieldSelected()
{
    const QList<QTreeWidgetItem*> selected = tree_->selectedItems();
    if (selected.isEmpty()) {
        hex_->setSelection(std::nullopt);
        setMessage(caption_);
        return;
    }
    const quint64 offset = selected.front()->data(0, kOffsetRole).toULongLong();
    const quint64 length = selected.front()->data(0, kLengthRole).toULongLong();
    hex_->setSelection(ByteRange{offset, offset + length});
    const quint64 dumpEnd = hex_->firstOffset() + static_cast<quint64>(hex_->byteCount());
    const bool shown = length == 0 || (offset < dumpEnd && offset + length > hex_->firstOffset());
    setMessage(shown ? caption_
                     : caption_ + QLatin1Char('\n') +
                           tr("The selected field's bytes (%1) lie outside the bytes the dump holds.").arg(rangeText(offset, length)));
}

void RecordBytesPane::setMessage(const QString& text)
{
    message_->setText(text);
    message_->setVisible(!text.isEmpty());
}

QString RecordBytesPane::message() const { return message_->text(); }

int RecordBytesPane::fieldCount() const { return record_ ? static_cast<int>(record_->dissection.fieldCount()) : 0; }

}  // namespace zkdv::ui
