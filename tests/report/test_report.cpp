// The audit report: exact confidence bounds against independently computed values, the JSON
// of a real replayed case against its JSON Schema (docs/report.schema.json) and against the
// case's own tables, the CSV's rows, a tampered and a truncated tape said so on the first
// page, and `zkdv-audit report`.

#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "dishonest_trainer.h"
#include "file_bytes.h"
#include "audit_run.h"
#include "temp_dir.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/tape_writer.h"
#include "zkdv/util/sha256.h"

using namespace zkdv;
using nlohmann::json;

using test::readText;

namespace {

// ---- Independent statistics ------------------------------------------------------------

// P[X <= k] for X hypergeometric (N, B bad, n drawn): pmf by products and the ratio
// recurrence pmf(x+1)/pmf(x) = (B-x)(n-x) / ((x+1)(N-B-n+x+1)), in long double.
long double hyperCdf(std::uint64_t N, std::uint64_t B, std::uint64_t n, std::uint64_t k)
{
    const std::uint64_t good = N - B;
    const std::uint64_t lowest = n > good ? n - good : 0;
    // pmf(lowest) = C(B, lowest) C(good, n - lowest) / C(N, n), as a product of ratios.
    long double logPmf = 0.0L;
    auto logChoose = [](std::uint64_t a, std::uint64_t b) {
        long double s = 0.0L;
        for (std::uint64_t i = 0; i < b; ++i)
            s += std::log(static_cast<long double>(a - i)) - std::log(static_cast<long double>(i + 1));
        return s;
    };
    logPmf = logChoose(B, lowest) + logChoose(good, n - lowest) - logChoose(N, n);
    long double pmf = std::exp(logPmf);
    long double sum = 0.0L;
    for (std::uint64_t x = lowest; x <= k && x <= n && x <= B; ++x) {
        sum += pmf;
        const long double num = static_cast<long double>(B - x) * static_cast<long double>(n - x);
        const long double den = static_cast<long double>(x + 1) * static_cast<long double>(N - B - n + x + 1);
        pmf = den > 0 ? pmf * num / den : 0.0L;
    }
    return sum;
}

std::uint64_t largestBadCount(std::uint64_t N, std::uint64_t n, std::uint64_t k, long double alpha)
{
    std::uint64_t best = k;
    for (std::uint64_t B = k; B <= N; ++B)
        if (hyperCdf(N, B, n, k) >= alpha)
            best = B;
    return best;
}

long double binomialCdf(std::uint64_t n, std::uint64_t k, long double p)
{
    long double sum = 0.0L, term = std::pow(1.0L - p, static_cast<long double>(n));  // x = 0
    for (std::uint64_t x = 0; x <= k; ++x) {
        sum += term;
        term = term * static_cast<long double>(n - x) / static_cast<long double>(x + 1) * p / (1.0L - p);
    }
    return sum;
}

double bisectClopperPearson(std::uint64_t n, std::uint64_t k, long double confidence)
{
    long double low = 0.0L, high = 1.0L;
    for (int i = 0; i < 100; ++i) {
        const long double mid = (low + high) / 2;
        (binomialCdf(n, k, mid) > 1.0L - confidence ? low : high) = mid;
    }
    return static_cast<double>(high);
}

// ---- A small JSON Schema validator (the subset docs/report.schema.json uses) ----------------

bool hasType(const json& value, const std::string& type)
{
    if (type == "object") return value.is_object();
    if (type == "array") return value.is_array();
    if (type == "string") return value.is_string();
    if (type == "boolean") return value.is_boolean();
    if (type == "null") return value.is_null();
    if (type == "integer") return value.is_number_integer();
    if (type == "number") return value.is_number();
    return false;
}

// Appends "where: what" for every violation.
void validate(const json& value, const json& schema, const std::string& where, std::vector<std::string>& errors)
{
    if (schema.contains("const") && value != schema["const"])
        errors.push_back(where + ": not " + schema["const"].dump());
    if (schema.contains("enum")) {
        bool found = false;
        for (const json& option : schema["enum"])
            found = found || option == value;
        if (!found)
            errors.push_back(where + ": " + value.dump() + " not in " + schema["enum"].dump());
    }
    if (schema.contains("type")) {
        bool ok = false;
        if (schema["type"].is_array()) {
            for (const json& t : schema["type"])
                ok = ok || hasType(value, t.get<std::string>());
        } else {
            ok = hasType(value, schema["type"].get<std::string>());
        }
        if (!ok) {
            errors.push_back(where + ": " + value.dump().substr(0, 60) + " is not " + schema["type"].dump());
            return;
        }
    }
    if (schema.contains("minimum") && value.is_number() && value.get<double>() < schema["minimum"].get<double>())
        errors.push_back(where + ": below the minimum");
    if (value.is_object()) {
        if (schema.contains("required"))
            for (const json& key : schema["required"])
                if (!value.contains(key.get<std::string>()))
                    errors.push_back(where + ": missing " + key.get<std::string>());
        const json properties = schema.value("properties", json::object());
        for (auto it = value.begin(); it != value.end(); ++it) {
            if (properties.contains(it.key()))
                validate(it.value(), properties[it.key()], where + "." + it.key(), errors);
            else if (schema.contains("additionalProperties") && schema["additionalProperties"] == false)
                errors.push_back(where + ": unexpected key " + it.key());
        }
    }
    if (value.is_array() && schema.contains("items"))
        for (std::size_t i = 0; i < value.size(); ++i)
            validate(value[i], schema["items"], where + "[" + std::to_string(i) + "]", errors);
}

// ---- Tapes ---------------------------------------------------------------------------------

using test::RawRecord;
using test::isTransaction;
using test::rewriteTape;
using test::scaleElement;

std::int64_t countOf(Database& db, const std::string& sql)
{
    return db.queryInt64(sql).value_or(-1);
}

std::vector<std::string> csvLines(const std::string& csv)
{
    std::vector<std::string> lines;
    std::size_t start = 0;
    while (start < csv.size()) {
        const std::size_t end = csv.find("\r\n", start);
        if (end == std::string::npos) {
            lines.push_back(csv.substr(start));
            break;
        }
        lines.push_back(csv.substr(start, end - start));
        start = end + 2;
    }
    return lines;
}

using Result = test::AuditRun;

Result runAudit(const QStringList& arguments) { return test::runAuditCommand(arguments); }

ReplayRequest randomRequest(const char* spec, std::uint64_t seed)
{
    ReplayRequest request;
    request.selection = SelectionSpec::parse(spec);
    request.seed = seed;
    return request;
}

}  // namespace

