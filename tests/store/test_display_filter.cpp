// Display filters (docs/display-filters.md): what each field and operator selects on a real
// case, checked against the case's own rows; refusals that say where; values that never
// become SQL; and which filter-box texts are filters rather than plain searches.

#include <QtTest>

#include <functional>
#include <set>

#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/display_filter.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/store/transaction_table.h"

using namespace zkdv;

namespace {

constexpr std::uint64_t kSteps = 60;

TensorComparison comparison(const std::string& tensor, Verdict verdict, double maxUlp)
{
    TensorComparison c;
    c.tensor = tensor;
    c.slot = "delta";
    c.verdict = verdict;
    c.metrics.maxUlp = maxUlp;
    c.metrics.bitwiseEqual = maxUlp == 0;
    c.metrics.elements = 4;
    return c;
}

// Every third transaction replayed; 9, 30 and 45 diverged on "fc.weight", the others exact,
// each comparing "loss" and "conv.bias".
std::vector<TransactionOutcome> outcomes()
{
    std::vector<TransactionOutcome> all;
    for (std::uint64_t i = 0; i < kSteps; i += 3) {
        TransactionOutcome o;
        o.index = i;
        o.segment = i / 12;
        const bool diverged = i == 9 || i == 30 || i == 45;
        o.verdict = diverged ? Verdict::Diverged : Verdict::Exact;
        o.detail = "test";
        o.comparisons.push_back(comparison("loss", Verdict::Exact, 0));
        o.comparisons.push_back(comparison("conv.bias", Verdict::Exact, 0));
        if (diverged)
            o.comparisons.push_back(comparison("fc.weight", Verdict::Diverged, 1000.0 + static_cast<double>(i)));
        all.push_back(o);
    }
    return all;
}

}  // namespace

class TestDisplayFilter : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void selects_data();
    void selects();
    void refusalsSayWhere_data();
    void refusalsSayWhere();
    void valuesNeverBecomeSql();
    void whichTextsAreFilters_data();
    void whichTextsAreFilters();
    void plainTextMatchesEveryComparedTensor();

private:
    // The transactions `filter` leaves in the table.
    std::set<std::uint64_t> shown(const std::string& filter);
    // The transactions for which `predicate(index, loss)` holds, by brute force.
    std::set<std::uint64_t> expected(const std::function<bool(std::uint64_t index, double loss)>& predicate);

    test::TempDir dir_;
    std::string case_;
    std::int64_t tape_ = 0;
    std::vector<double> losses_;
};

void TestDisplayFilter::initTestCase()
{
    SyntheticDemoOptions options;
    options.steps = kSteps;
    writeSyntheticDemoTape(dir_.file("demo.zkdv"), options);
    case_ = dir_.file("demo.zkaudit");
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    tape_ = store.ingestTape(dir_.file("demo.zkdv")).tapeId;
    ReplayStore replays(store.database());
    ReplayRunInfo info;
    info.tapeId = tape_;
    info.device = "cpu";
    info.selection = "ids:test";
    const std::int64_t run = replays.beginRun(info);
    replays.storeOutcomes(run, outcomes());
    replays.finishRun(run, RunStatus::Finished, "");
    // The auditor's notes: 9 and 30 are diverged, 4 and 7 not replayed.
    TransactionNotes notes(store.database(), tape_);
    notes.set(4, TransactionFlag::Suspicious, "lr jumps here");
    notes.set(9, TransactionFlag::Question, "Ask the trainer about this one");
    notes.set(30, TransactionFlag::Confirmed, "");
    notes.set(7, TransactionFlag::None, "looked fine");
    Statement rows = store.database().prepare("SELECT loss FROM transactions WHERE tape_id = ?1 ORDER BY idx");
    rows.bind(1, tape_);
    while (rows.step())
        losses_.push_back(rows.real(0));
    QCOMPARE(losses_.size(), std::size_t(kSteps));
}

std::set<std::uint64_t> TestDisplayFilter::shown(const std::string& filter)
{
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    TransactionTable table(store.database(), tape_);
    table.setFilter(TransactionTable::QuickFilter::All, filter);
    std::set<std::uint64_t> result;
    for (std::uint64_t row = 0; row < table.rowCount(); ++row)
        result.insert(table.transactionAt(row));
    return result;
}

