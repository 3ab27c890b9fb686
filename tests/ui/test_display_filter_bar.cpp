// The filter row over the transaction table (offscreen): field names and comparisons
// completed as they are typed, the compile state shown at once (green, red with the error
// and where, neutral), the table given only a filter that compiles, after the typing
// stops; and the wheel guard its combo box shares with the detail pane.

#include <QtTest>

#include <QAbstractItemView>
#include <QComboBox>
#include <QCompleter>
#include <QLabel>
#include <QLineEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QVBoxLayout>

#include "widgets/display_filter_bar.h"
#include "widgets/wheel_guard.h"

using namespace zkdv::ui;

namespace {

QStringList completions(QCompleter* completer)
{
    QStringList list;
    for (int i = 0; i < completer->completionCount(); ++i) {
        completer->setCurrentRow(i);
        list << completer->currentCompletion();
    }
    return list;
}

QWheelEvent wheelOver(QWidget* widget, int notches)
{
    const QPointF at(widget->width() / 2.0, widget->height() / 2.0);
    return QWheelEvent(at, widget->mapToGlobal(at), QPoint(), QPoint(0, -120 * notches), Qt::NoButton, Qt::NoModifier, Qt::NoScrollPhase,
                       false);
}

}  // namespace

class TestDisplayFilterBar : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void init();
    void cleanup();
    void typingCompletesFieldNamesAndComparisons_data();
    void typingCompletesFieldNamesAndComparisons();
    void aChosenCompletionReplacesTheWordTyped();
    void theCompileStateShowsAsYouType_data();
    void theCompileStateShowsAsYouType();
    void theTableGetsOnlyAFilterThatCompilesAfterTheTypingStops();
    void theWheelPassesAnUnfocusedComboToTheScrollArea();

private:
    std::unique_ptr<DisplayFilterBar> bar_;
};

void TestDisplayFilterBar::init()
{
    bar_ = std::make_unique<DisplayFilterBar>();
    bar_->resize(600, bar_->sizeHint().height());
    bar_->show();
    QVERIFY(QTest::qWaitForWindowExposed(bar_.get()));
    bar_->filterEdit()->setFocus();
}

void TestDisplayFilterBar::cleanup() { bar_.reset(); }

void TestDisplayFilterBar::typingCompletesFieldNamesAndComparisons_data()
{
    QTest::addColumn<QString>("typed");
    QTest::addColumn<QStringList>("offered");
    QTest::newRow("a field") << "ver" << QStringList{QStringLiteral("verdict")};
    QTest::newRow("fields sharing a prefix") << "worst_" << QStringList{QStringLiteral("worst_rel"), QStringLiteral("worst_tensor"), QStringLiteral("worst_ulp")};
    QTest::newRow("a field after an operator") << "loss > 0.1 && fl" << QStringList{QStringLiteral("flag"), QStringLiteral("flagged")};
    QTest::newRow("a number's comparisons") << "loss " << QStringList{QStringLiteral("!="), QStringLiteral("<"), QStringLiteral("<="),
                                                                    QStringLiteral("=="), QStringLiteral(">"), QStringLiteral(">=")};
    QTest::newRow("a verdict's comparisons") << "verdict " << QStringList{QStringLiteral("!="), QStringLiteral("==")};
    QTest::newRow("contains, for text") << "tensor c" << QStringList{QStringLiteral("contains")};
}

void TestDisplayFilterBar::typingCompletesFieldNamesAndComparisons()
{
    QFETCH(QString, typed);
    QFETCH(QStringList, offered);
    QTest::keyClicks(bar_->filterEdit(), typed);
    QCompleter* completer = bar_->completer();
    QVERIFY(completer->popup()->isVisible());
    QStringList got = completions(completer);
    got.sort();
    QCOMPARE(got, offered);
}

void TestDisplayFilterBar::aChosenCompletionReplacesTheWordTyped()
{
    QTest::keyClicks(bar_->filterEdit(), QStringLiteral("loss > 0.1 && ver"));
    QVERIFY(bar_->completer()->popup()->isVisible());
    QCOMPARE(bar_->completer()->currentCompletion(), QStringLiteral("verdict"));
    QTest::keyClick(bar_->completer()->popup(), Qt::Key_Return);
    QCOMPARE(bar_->filterEdit()->text(), QStringLiteral("loss > 0.1 && verdict "));
    // A plain word that names no field offers nothing.
    bar_->filterEdit()->clear();
    QTest::keyClicks(bar_->filterEdit(), QStringLiteral("zz"));
    QVERIFY(!bar_->completer()->popup()->isVisible());
}

void TestDisplayFilterBar::theCompileStateShowsAsYouType_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<int>("state");
    QTest::addColumn<QString>("tipStart");
    QTest::newRow("empty") << "" << int(DisplayFilterBar::State::Empty) << "A transaction, a range";
    QTest::newRow("a range (plain search)") << "10-19" << int(DisplayFilterBar::State::PlainText) << "A transaction, a range";
    QTest::newRow("a comparison without its value") << "loss >" << int(DisplayFilterBar::State::Invalid) << "display filter, at character 7: ";
    QTest::newRow("an unknown field") << "los > 1" << int(DisplayFilterBar::State::Invalid) << "display filter, at character 1: no field named 'los'";
    QTest::newRow("a filter") << "loss > 0.1" << int(DisplayFilterBar::State::Valid) << "A valid display filter";
    QTest::newRow("two") << "loss > 0.1 && verdict == diverged" << int(DisplayFilterBar::State::Valid) << "A valid display filter";
}

