// The record bytes pane (offscreen) on a real tape: a transaction's fields beside its bytes,
// a tensor-table entry highlighting exactly its data, a click on a byte selecting the field
// that holds it, a finding's byte marked and scrolled into view (also past the bytes a large
// record shows at first), and a tape that is not there said in the pane, not in a box.

#include <QtTest>

#include <QApplication>
#include <QMainWindow>
#include <QPushButton>
#include <QSignalSpy>
#include <QTreeWidget>

#include <memory>

#include "file_bytes.h"
#include "record_locations.h"
#include "temp_dir.h"
#include "widgets/finding_banner.h"
#include "widgets/record_bytes_pane.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/tape/record_dissection.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/little_endian.h"

using namespace zkdv;
using namespace zkdv::ui;

namespace {

QTreeWidgetItem* findField(QTreeWidget* tree, const QString& name)
{
    const QList<QTreeWidgetItem*> found = tree->findItems(name, Qt::MatchExactly | Qt::MatchRecursive, 0);
    return found.isEmpty() ? nullptr : found.front();
}

}  // namespace

class TestRecordBytesPane : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void init();
    void cleanup();
    void aTensorEntryHighlightsItsData();
    void clickingAByteSelectsTheInnermostField();
    void theFindingsByteIsMarkedAndInView();
    void theFindingBannerHandsOverTheRecordAtFault();
    void aLargeRecordShowsTheWindowAroundTheFinding();
    void aMissingTapeIsAMessage();
    void aNewerRequestSupersedesAnOlderOne();

private:
    // Shows the record and waits until the pane has it.
    bool show(const std::string& path, const RecordLocation& record, std::optional<quint64> finding, const QString& caption);
    const RecordLocation& transaction(std::size_t which) const;

    test::TempDir dir_;
    std::string tape_;
    std::vector<RecordLocation> records_;
    std::unique_ptr<QMainWindow> window_;
    RecordBytesPane* pane_ = nullptr;  // docked in window_, as the workstation docks it
};

void TestRecordBytesPane::initTestCase()
{
    tape_ = dir_.file("pane.zkdv");
    SyntheticDemoOptions options;
    options.steps = 3;
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    options.updateCheckProbability = 1.0;  // deltas in every transaction
    writeSyntheticDemoTape(tape_, options);
    TapeSummary summary;
    records_ = test::recordLocations(tape_, &summary);
    QCOMPARE(summary.status, TapeStatus::Sealed);
}

void TestRecordBytesPane::init()
{
    window_ = std::make_unique<QMainWindow>();
    pane_ = new RecordBytesPane(window_.get());
    window_->setCentralWidget(new QWidget(window_.get()));
    window_->addDockWidget(Qt::BottomDockWidgetArea, pane_);
    window_->resize(1000, 400);
    window_->resizeDocks({pane_}, {260}, Qt::Vertical);  // a few rows of dump: most of a record is out of view
    window_->show();
    QVERIFY(QTest::qWaitForWindowExposed(window_.get()));
}

void TestRecordBytesPane::cleanup()
{
    window_.reset();
    pane_ = nullptr;
}

const RecordLocation& TestRecordBytesPane::transaction(std::size_t which) const
{
    for (const RecordLocation& record : records_)
        if (record.type == static_cast<std::uint32_t>(tape::RecordType::Transaction) && which-- == 0)
            return record;
    throw std::runtime_error("no such transaction");
}

bool TestRecordBytesPane::show(const std::string& path, const RecordLocation& record, std::optional<quint64> finding, const QString& caption)
{
    QSignalSpy loaded(pane_, &RecordBytesPane::loaded);
    pane_->showRecord(QString::fromStdString(path), record.offset, finding, caption);
    if (!loaded.wait(10000) || pane_->isLoading())
        return false;
    QTest::qWait(30);  // the pane's message grows by its lines: what is in view after that counts
    return true;
}