std::set<std::uint64_t> TestDisplayFilter::expected(const std::function<bool(std::uint64_t, double)>& predicate)
{
    std::set<std::uint64_t> result;
    for (std::uint64_t i = 0; i < kSteps; ++i)
        if (predicate(i, losses_[i]))
            result.insert(i);
    return result;
}

void TestDisplayFilter::selects_data()
{
    QTest::addColumn<QString>("filter");
    QTest::addColumn<QString>("expectation");
    QTest::newRow("verdict") << "verdict == diverged" << "diverged";
    QTest::newRow("verdict, words") << "verdict = 'diverged' and index > 10" << "diverged-after-10";
    QTest::newRow("not equal: replayed ones only") << "verdict != diverged" << "exact";
    QTest::newRow("negation includes the not replayed") << "!(verdict == diverged)" << "not-diverged";
    QTest::newRow("replayed flag") << "replayed" << "replayed";
    QTest::newRow("not replayed, or") << "!replayed || index == 0" << "not-replayed-or-0";
    QTest::newRow("numbers") << "index >= 10 && index < 20" << "10-19";
    QTest::newRow("negative number") << "index > -1 && index <= 2" << "0-2";
    QTest::newRow("loss") << "loss > 0.69" << "loss";
    QTest::newRow("worst ulp") << "worst_ulp >= 1030" << "ulp";
    QTest::newRow("any tensor") << "tensor contains \"FC\"" << "diverged";
    QTest::newRow("tensor equal") << "tensor == conv.bias" << "replayed";
    QTest::newRow("worst tensor") << "worst_tensor == 'fc.weight'" << "diverged";
    QTest::newRow("precedence") << "index == 1 || index == 2 && replayed" << "1";
    QTest::newRow("flag") << "flag == suspicious" << "4";
    QTest::newRow("flag, quoted") << "flag == 'question'" << "9";
    QTest::newRow("flag not none") << "flag != none" << "flagged";
    QTest::newRow("flagged") << "flagged" << "flagged";
    QTest::newRow("flag none, with a note") << "flag == none && note != \"\"" << "7";
    QTest::newRow("note contains, any case") << "note contains \"ASK\"" << "9";
    QTest::newRow("flagged and diverged") << "flagged && verdict == diverged" << "9,30";
}

void TestDisplayFilter::selects()
{
    QFETCH(QString, filter);
    QFETCH(QString, expectation);
    const std::set<std::uint64_t> diverged = {9, 30, 45};
    const auto replayed = [](std::uint64_t i) { return i % 3 == 0; };
    std::set<std::uint64_t> want;
    if (expectation == "diverged")
        want = diverged;
    else if (expectation == "diverged-after-10")
        want = {30, 45};
    else if (expectation == "exact")
        want = expected([&](std::uint64_t i, double) { return replayed(i) && !diverged.count(i); });
    else if (expectation == "not-diverged")
        want = expected([&](std::uint64_t i, double) { return !diverged.count(i); });
    else if (expectation == "replayed")
        want = expected([&](std::uint64_t i, double) { return replayed(i); });
    else if (expectation == "not-replayed-or-0")
        want = expected([&](std::uint64_t i, double) { return !replayed(i) || i == 0; });
    else if (expectation == "10-19")
        want = expected([](std::uint64_t i, double) { return i >= 10 && i < 20; });
    else if (expectation == "0-2")
        want = {0, 1, 2};
    else if (expectation == "loss")
        want = expected([](std::uint64_t, double loss) { return loss > 0.69; });
    else if (expectation == "ulp")
        want = {30, 45};
    else if (expectation == "1")
        want = {1};  // && binds tighter: 2 is not replayed
    else if (expectation == "4")
        want = {4};
    else if (expectation == "7")
        want = {7};
    else if (expectation == "9")
        want = {9};
    else if (expectation == "9,30")
        want = {9, 30};
    else if (expectation == "flagged")
        want = {4, 9, 30};
    const std::set<std::uint64_t> got = shown(filter.toStdString());
    QCOMPARE(got, want);
    if (expectation == "loss")
        QVERIFY(!got.empty() && got.size() < kSteps);  // the threshold splits the tape
}