void TestDisplayFilterBar::theCompileStateShowsAsYouType()
{
    QFETCH(QString, text);
    QFETCH(int, state);
    QFETCH(QString, tipStart);
    QLineEdit* edit = bar_->filterEdit();
    const QColor neutral = edit->palette().color(QPalette::Base);
    QTest::keyClicks(edit, text);
    // At once, before the 250 ms the table waits for.
    QCOMPARE(int(bar_->state()), state);
    QVERIFY2(edit->toolTip().startsWith(tipStart), qPrintable(edit->toolTip()));
    const QColor base = edit->palette().color(QPalette::Base);
    switch (DisplayFilterBar::State(state)) {
    case DisplayFilterBar::State::Valid:
        QVERIFY2(base.green() > base.red() + 40, qPrintable(base.name()));
        QVERIFY(!bar_->statusLine()->isVisible());
        break;
    case DisplayFilterBar::State::Invalid:
        QVERIFY2(base.red() > base.green() + 40, qPrintable(base.name()));
        QVERIFY(bar_->statusLine()->isVisible());
        QCOMPARE(bar_->statusLine()->text(), edit->toolTip());
        QCOMPARE(bar_->problem(), edit->toolTip());
        break;
    default:
        QCOMPARE(base, neutral);
        QVERIFY(!bar_->statusLine()->isVisible());
    }
    QCOMPARE(edit->property("filterState").toInt(), state);
}

void TestDisplayFilterBar::theTableGetsOnlyAFilterThatCompilesAfterTheTypingStops()
{
    QSignalSpy applied(bar_.get(), &DisplayFilterBar::filterChanged);
    QSignalSpy problems(bar_.get(), &DisplayFilterBar::problemFound);
    bar_->filterEdit()->setText(QStringLiteral("loss > 0.1"));
    QCOMPARE(applied.size(), 0);  // not at once
    QTRY_COMPARE(applied.size(), 1);
    QCOMPARE(applied.front().front().toString(), QStringLiteral("loss > 0.1"));
    bar_->filterEdit()->setText(QStringLiteral("loss >"));
    QVERIFY(!bar_->filterEdit()->property("filterError").toBool());  // red at once, refused after the delay
    QTRY_COMPARE(problems.size(), 1);
    QVERIFY(bar_->filterEdit()->property("filterError").toBool());
    QVERIFY(problems.front().front().toString().startsWith(QStringLiteral("display filter, at character 7: ")));
    QTest::qWait(300);
    QCOMPARE(applied.size(), 1);  // the last filter that compiled stays
    bar_->filterEdit()->clear();
    QTRY_COMPARE(applied.size(), 2);
    QCOMPARE(applied.back().front().toString(), QString());
    // The quick filter is passed on as chosen.
    QSignalSpy quick(bar_.get(), &DisplayFilterBar::quickFilterChanged);
    bar_->quickFilterBox()->setCurrentIndex(3);
    QCOMPARE(quick.size(), 1);
    QCOMPARE(quick.front().front().toInt(), 3);
}

void TestDisplayFilterBar::theWheelPassesAnUnfocusedComboToTheScrollArea()
{
    // The bar's own combo box is guarded.
    QComboBox* quick = bar_->quickFilterBox();
    QCOMPARE(quick->focusPolicy(), Qt::StrongFocus);
    QWheelEvent overQuick = wheelOver(quick, 1);
    QApplication::sendEvent(quick, &overQuick);
    QCOMPARE(quick->currentIndex(), 0);

    // A combo box inside a scroll area, as in the detail pane.
    QScrollArea area;
    auto* body = new QWidget;
    auto* layout = new QVBoxLayout(body);
    auto* other = new QLineEdit(body);  // where the focus is
    layout->addWidget(other);
    layout->addSpacing(400);
    auto* combo = new QComboBox(body);
    combo->addItems({QStringLiteral("none"), QStringLiteral("question"), QStringLiteral("suspicious")});
    layout->addWidget(combo);
    layout->addSpacing(800);
    area.setWidget(body);
    area.resize(300, 300);
    WheelGuard::guardChildren(&area);
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    area.activateWindow();
    other->setFocus();
    QTRY_VERIFY(other->hasFocus());
    QScrollBar* bar = area.verticalScrollBar();
    QVERIFY(bar->maximum() > 0);
    const int before = bar->value();
    QVERIFY(!combo->hasFocus());
    QWheelEvent passing = wheelOver(combo, 1);
    QApplication::sendEvent(combo, &passing);
    QCOMPARE(combo->currentIndex(), 0);
    QVERIFY2(bar->value() > before, qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(bar->value())));

    // Focused (clicked, or reached by Tab), it takes the wheel.
    combo->setFocus();
    QTRY_VERIFY(combo->hasFocus());
    const int scrolled = bar->value();
    QWheelEvent chosen = wheelOver(combo, 1);
    QApplication::sendEvent(combo, &chosen);
    QCOMPARE(combo->currentIndex(), 1);
    QCOMPARE(bar->value(), scrolled);
}

QTEST_MAIN(TestDisplayFilterBar)
#include "test_display_filter_bar.moc"