class TestReport : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void hypergeometricBoundKnownValues();
    void clopperPearsonKnownValues();
    void jsonMatchesSchemaAndCase();
    void redoCommandRedoesTheSelection();
    void csvHasOneRowPerComparison();
    void csvQuotesPerRfc4180();
    void tamperedTapeSaysFailedFirst();
    void truncatedTapeSaysIncompleteFirst();
    void tapeEndingWithoutItsFinalStateSaysSo();
    void caseWithoutRunIsAnError();
    void nonRandomSelectionMakesNoStatement();
    void cliWritesReports();
    void laterRunNeverHidesAnEarlierFailure();
    void runsThatFoundTheSameAreNamedOnce();
    void findingReportStatesOnlyWhatIsKnown();
    void stoppedRunIsIncompleteNotFailed();
    void nothingComparedSaysNothingVerified();
    void auditorNotesAreReported();

private:
    test::TempDir dir_;
    std::string tape_, case_;
    std::vector<std::uint64_t> selected_;
    static constexpr std::uint64_t kSteps = 36;
};

void TestReport::initTestCase()
{
    tape_ = dir_.file("demo.zkdv");
    CnnDemoOptions options;
    options.steps = kSteps;
    options.batchSize = 8;
    options.updateCheckProbability = 1.0;  // full deltas everywhere, for the tampering test
    runCnnDemo(tape_, options);
    case_ = dir_.file("demo.zkaudit");
    CaseStore store(case_, CaseStore::Access::ReadWrite);
    IngestOptions withSha256;
    withSha256.computeFileSha256 = true;  // so the report names the file's SHA-256 too
    store.ingestTape(tape_, withSha256);
    const ReplaySummary summary = runReplay(store, randomRequest("random:6", 1));
    QVERIFY(summary.passed());
    selected_ = summary.selected;
    QCOMPARE(selected_.size(), std::size_t(6));
}

void TestReport::hypergeometricBoundKnownValues()
{
    // N = 1000, n = 100, k = 0: the largest B with P[X = 0] >= 0.05. P[X=0 | B] is
    // C(1000-B, 100) / C(1000, 100): 0.050141 at B = 28, 0.044982 at B = 29.
    QVERIFY(hyperCdf(1000, 28, 100, 0) >= 0.05L);
    QVERIFY(hyperCdf(1000, 29, 100, 0) < 0.05L);
    QCOMPARE(static_cast<double>(hyperCdf(1000, 28, 100, 0)), 0.050140543658440465);
    QCOMPARE(largestBadCount(1000, 100, 0, 0.05L), std::uint64_t(28));
    QCOMPARE(hypergeometricUpperCount(1000, 100, 0, 0.95), std::uint64_t(28));
    QCOMPARE(hypergeometricUpperBound(1000, 100, 0, 0.95), 0.028);
    QCOMPARE(hypergeometricUpperCount(1000, 100, 0, 0.99), largestBadCount(1000, 100, 0, 0.01L));
    QCOMPARE(hypergeometricUpperCount(1000, 100, 0, 0.99), std::uint64_t(42));
    // k > 0 and other sizes, against the independent scan.
    for (std::uint64_t k : {1u, 2u, 5u})
        for (double confidence : {0.95, 0.99}) {
            const std::uint64_t expected = largestBadCount(500, 50, k, 1.0L - static_cast<long double>(confidence));
            QCOMPARE(hypergeometricUpperCount(500, 50, k, confidence), expected);
        }
    QCOMPARE(hypergeometricUpperCount(36, 6, 0, 0.95), largestBadCount(36, 6, 0, 0.05L));
    // The whole population replayed: the bound is exactly k / N.
    for (std::uint64_t k : {0u, 1u, 7u, 40u}) {
        QCOMPARE(hypergeometricUpperBound(40, 40, k, 0.95), static_cast<double>(k) / 40.0);
        QCOMPARE(hypergeometricUpperBound(40, 40, k, 0.99), static_cast<double>(k) / 40.0);
    }
    // Every sampled transaction failed: nothing excludes that all are bad.
    QCOMPARE(hypergeometricUpperBound(1000, 100, 100, 0.95), 1.0);
    QCOMPARE(hypergeometricUpperBound(10, 3, 3, 0.99), 1.0);
    // Sampling without replacement is never less informative than the binomial bound.
    for (std::uint64_t k : {0u, 1u, 3u})
        QVERIFY(hypergeometricUpperBound(1000, 100, k, 0.95) <= clopperPearsonUpperBound(100, k, 0.95) + 1e-3);
    QVERIFY_THROWS_EXCEPTION(std::invalid_argument, hypergeometricUpperBound(10, 11, 0, 0.95));
}