void TestDisplayFilter::refusalsSayWhere_data()
{
    QTest::addColumn<QString>("filter");
    QTest::addColumn<int>("position");
    QTest::addColumn<QString>("says");
    QTest::newRow("no value") << "loss >" << 7 << "compared with a number, not the end of the filter";
    QTest::newRow("unknown field") << "los > 1" << 1 << "no field named 'los'";
    QTest::newRow("unknown verdict") << "verdict == maybe" << 12 << "a verdict is exact, within-tolerance, diverged or unverifiable";
    QTest::newRow("flag compared") << "sampled == 1" << 9 << "'sampled' is true or false";
    QTest::newRow("text with <") << "tensor < 3" << 8 << "'tensor' is text";
    QTest::newRow("number contains") << "loss contains 3" << 6 << "'loss' is a number";
    QTest::newRow("open quote") << "tensor == \"fc" << 11 << "no closing quote";
    QTest::newRow("missing paren") << "(replayed && index > 3" << 23 << "expected ')'";
    QTest::newRow("dangling") << "replayed index" << 10 << "expected && or ||";
    QTest::newRow("stray character") << "index > 3 # comment" << 11 << "unexpected '#'";
    QTest::newRow("empty") << "   " << 4 << "the filter is empty";
    QTest::newRow("unknown flag") << "flag == maybe" << 9 << "a flag is none, question, suspicious or confirmed";
    QTest::newRow("flag ordered") << "flag < question" << 6 << "a flag is compared with == or !=";
    QTest::newRow("deep") << QString(70, QLatin1Char('(')) + "replayed" + QString(70, QLatin1Char(')')) << 1 << "nests more than 64 levels";
}

void TestDisplayFilter::refusalsSayWhere()
{
    QFETCH(QString, filter);
    QFETCH(int, position);
    QFETCH(QString, says);
    try {
        compileDisplayFilter(filter.toStdString());
        QFAIL("compiled");
    } catch (const DisplayFilterError& error) {
        QCOMPARE(static_cast<int>(error.position()), position);
        QVERIFY2(QString::fromUtf8(error.what()).contains(says), error.what());
        QVERIFY2(QString::fromUtf8(error.what()).startsWith(QStringLiteral("display filter, at character %1: ").arg(position)), error.what());
    }
    // Through the table, as the workstation's filter box uses it: the same error, no rows lost.
    if (looksLikeDisplayFilter(filter.toStdString()))
        QVERIFY_THROWS_EXCEPTION(DisplayFilterError, shown(filter.toStdString()));
}

void TestDisplayFilter::valuesNeverBecomeSql()
{
    const CompiledDisplayFilter compiled = compileDisplayFilter("worst_tensor == \"x') OR 1=1 --\" || loss > 1e300");
    QVERIFY(compiled.sql.find("OR 1=1") == std::string::npos);
    QCOMPARE(compiled.values.size(), std::size_t(2));
    QCOMPARE(std::get<std::string>(compiled.values[0]), std::string("x') OR 1=1 --"));
    QCOMPARE(std::get<double>(compiled.values[1]), 1e300);
    QVERIFY(shown("worst_tensor == \"x') OR 1=1 --\"").empty());
}

void TestDisplayFilter::whichTextsAreFilters_data()
{
    QTest::addColumn<QString>("text");
    QTest::addColumn<bool>("filter");
    QTest::newRow("an index") << "12" << false;
    QTest::newRow("a range") << "10-19" << false;
    QTest::newRow("a range with spaces") << "10 - 19" << false;
    QTest::newRow("a tensor name") << "fc.weight" << false;
    QTest::newRow("a verdict") << "diverged" << false;
    QTest::newRow("a number field alone") << "loss" << false;
    QTest::newRow("a flag") << "sampled" << true;
    QTest::newRow("a comparison") << "loss>1" << true;
    QTest::newRow("a negation") << "!replayed" << true;
    QTest::newRow("words") << "replayed and sampled" << true;
}

void TestDisplayFilter::whichTextsAreFilters()
{
    QFETCH(QString, text);
    QFETCH(bool, filter);
    QCOMPARE(looksLikeDisplayFilter(text.toStdString()), filter);
}

void TestDisplayFilter::plainTextMatchesEveryComparedTensor()
{
    // "conv" is never a worst tensor (those are loss or fc.weight), but every replayed
    // transaction compared conv.bias: the plain search finds them all.
    const std::set<std::uint64_t> got = shown("conv");
    QCOMPARE(got, expected([](std::uint64_t i, double) { return i % 3 == 0; }));
}

QTEST_MAIN(TestDisplayFilter)
#include "test_display_filter.moc"