void TestRecordBytesPane::aTensorEntryHighlightsItsData()
{
    const RecordLocation& record = transaction(1);
    QVERIFY(show(tape_, record, std::nullopt, QStringLiteral("transaction 1")));
    QVERIFY2(pane_->message().startsWith(QStringLiteral("transaction 1: a frame of")), qPrintable(pane_->message()));
    QVERIFY(pane_->record());
    QCOMPARE(pane_->fieldCount(), static_cast<int>(pane_->record()->dissection.fieldCount()));
    QVERIFY(pane_->fieldCount() > 20);

    // Where the tape's own safetensors reader puts the tensor's bytes.
    const std::vector<std::uint8_t> file = test::readAll(tape_);
    const std::uint64_t length = readLittleEndian<std::uint64_t>(file.data() + record.offset + 8);
    const ByteSpan blob(file.data() + record.offset + 56, length);
    const SafetensorsView view = SafetensorsView::parse(blob);
    const TensorView* delta = view.find("delta/weight");
    QVERIFY(delta);
    const quint64 begin = record.offset + 56 + static_cast<quint64>(delta->data.data - blob.data);

    QTreeWidgetItem* entry = findField(pane_->fieldTree(), QStringLiteral("delta/weight"));
    QVERIFY(entry);
    pane_->fieldTree()->setCurrentItem(entry);
    QVERIFY(pane_->highlightedRange());
    QCOMPARE(pane_->highlightedRange()->begin, begin);
    QCOMPARE(pane_->highlightedRange()->end, begin + delta->data.size);
    QVERIFY(pane_->isByteVisible(begin));  // scrolled to
    QVERIFY(entry->toolTip(0).contains(QString::number(begin)));
    QVERIFY(!pane_->findingByte());
}

void TestRecordBytesPane::clickingAByteSelectsTheInnermostField()
{
    const RecordLocation& record = transaction(0);
    QVERIFY(show(tape_, record, std::nullopt, QStringLiteral("transaction 0")));
    RecordHexView* hex = pane_->hexView();
    // The header check's second byte, found on screen as a click would find it.
    const quint64 target = record.offset + 17;
    QPoint at(-1, -1);
    for (int y = 1; y < hex->viewport()->height() && at.x() < 0; y += 2)
        for (int x = 1; x < hex->viewport()->width() && at.x() < 0; x += 2)
            if (hex->offsetAt(QPoint(x, y)) == target)
                at = QPoint(x, y);
    QVERIFY2(at.x() >= 0, "the byte is not on screen");
    QTest::mouseClick(hex->viewport(), Qt::LeftButton, Qt::NoModifier, at);
    QVERIFY(pane_->fieldTree()->currentItem());
    QCOMPARE(pane_->fieldTree()->currentItem()->text(0), QStringLiteral("header check"));
    QCOMPARE(*pane_->highlightedRange(), (ByteRange{record.offset + 16, record.offset + 20}));
}

void TestRecordBytesPane::theFindingsByteIsMarkedAndInView()
{
    // A flipped byte in a transaction: the scan's finding names the record and the digest's
    // byte, which is what the workstation hands the pane.
    const RecordLocation& record = transaction(2);
    std::vector<std::uint8_t> bytes = test::readAll(tape_);
    bytes[record.offset + 120] ^= 0x04;
    const std::string damaged = dir_.file("damaged.zkdv");
    test::writeAll(damaged, bytes);
    const TapeSummary summary = scanTape(damaged);
    QVERIFY(summary.problem && summary.problem->frameOffset == record.offset);
    const quint64 finding = summary.problem->byteOffset;
    QCOMPARE(finding, record.offset + record.frameSize - 32);
    QVERIFY(show(damaged, record, finding, QString::fromStdString(summary.problem->recordText())));

    QCOMPARE(pane_->findingByte(), std::optional<quint64>(finding));
    QVERIFY(pane_->isByteVisible(finding));
    QVERIFY2(!pane_->isByteVisible(record.offset), "the dump should have scrolled away from the frame's start");
    QCOMPARE(pane_->fieldTree()->currentItem()->text(0), QStringLiteral("digest"));
    QCOMPARE(*pane_->highlightedRange(), (ByteRange{finding, finding + 32}));
    QVERIFY2(pane_->message().contains(QStringLiteral("digest: expected")), qPrintable(pane_->message()));
    QVERIFY(pane_->fieldTree()->currentItem()->text(1).contains(QStringLiteral("the record's bytes were altered")));
}