void TestReport::clopperPearsonKnownValues()
{
    // k = 0: (1 - p)^n = alpha.
    QVERIFY(std::abs(clopperPearsonUpperBound(100, 0, 0.95) - (1.0 - std::pow(0.05, 0.01))) < 1e-15);
    QVERIFY(std::abs(clopperPearsonUpperBound(100, 0, 0.95) - 0.0295130496) < 1e-10);
    QVERIFY(std::abs(clopperPearsonUpperBound(100, 0, 0.99) - (1.0 - std::pow(0.01, 0.01))) < 1e-15);
    QVERIFY(std::abs(clopperPearsonUpperBound(100, 0, 0.99) - 0.0450074140) < 1e-9);
    // k = 3, n = 50, one-sided 95 %: 0.14784 (the two-sided 90 % upper limit).
    const double expected = bisectClopperPearson(50, 3, 0.95L);
    QVERIFY(std::abs(expected - 0.147837) < 1e-6);
    QVERIFY(std::abs(clopperPearsonUpperBound(50, 3, 0.95) - expected) < 1e-12);
    QVERIFY(std::abs(clopperPearsonUpperBound(50, 3, 0.99) - bisectClopperPearson(50, 3, 0.99L)) < 1e-12);
    QCOMPARE(clopperPearsonUpperBound(50, 50, 0.95), 1.0);
}

void TestReport::jsonMatchesSchemaAndCase()
{
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    const ReportData report = buildAuditReport(store);
    const json document = json::parse(renderReportJson(report));
    const json schema = json::parse(readText(std::string(ZKDV_TEST_SOURCE_DIR) + "/../docs/report.schema.json"));
    std::vector<std::string> errors;
    validate(document, schema, "$", errors);
    std::string all;
    for (const std::string& e : errors)
        all += e + "\n";
    QVERIFY2(errors.empty(), all.c_str());

    // The validator itself rejects what it should.
    json broken = document;
    broken["counts"]["exact"] = "23";
    broken.erase("tape");
    broken["extra"] = 1;
    std::vector<std::string> brokenErrors;
    validate(broken, schema, "$", brokenErrors);
    QCOMPARE(brokenErrors.size(), std::size_t(3));

    // Against the case.
    Database& db = store.database();
    const std::int64_t run = countOf(db, "SELECT max(id) FROM replay_runs");
    QCOMPARE(document["replay"]["run_id"].get<std::int64_t>(), run);
    const std::string where = " FROM verdicts WHERE run_id = " + std::to_string(run);
    QCOMPARE(document["counts"]["exact"].get<std::int64_t>(), countOf(db, "SELECT count(*)" + where + " AND verdict = 'exact'"));
    QCOMPARE(document["counts"]["within_tolerance"].get<std::int64_t>(),
             countOf(db, "SELECT count(*)" + where + " AND verdict = 'within-tolerance'"));
    QCOMPARE(document["counts"]["diverged"].get<std::int64_t>(), countOf(db, "SELECT count(*)" + where + " AND verdict = 'diverged'"));
    QCOMPARE(document["counts"]["unverifiable"].get<std::int64_t>(), countOf(db, "SELECT count(*)" + where + " AND verdict = 'unverifiable'"));
    QCOMPARE(static_cast<std::int64_t>(document["transactions"].size()), countOf(db, "SELECT count(*)" + where));
    QCOMPARE(document["replay"]["replayed_count"].get<std::int64_t>(), countOf(db, "SELECT count(*)" + where));
    QCOMPARE(document["replay"]["selected_count"].get<std::int64_t>(), countOf(db, "SELECT count(*)" + where + " AND selected = 1"));
    std::int64_t comparisons = 0;
    for (const json& t : document["transactions"])
        comparisons += static_cast<std::int64_t>(t["comparisons"].size());
    QCOMPARE(comparisons, countOf(db, "SELECT count(*) FROM metrics WHERE run_id = " + std::to_string(run)));
    QCOMPARE(document["tape"]["transaction_count"].get<std::int64_t>(), countOf(db, "SELECT count(*) FROM transactions"));
    QCOMPARE(static_cast<std::int64_t>(document["model"]["layout"].size()), countOf(db, "SELECT count(*) FROM tensors"));

    // The tape's identity: the file's SHA-256 computed here, and the case's chain head.
    const std::string bytes = readText(tape_);
    QCOMPARE(document["tape"]["file_sha256"].get<std::string>(), toHex(Sha256::of(ByteSpan(std::string_view(bytes)))));
    Statement head = db.prepare("SELECT chain_head, status FROM tapes");
    QVERIFY(head.step());
    QCOMPARE(document["tape"]["chain_head"].get<std::string>(), head.text(0));
    QCOMPARE(document["tape"]["status"].get<std::string>(), std::string("sealed"));
    QCOMPARE(document["program"]["check"].get<std::string>(), std::string("matched"));
    QCOMPARE(document["optimizer"]["contract"].get<std::string>(), std::string("Adam"));
    QVERIFY(document["optimizer"]["groups"][0].contains("lr"));

    // The conclusion and the statement.
    QVERIFY(document["conclusion"]["passed"].get<bool>());
    QVERIFY2(document["conclusion"]["headline"].get<std::string>().rfind("PASSED: all ", 0) == 0,
             document["conclusion"]["headline"].get<std::string>().c_str());
    QVERIFY(document["conclusion"]["warnings"].empty());
    QVERIFY(document["worst_divergences"].empty());  // bit for bit everywhere
    const json& sampling = document["sampling"];
    QVERIFY(sampling.is_object());
    QCOMPARE(sampling["population"].get<std::uint64_t>(), kSteps);
    QCOMPARE(sampling["sampled"].get<std::uint64_t>(), std::uint64_t(6));
    QCOMPARE(sampling["failures"].get<std::uint64_t>(), std::uint64_t(0));
    QCOMPARE(sampling["bad_upper_95"].get<std::uint64_t>(), largestBadCount(kSteps, 6, 0, 0.05L));
    QCOMPARE(sampling["bad_upper_99"].get<std::uint64_t>(), largestBadCount(kSteps, 6, 0, 0.01L));
    QCOMPARE(sampling["upper_95"].get<double>(), static_cast<double>(largestBadCount(kSteps, 6, 0, 0.05L)) / kSteps);
    QVERIFY(sampling["sentence"].get<std::string>().find("seed 1") != std::string::npos);

    // Every transaction of the report is a verdict of the run, selected ones as the selection said.
    std::set<std::uint64_t> selected;
    for (const json& t : document["transactions"])
        if (t["selected"].get<bool>())
            selected.insert(t["index"].get<std::uint64_t>());
    QCOMPARE(selected, std::set<std::uint64_t>(selected_.begin(), selected_.end()));
}

void TestReport::redoCommandRedoesTheSelection()
{
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    const ReportData report = buildAuditReport(store);
    QVERIFY2(report.redoCommand.find("zkdv-audit replay ") == 0, report.redoCommand.c_str());
    QVERIFY2(report.redoCommand.find("--select random:6 --seed 1 --device cpu --tolerance ulp=64,rel=0.0001,fingerprint=0.0001") !=
                 std::string::npos,
             report.redoCommand.c_str());
    // The same selection and seed choose the same transactions again.
    const std::string copy = dir_.file("redo.zkaudit");
    {
        CaseStore redo(copy, CaseStore::Access::ReadWrite);
        redo.ingestTape(tape_);
        ReplayRequest request = randomRequest(report.selection.c_str(), report.seed);
        const ReplaySummary again = runReplay(redo, request);
        QCOMPARE(again.selected, selected_);
    }
}

void TestReport::csvHasOneRowPerComparison()
{
    CaseStore store(case_, CaseStore::Access::ReadOnly);
    const ReportData report = buildAuditReport(store);
    const std::string csv = renderReportCsv(report);
    const std::vector<std::string> lines = csvLines(csv);
    std::size_t comparisons = 0;
    for (const ReportTransaction& t : report.transactions) {
        QVERIFY(!t.comparisons.empty());
        comparisons += t.comparisons.size();
    }
    QCOMPARE(lines.size(), comparisons + 1);
    QCOMPARE(lines.front(), std::string("index,segment,selected,transaction_verdict,tensor,slot,comparison_verdict,elements,bitwise_equal,"
                                        "max_abs,rel_l2,cosine,max_ulp,mean_ulp,nan_mismatches,inf_mismatches,flag,note"));
    for (const std::string& line : lines)
        QCOMPARE(std::count(line.begin(), line.end(), ','), std::ptrdiff_t(17));
    QVERIFY(csv.size() >= 2 && csv.compare(csv.size() - 2, 2, "\r\n") == 0);
    // The first data row is the first comparison of the first replayed transaction.
    const ReportTransaction& first = report.transactions.front();
    const std::string expected = std::to_string(first.index) + "," + std::to_string(first.segment) + "," + (first.selected ? "1" : "0") +
                                 "," + std::string(verdictName(first.verdict)) + "," + first.comparisons.front().tensor + "," + first.comparisons.front().slot + ",";
    QVERIFY2(lines[1].rfind(expected, 0) == 0, lines[1].c_str());
}

void TestReport::csvQuotesPerRfc4180()
{
    ReportData report;
    ReportTransaction t;
    t.index = 3;
    t.verdict = Verdict::Diverged;
    ReportComparison c;
    c.tensor = "odd,\"name\"";
    c.slot = "delta";
    c.verdict = Verdict::Diverged;
    c.metrics.relativeL2 = std::numeric_limits<double>::infinity();
    c.metrics.maxAbs = std::numeric_limits<double>::quiet_NaN();
    c.metrics.bitwiseEqual = false;
    c.metrics.elements = 4;
    t.comparisons.push_back(c);
    report.transactions.push_back(t);
    ReportTransaction empty;  // unverifiable: nothing compared, still one row
    empty.index = 4;
    empty.verdict = Verdict::Unverifiable;
    report.transactions.push_back(empty);
    const std::vector<std::string> lines = csvLines(renderReportCsv(report));
    QCOMPARE(lines.size(), std::size_t(3));
    QCOMPARE(lines[1], std::string("3,0,1,diverged,\"odd,\"\"name\"\"\",delta,diverged,4,0,nan,inf,1,0,0,0,0,none,"));
    QCOMPARE(lines[2], std::string("4,0,1,unverifiable,,,,,,,,,,,,,none,"));
}