// The wiring the workstation makes: the banner's button hands the pane the record at fault.
void TestRecordBytesPane::theFindingBannerHandsOverTheRecordAtFault()
{
    const RecordLocation& record = transaction(1);
    std::vector<std::uint8_t> bytes = test::readAll(tape_);
    bytes[record.offset + 20] = 0x01;  // the reserved field: the header check still vouches for the type
    const std::string damaged = dir_.file("reserved.zkdv");
    test::writeAll(damaged, bytes);
    const QString path = QString::fromStdString(damaged);
    FindingBanner banner;
    banner.showFindings({TapeFinding{path, QStringLiteral("corrupt"), scanTape(damaged)}});
    QVERIFY2(banner.text().contains(QStringLiteral("(transaction 1), byte offset %1").arg(record.offset + 20)), qPrintable(banner.text()));
    QPushButton* button = nullptr;
    for (QPushButton* candidate : banner.findChildren<QPushButton*>())
        if (candidate->text() == QStringLiteral("Show Record Bytes"))
            button = candidate;
    QVERIFY(button && button->isEnabled());

    QSignalSpy requested(&banner, &FindingBanner::recordBytesRequested);
    QSignalSpy loaded(pane_, &RecordBytesPane::loaded);
    connect(&banner, &FindingBanner::recordBytesRequested, pane_,
            [this](const QString& tape, quint64 frame, quint64 fault, const QString& caption) { pane_->showRecord(tape, frame, fault, caption); });
    QTest::mouseClick(button, Qt::LeftButton);
    QCOMPARE(requested.count(), 1);
    QCOMPARE(requested.front().at(1).toULongLong(), record.offset);
    QCOMPARE(requested.front().at(2).toULongLong(), record.offset + 20);
    QVERIFY(loaded.wait(10000));
    QVERIFY2(pane_->message().startsWith(QStringLiteral("record %1 (transaction 1) of reserved.zkdv:").arg(record.index)),
             qPrintable(pane_->message()));
    QCOMPARE(pane_->fieldTree()->currentItem()->text(0), QStringLiteral("reserved"));
    QVERIFY(pane_->isByteVisible(record.offset + 20));

    // A finding in the file header names no record's frame: nothing to show.
    bytes = test::readAll(tape_);
    bytes[12] = 0x01;
    test::writeAll(damaged, bytes);
    banner.showFindings({TapeFinding{path, QStringLiteral("corrupt"), scanTape(damaged)}});
    QVERIFY(!button->isEnabled());
}

void TestRecordBytesPane::aLargeRecordShowsTheWindowAroundTheFinding()
{
    pane_->setShownBytesLimit(128);
    const RecordLocation& record = transaction(0);
    QVERIFY(show(tape_, record, std::nullopt, QStringLiteral("transaction 0")));
    QCOMPARE(pane_->hexView()->byteCount(), 128);
    QVERIFY2(pane_->message().contains(QStringLiteral("Partial")), qPrintable(pane_->message()));
    // A field past the window is still selected, and the pane says its bytes are not shown.
    pane_->fieldTree()->setCurrentItem(findField(pane_->fieldTree(), QStringLiteral("digest")));
    QVERIFY2(pane_->message().contains(QStringLiteral("outside the bytes the dump holds")), qPrintable(pane_->message()));

    const quint64 finding = record.offset + record.frameSize - 5;
    QVERIFY(show(tape_, record, finding, QStringLiteral("transaction 0")));
    QVERIFY(pane_->hexView()->holds(finding));
    QVERIFY(pane_->isByteVisible(finding));
    QCOMPARE(pane_->fieldTree()->currentItem()->text(0), QStringLiteral("digest"));
}

void TestRecordBytesPane::aMissingTapeIsAMessage()
{
    RecordLocation record = transaction(0);
    QVERIFY(show(dir_.file("moved-away.zkdv"), record, std::nullopt, QStringLiteral("transaction 0")));
    QVERIFY2(pane_->message().startsWith(QStringLiteral("Cannot show transaction 0: cannot open")), qPrintable(pane_->message()));
    QCOMPARE(pane_->fieldCount(), 0);
    QCOMPARE(pane_->hexView()->byteCount(), 0);
    QVERIFY(!QApplication::activeModalWidget());

    pane_->clear(QStringLiteral("No transaction selected."));
    QCOMPARE(pane_->message(), QStringLiteral("No transaction selected."));
}

void TestRecordBytesPane::aNewerRequestSupersedesAnOlderOne()
{
    QSignalSpy loaded(pane_, &RecordBytesPane::loaded);
    pane_->showRecord(QString::fromStdString(tape_), transaction(0).offset, std::nullopt, QStringLiteral("first"));
    pane_->showRecord(QString::fromStdString(tape_), transaction(1).offset, std::nullopt, QStringLiteral("second"));
    QVERIFY(loaded.wait(10000));
    QVERIFY(!pane_->isLoading());
    QVERIFY2(pane_->message().startsWith(QStringLiteral("second:")), qPrintable(pane_->message()));
    QTest::qWait(100);  // the first read ending later changes nothing
    QCOMPARE(loaded.count(), 1);
    QCOMPARE(pane_->record()->dissection.frameOffset, transaction(1).offset);
}

QTEST_MAIN(TestRecordBytesPane)
#include "test_record_bytes_pane.moc"