void TestReport::tamperedTapeSaysFailedFirst()
{
    const std::uint64_t victim = selected_.front();
    const std::string tampered = dir_.file("tampered.zkdv");
    rewriteTape(tape_, tampered, [&](RawRecord& record) {
        if (isTransaction(record, victim))
            scaleElement(record, "delta/fc.weight", 3, 1.5f);
    });
    QVERIFY(scanTape(tampered).complete());  // the chain is valid: only a replay can tell
    const std::string casePath = dir_.file("tampered.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(tampered);
    const ReplaySummary summary = runReplay(store, randomRequest("random:6", 1));
    QVERIFY(!summary.passed());
    QCOMPARE(summary.selected, selected_);

    const ReportData report = buildAuditReport(store);
    qInfo("%s\n%s", report.headline.c_str(), report.warnings.empty() ? "" : report.warnings.front().c_str());
    QVERIFY(!report.passed());
    const std::string expected = "FAILED: transaction " + std::to_string(victim) + " does not reproduce what the tape claims";
    QVERIFY2(report.headline.rfind(expected, 0) == 0, report.headline.c_str());
    QVERIFY2(report.headline.find("cannot be trusted") != std::string::npos, report.headline.c_str());
    QVERIFY(!report.warnings.empty());
    QVERIFY2(report.warnings.front().find("transaction " + std::to_string(victim)) != std::string::npos, report.warnings.front().c_str());
    QVERIFY2(report.warnings.front().find("Tampering") != std::string::npos, report.warnings.front().c_str());
    QVERIFY(report.diverged >= 1);
    // The worst divergence names the tensor and slot that were altered.
    QVERIFY(!report.worstDivergences.empty());
    bool named = false;
    for (const ReportComparison& c : report.worstDivergences)
        named = named || (c.tensor == "fc.weight" && c.slot == "delta" && c.transaction == victim);
    QVERIFY(named);
    QCOMPARE(report.worstDivergences.front().verdict, Verdict::Diverged);
    // The statement counts the failure.
    QVERIFY(report.sampling.has_value());
    QVERIFY(report.sampling->failures >= 1);
    QCOMPARE(report.sampling->badUpper95, largestBadCount(kSteps, 6, report.sampling->failures, 0.05L));
    // The JSON says the same, and still fits the schema.
    const json document = json::parse(renderReportJson(report));
    QCOMPARE(document["conclusion"]["headline"].get<std::string>(), report.headline);
    QCOMPARE(document["conclusion"]["warnings"][0].get<std::string>(), report.warnings.front());
    std::vector<std::string> errors;
    validate(document, json::parse(readText(std::string(ZKDV_TEST_SOURCE_DIR) + "/../docs/report.schema.json")), "$", errors);
    QVERIFY2(errors.empty(), errors.empty() ? "" : errors.front().c_str());
}

void TestReport::truncatedTapeSaysIncompleteFirst()
{
    const std::string bytes = readText(tape_);
    const std::string truncated = dir_.file("truncated.zkdv");
    {
        std::ofstream out(truncated, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size() * 6 / 10));
    }
    const std::string casePath = dir_.file("truncated.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    IngestOptions options;
    options.allowIncomplete = true;
    const IngestResult ingested = store.ingestTape(truncated, options);
    QCOMPARE(ingested.summary.complete(), false);
    runReplay(store, randomRequest("random:3", 1));
    const ReportData report = buildAuditReport(store);
    QCOMPARE(report.tapeStatus, std::string("truncated"));
    QVERIFY(!report.passed());
    QVERIFY(!report.warnings.empty());
    const std::string expected = "This tape is incomplete (truncated at record " + std::to_string(report.recordCount) +
                                 " and never sealed): it does not prove anything about training beyond transaction " +
                                 std::to_string(report.transactionCount - 1) + ".";
    QCOMPARE(report.warnings.front(), expected);
    QVERIFY2(report.headline.rfind("PASSED", 0) != 0, report.headline.c_str());
    QVERIFY(report.transactionCount < kSteps);
}

// A golden 1.3 tape of 7 transactions at interval 6 ends without the state after its last
// transaction (tape format 6.2): the report says that transaction 6 was compared with no
// recorded state. A 1.5 tape always ends with it, and its report says nothing of the kind.
void TestReport::tapeEndingWithoutItsFinalStateSaysSo()
{
    const std::string old = dir_.file("cnn-sgd-1.3.zkdv");
    std::filesystem::copy_file(ZKDV_TEST_DATA_DIR "/golden/cnn-sgd-1.3.zkdv", old, std::filesystem::copy_options::overwrite_existing);
    CaseStore store(dir_.file("old-format.zkaudit"), CaseStore::Access::ReadWrite);
    store.ingestTape(old);
    ReplayRequest request;
    request.selection = SelectionSpec::parse("all");
    runReplay(store, request);
    const ReportData report = buildAuditReport(store);
    QCOMPARE(report.tapeFormat, std::string("1.3"));
    const std::string expected =
        "This tape (format 1.3) ends without the state after its last transaction: transaction 6 changed the model after the last "
        "snapshot, and a replay compares that with no recorded state, only with their own checks, so a change of the model there "
        "within the tolerance would pass. Tapes of format 1.5 and later end with that state.";
    QVERIFY2(std::count(report.warnings.begin(), report.warnings.end(), expected) == 1, report.headline.c_str());

    const std::string recent = dir_.file("final-state.zkdv");
    CnnDemoOptions options;
    options.steps = 7;
    options.snapshotInterval = 6;
    options.batchSize = 4;
    runCnnDemo(recent, options);
    CaseStore recentStore(dir_.file("final-state.zkaudit"), CaseStore::Access::ReadWrite);
    recentStore.ingestTape(recent);
    runReplay(recentStore, request);
    const ReportData recentReport = buildAuditReport(recentStore);
    QVERIFY2(recentReport.passed(), recentReport.headline.c_str());
    QVERIFY(!recentReport.endsWithoutSnapshotFrom);
    for (const std::string& warning : recentReport.warnings)
        QVERIFY2(warning.find("ends without the state") == std::string::npos, warning.c_str());
}

void TestReport::caseWithoutRunIsAnError()
{
    const std::string casePath = dir_.file("unreplayed.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(tape_);
    try {
        buildAuditReport(store);
        QFAIL("a case without a replay run gave a report");
    } catch (const ReportError& error) {
        QVERIFY2(std::string(error.what()).find("replay first: zkdv-audit replay") != std::string::npos, error.what());
    }
    ReportOptions options;
    options.runId = 99;
    QVERIFY_THROWS_EXCEPTION(ReportError, buildAuditReport(store, options));
    options = {};
    options.tapeId = 42;
    QVERIFY_THROWS_EXCEPTION(ReportError, buildAuditReport(store, options));
}

void TestReport::nonRandomSelectionMakesNoStatement()
{
    const std::string casePath = dir_.file("stratified.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(tape_);
    runReplay(store, randomRequest("stratified:3", 2));
    runReplay(store, randomRequest("ids:13", 0));
    ReportData report = buildAuditReport(store);  // the newest: ids
    QCOMPARE(report.selection, std::string("ids:13"));
    QVERIFY(!report.sampling);
    QVERIFY2(report.samplingNote.find("chosen by hand") != std::string::npos, report.samplingNote.c_str());
    ReportOptions options;
    options.runId = report.runId - 1;
    report = buildAuditReport(store, options);
    QCOMPARE(report.selection, std::string("stratified:3"));
    QVERIFY(!report.sampling);
    QVERIFY2(report.samplingNote.find("stratified") != std::string::npos, report.samplingNote.c_str());
    QVERIFY(json::parse(renderReportJson(report))["sampling"].is_null());
}

void TestReport::laterRunNeverHidesAnEarlierFailure()
{
    const std::uint64_t victim = selected_.front();
    const std::string tampered = dir_.file("tampered-twice.zkdv");
    rewriteTape(tape_, tampered, [&](RawRecord& record) {
        if (isTransaction(record, victim))
            scaleElement(record, "delta/fc.weight", 3, 1.5f);
    });
    const std::string casePath = dir_.file("tampered-twice.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(tampered);
    const ReplaySummary first = runReplay(store, randomRequest("random:6", 1));
    QVERIFY(first.diverged >= 1);
    // A later run over one honest transaction passes on its own...
    const std::uint64_t honest = victim == 0 ? 1 : 0;
    const ReplaySummary second = runReplay(store, randomRequest(("ids:" + std::to_string(honest)).c_str(), 0));
    QVERIFY(second.passed());
    // ...but its report says what the earlier run found.
    const ReportData report = buildAuditReport(store);
    QCOMPARE(report.runId, second.runId);
    QVERIFY(!report.passed());
    QCOMPARE(report.outcome, AuditOutcome::Failed);
    QVERIFY2(report.headline.rfind("FAILED: replay run " + std::to_string(first.runId), 0) == 0, report.headline.c_str());
    bool warned = false;
    for (const std::string& warning : report.warnings)
        warned = warned || (warning.find("Replay run " + std::to_string(first.runId)) != std::string::npos &&
                            warning.find(std::to_string(victim)) != std::string::npos);
    QVERIFY(warned);
    QCOMPARE(report.otherRuns.size(), std::size_t(1));
    QCOMPARE(report.otherRuns.front().id, first.runId);
    QVERIFY(report.otherRuns.front().vouched);
    const json document = json::parse(renderReportJson(report));
    QCOMPARE(document["other_runs"][0]["id"].get<std::int64_t>(), first.runId);
    QCOMPARE(document["conclusion"]["outcome"].get<std::string>(), std::string("FAILED"));
    std::vector<std::string> errors;
    validate(document, json::parse(readText(std::string(ZKDV_TEST_SOURCE_DIR) + "/../docs/report.schema.json")), "$", errors);
    QVERIFY2(errors.empty(), errors.empty() ? "" : errors.front().c_str());
}

// Two runs that found the same divergences are one warning naming both, not two alike; and a
// run that found what the report's own run found is named in that run's warning.
void TestReport::runsThatFoundTheSameAreNamedOnce()
{
    const std::uint64_t victim = selected_.front();
    const std::string tampered = dir_.file("tampered-thrice.zkdv");
    rewriteTape(tape_, tampered, [&](RawRecord& record) {
        if (isTransaction(record, victim))
            scaleElement(record, "delta/fc.weight", 3, 1.5f);
    });
    CaseStore store(dir_.file("tampered-thrice.zkaudit"), CaseStore::Access::ReadWrite);
    store.ingestTape(tampered);
    const ReplaySummary first = runReplay(store, randomRequest("random:6", 1));
    const ReplaySummary second = runReplay(store, randomRequest("random:6", 1));
    QVERIFY(first.diverged >= 1);
    QCOMPARE(second.diverged, first.diverged);
    auto naming = [](const ReportData& report, std::int64_t runId) {
        std::vector<std::string> found;
        for (const std::string& warning : report.warnings)
            if (warning.find(" " + std::to_string(runId) + " (") != std::string::npos)
                found.push_back(warning);
        return found;
    };
    // The report of the second run: its own finding once, naming the first run too.
    {
        const ReportData report = buildAuditReport(store);
        QCOMPARE(report.runId, second.runId);
        const std::vector<std::string> aboutFirst = naming(report, first.runId);
        QCOMPARE(aboutFirst.size(), std::size_t(1));
        QVERIFY2(aboutFirst.front().rfind("Tampering or a faulty training run was found", 0) == 0, aboutFirst.front().c_str());
        QVERIFY2(aboutFirst.front().find("Replay run " + std::to_string(second.runId) + " (this report's)") != std::string::npos,
                 aboutFirst.front().c_str());
    }
    // A later honest run's report: one warning naming both earlier runs.
    const std::uint64_t honest = victim == 0 ? 1 : 0;
    const ReplaySummary third = runReplay(store, randomRequest(("ids:" + std::to_string(honest)).c_str(), 0));
    QVERIFY(third.passed());
    const ReportData report = buildAuditReport(store);
    QCOMPARE(report.runId, third.runId);
    QVERIFY(!report.passed());
    const std::vector<std::string> aboutFirst = naming(report, first.runId), aboutSecond = naming(report, second.runId);
    QCOMPARE(aboutFirst.size(), std::size_t(1));
    QCOMPARE(aboutSecond, aboutFirst);
    QVERIFY2(aboutFirst.front().find(std::to_string(victim)) != std::string::npos, aboutFirst.front().c_str());
    std::size_t otherRunWarnings = 0;
    for (const std::string& warning : report.warnings)
        otherRunWarnings += warning.rfind("Replay run", 0) == 0 ? 1 : 0;
    QCOMPARE(otherRunWarnings, std::size_t(1));
}

// The finding report of a tape that could not be ingested: no run, no case id, no program
// check and no loss series (the scan keeps none), but the model the root declares.
void TestReport::findingReportStatesOnlyWhatIsKnown()
{
    const std::string bytes = readText(tape_);
    const std::string truncated = dir_.file("finding-truncated.zkdv");
    std::ofstream(truncated, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
    const TapeSummary summary = scanTape(truncated);
    QCOMPARE(summary.status, TapeStatus::Truncated);
    const ReportData report = buildTapeFindingReport(summary);
    QVERIFY(!report.runStatus);
    QVERIFY(!report.programCheck);
    QVERIFY(!report.programCheckDetail.empty());
    QCOMPARE(report.tapeId, std::int64_t(0));
    QVERIFY(report.loss.empty() && report.lossIndex.empty() && report.transactions.empty());
    QVERIFY(report.parameterCount > 0);
    std::uint64_t elements = 0;
    for (const TensorSpec& parameter : summary.root->parameters)
        elements += static_cast<std::uint64_t>(parameter.elementCount());
    QCOMPARE(report.parameterElements, elements);
    QVERIFY(elements > 0);
    QCOMPARE(report.outcome, AuditOutcome::IncompleteTape);
}

void TestReport::stoppedRunIsIncompleteNotFailed()
{
    // Stops the replay once the first transaction is in.
    class StopAfterFirst : public ProgressSink {
    public:
        void report(std::uint64_t done, std::uint64_t, std::string_view) override { stop = stop || done >= 1; }
        bool cancelRequested() const override { return stop; }
        bool stop = false;
    } stopper;
    const std::string casePath = dir_.file("stopped.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(tape_);
    ReplayRequest request = randomRequest("all", 0);
    request.threads = 1;
    request.progress = &stopper;
    const ReplaySummary summary = runReplay(store, request);
    QCOMPARE(summary.status, RunStatus::Stopped);
    const ReportData report = buildAuditReport(store);
    QVERIFY(!report.passed());
    QCOMPARE(report.outcome, AuditOutcome::Incomplete);
    QVERIFY2(report.headline.rfind("INCOMPLETE: the replay was stopped", 0) == 0, report.headline.c_str());
    QVERIFY2(report.headline.find("FAILED") == std::string::npos, report.headline.c_str());
}

void TestReport::nothingComparedSaysNothingVerified()
{
    // A synthetic tape's program cannot be re-executed: its transactions replay to nothing.
    const std::string tape = dir_.file("synthetic.zkdv");
    SyntheticDemoOptions options;
    options.steps = 30;
    writeSyntheticDemoTape(tape, options);
    const std::string casePath = dir_.file("synthetic.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(tape);
    runReplay(store, randomRequest("random:5", 4));
    const ReportData report = buildAuditReport(store);
    QCOMPARE(report.comparisonCount, std::uint64_t(0));
    QVERIFY(!report.passed());
    QCOMPARE(report.outcome, AuditOutcome::NotVerified);
    QVERIFY2(report.headline.find("bit for bit") == std::string::npos, report.headline.c_str());
    QVERIFY2(report.headline.find("nothing") != std::string::npos, report.headline.c_str());
    // No bound that counts everything as bad ("at most 100 %"): it says nothing was verified.
    QVERIFY(!report.sampling);
    QVERIFY2(report.samplingNote.find("nothing was verified") != std::string::npos, report.samplingNote.c_str());
}

void TestReport::cliWritesReports()
{
    const QString casePath = QString::fromStdString(case_);
    Result help = runAudit({QStringLiteral("report"), QStringLiteral("--help")});
    QCOMPARE(help.exitCode, 0);
    QVERIFY(help.out.contains(QStringLiteral("zkdv-audit report CASE")));
    Result overview = runAudit({QStringLiteral("--help")});
    QVERIFY(overview.out.contains(QStringLiteral("report CASE -o FILE")));

    Result noOut = runAudit({QStringLiteral("report"), casePath});
    QCOMPARE(noOut.exitCode, 2);
    QVERIFY2(noOut.err.contains(QStringLiteral("-o FILE is required")), qPrintable(noOut.err));
    Result badFormat = runAudit({QStringLiteral("report"), casePath, QStringLiteral("-o"), QString::fromStdString(dir_.file("r.txt"))});
    QCOMPARE(badFormat.exitCode, 2);
    Result missingCase = runAudit({QStringLiteral("report"), QString::fromStdString(dir_.file("nope.zkaudit")), QStringLiteral("-o"),
                                   QString::fromStdString(dir_.file("nope.json"))});
    QCOMPARE(missingCase.exitCode, 2);
    // PDF: written by a workstation build (the Qt report library), refused with 2 without it.
    Result pdf = runAudit({QStringLiteral("report"), casePath, QStringLiteral("-o"), QString::fromStdString(dir_.file("r.pdf"))});
    if (pdf.exitCode == 0)
        QVERIFY(readText(dir_.file("r.pdf")).rfind("%PDF", 0) == 0);
    else {
        QCOMPARE(pdf.exitCode, 2);
        QVERIFY2(pdf.err.contains(QStringLiteral("PDF and HTML reports need the workstation build")), qPrintable(pdf.err));
    }

    const std::string jsonPath = dir_.file("report.json");
    Result json1 = runAudit({QStringLiteral("report"), casePath, QStringLiteral("-o"), QString::fromStdString(jsonPath)});
    QVERIFY2(json1.exitCode == 0, qPrintable(json1.err));
    const json document = json::parse(readText(jsonPath));
    QCOMPARE(document["schema"].get<std::string>(), std::string("zkdv-audit-report/1"));
    QCOMPARE(document["sampling"]["sampled"].get<int>(), 6);

    const std::string csvPath = dir_.file("report.data");
    Result csv = runAudit({QStringLiteral("report"), casePath, QStringLiteral("--format"), QStringLiteral("csv"), QStringLiteral("--run"),
                           QString::number(document["replay"]["run_id"].get<int>()), QStringLiteral("-o"), QString::fromStdString(csvPath)});
    QVERIFY2(csv.exitCode == 0, qPrintable(csv.err));
    QVERIFY(readText(csvPath).rfind("index,segment,selected,", 0) == 0);

    // A failing audit still writes its report: exit 0.
    Result tampered = runAudit({QStringLiteral("report"), QString::fromStdString(dir_.file("tampered.zkaudit")), QStringLiteral("-o"),
                                QString::fromStdString(dir_.file("tampered.json"))});
    QCOMPARE(tampered.exitCode, 0);
    QVERIFY(tampered.out.contains(QStringLiteral("FAILED")));
}

void TestReport::auditorNotesAreReported()
{
    // On a copy: the other functions read the case without notes.
    const std::string copy = dir_.file("notes.zkaudit");
    std::filesystem::copy_file(case_, copy, std::filesystem::copy_options::overwrite_existing);
    const std::uint64_t replayed = selected_.front();
    std::uint64_t notReplayed = 0;
    while (std::find(selected_.begin(), selected_.end(), notReplayed) != selected_.end())
        ++notReplayed;
    {
        CaseStore store(copy, CaseStore::Access::ReadWrite);
        TransactionNotes notes(store.database(), store.tapes().front().id);
        notes.set(replayed, TransactionFlag::Suspicious, "lr jumps, \"see\" step 2", "alice");
        notes.set(notReplayed, TransactionFlag::Question, "", "bob");
    }
    CaseStore store(copy, CaseStore::Access::ReadOnly);
    const ReportData report = buildAuditReport(store);
    QCOMPARE(report.auditorNotes.size(), std::size_t(2));
    const json document = json::parse(renderReportJson(report));
    const json schema = json::parse(readText(std::string(ZKDV_TEST_SOURCE_DIR) + "/../docs/report.schema.json"));
    std::vector<std::string> errors;
    validate(document, schema, "$", errors);
    QVERIFY2(errors.empty(), errors.empty() ? "" : errors.front().c_str());
    const json& notes = document["auditor_notes"];
    QCOMPARE(notes.size(), std::size_t(2));
    const json& first = notes[replayed < notReplayed ? 0 : 1];
    QCOMPARE(first["index"].get<std::uint64_t>(), replayed);
    QCOMPARE(first["flag"].get<std::string>(), std::string("suspicious"));
    QCOMPARE(first["note"].get<std::string>(), std::string("lr jumps, \"see\" step 2"));
    QCOMPARE(first["author"].get<std::string>(), std::string("alice"));
    QVERIFY(!first["updated_at"].get<std::string>().empty());
    const json& second = notes[replayed < notReplayed ? 1 : 0];
    QCOMPARE(second["index"].get<std::uint64_t>(), notReplayed);  // not replayed, listed all the same
    QCOMPARE(second["flag"].get<std::string>(), std::string("question"));
    // A flag the schema does not know fails validation.
    json broken = document;
    broken["auditor_notes"][0]["flag"] = "maybe";
    std::vector<std::string> brokenErrors;
    validate(broken, schema, "$", brokenErrors);
    QCOMPARE(brokenErrors.size(), std::size_t(1));

    // CSV: the last two columns of the replayed transaction's rows, quoted as RFC 4180 says.
    const std::vector<std::string> lines = csvLines(renderReportCsv(report));
    std::size_t noted = 0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
        const bool mine = lines[i].rfind(std::to_string(replayed) + ",", 0) == 0;
        const std::string tail = mine ? ",suspicious,\"lr jumps, \"\"see\"\" step 2\"" : ",none,";
        QVERIFY2(lines[i].size() >= tail.size() && lines[i].compare(lines[i].size() - tail.size(), tail.size(), tail) == 0, lines[i].c_str());
        noted += mine ? 1 : 0;
    }
    QVERIFY(noted > 0);
}

QTEST_GUILESS_MAIN(TestReport)

#include "test_report.moc"
