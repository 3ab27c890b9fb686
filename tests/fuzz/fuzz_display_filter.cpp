// Fuzz target for the display-filter compiler (zkdv/store/display_filter.h): text typed into
// the workstation's filter box becomes an SQL condition. Any text may be refused, but only
// with a DisplayFilterError whose position lies inside the text (or just past its end). A
// filter that compiles is run the way the workstation's table runs it, on a real case made
// once per process (a synthetic tape, two replay runs that disagree, the auditor's notes):
// SQLite must accept it (a rejection is a compiler bug), the statement must be read-only and
// use exactly the parameters the compiler bound, the SQL text must carry no value the user
// typed (only the compiler's own literals), and the case must not change. See
// docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include <sqlite3.h>
#include <unistd.h>

#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/display_filter.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/store/transaction_table.h"

using namespace zkdv;

namespace {

void require(bool condition)
{
    if (!condition)
        std::abort();
}

TransactionOutcome outcome(std::uint64_t index, Verdict verdict, const std::string& tensor)
{
    TransactionOutcome o;
    o.index = index;
    o.verdict = verdict;
    o.detail = "fuzz";
    TensorComparison c;
    c.tensor = tensor;
    c.slot = "delta";
    c.verdict = verdict;
    c.metrics.elements = 4;
    c.metrics.maxUlp = verdict == Verdict::Exact ? 0 : 1000.0 + static_cast<double>(index);
    c.metrics.bitwiseEqual = verdict == Verdict::Exact;
    o.comparisons.push_back(c);
    return o;
}

// The case every input runs against, made once per process in a scratch folder.
struct FuzzCase {
    std::filesystem::path dir;
    std::unique_ptr<CaseStore> store;
    std::int64_t tape = 0;
    std::int64_t run = 0;

    FuzzCase()
    {
        const char* base = ::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp");
        dir = std::filesystem::path(base) / ("zkdv-fuzz-filter-" + std::to_string(::getpid()));
        std::filesystem::remove_all(dir);
        std::filesystem::create_directories(dir);
        SyntheticDemoOptions options;
        options.steps = 24;
        options.snapshotInterval = 8;
        options.updateCheckProbability = 0.3;
        options.stateCheckProbability = 0.3;
        writeSyntheticDemoTape((dir / "seed.zkdv").string(), options);
        store = std::make_unique<CaseStore>((dir / "seed.zkaudit").string(), CaseStore::Access::ReadWrite);
        tape = store->ingestTape((dir / "seed.zkdv").string()).tapeId;
        ReplayStore replays(store->database());
        for (int r = 0; r < 2; ++r) {
            ReplayRunInfo info;
            info.tapeId = tape;
            info.device = "cpu";
            info.selection = "ids:fuzz";
            run = replays.beginRun(info);
            std::vector<TransactionOutcome> outcomes;
            for (std::uint64_t i = 0; i < 24; i += 2)
                outcomes.push_back(outcome(i, i % 6 == 0 && (r == 0 || i != 12) ? Verdict::Diverged : Verdict::Exact,
                                           i % 4 == 0 ? "fc.weight" : "conv.bias"));
            // Left running (the table shows a running run's verdicts too): finishRun's
            // signature is not what this target checks.
            replays.storeOutcomes(run, outcomes);
        }
        TransactionNotes notes(store->database(), tape);
        notes.set(3, TransactionFlag::Suspicious, "it's \"odd\"; DROP TABLE transactions --");
        notes.set(6, TransactionFlag::Question, "ask");
        notes.set(7, TransactionFlag::None, "fine");
    }
    ~FuzzCase()
    {
        store.reset();
        std::error_code ignored;
        std::filesystem::remove_all(dir, ignored);
    }
};

// ZKDV_FUZZ_VERBOSE=1: say what became of each input (to check what a seed exercises).
bool verbose()
{
    static const bool on = std::getenv("ZKDV_FUZZ_VERBOSE") != nullptr;
    return on;
}

FuzzCase& fuzzCase()
{
    static FuzzCase instance;
    return instance;
}

// Outside the compiler's own string literals ('none' and ''), no quote, no statement
// separator and no comment: everything the user typed must have become a parameter.
void requireNoUserText(const std::string& sql)
{
    for (std::size_t i = 0; i < sql.size(); ++i) {
        const char c = sql[i];
        if (c == '\'') {
            const bool none = sql.compare(i, 6, "'none'") == 0, empty = sql.compare(i, 2, "''") == 0;
            require(none || empty);
            i += none ? 5 : 1;
            continue;
        }
        require(c != '"' && c != ';' && c != '`' && c != '[');
        require(sql.compare(i, 2, "--") != 0 && sql.compare(i, 2, "/*") != 0);
    }
}

// The filter's condition as the table's text filter runs it, for one run.
void runDirectly(FuzzCase& fc, const CompiledDisplayFilter& filter)
{
    Database& db = fc.store->database();
    Statement rows = db.prepare("SELECT t.idx FROM transactions t LEFT JOIN verdicts v ON v.run_id = ?2 AND v.idx = t.idx"
                                " WHERE t.tape_id = ?1 AND (" + filter.sql + ") ORDER BY t.idx");
    require(sqlite3_stmt_readonly(rows.handle()) != 0);
    // Every value the compiler kept is bound, and nothing else is read.
    require(sqlite3_bind_parameter_count(rows.handle()) == 2 + static_cast<int>(filter.values.size()));
    rows.bind(1, fc.tape).bind(2, fc.run);
    for (std::size_t i = 0; i < filter.values.size(); ++i) {
        const int parameter = 3 + static_cast<int>(i);
        if (const double* number = std::get_if<double>(&filter.values[i]))
            rows.bind(parameter, *number);
        else
            rows.bind(parameter, std::get<std::string>(filter.values[i]));
    }
    std::int64_t previous = -1;
    while (rows.step()) {
        require(rows.int64(0) > previous && rows.int64(0) < 24);
        previous = rows.int64(0);
    }
}

// The same through the workstation's table, for every run and for the newest one.
void runThroughTable(FuzzCase& fc, const std::string& text)
{
    for (std::int64_t run : {TransactionTable::kEveryRun, std::int64_t(0)}) {
        TransactionTable table(fc.store->database(), fc.tape);
        table.setRun(run);  // showing every run fills a temporary table: not the filter's doing
        sqlite3* handle = fc.store->database().handle();
        const int changesBefore = sqlite3_total_changes(handle);
        table.setFilter(TransactionTable::QuickFilter::All, text);
        const std::uint64_t count = table.rowCount();
        require(count <= 24);
        require(table.rows(0, 24).size() == count);
        if (verbose())
            std::fprintf(stderr, "table (%s): %llu rows\n", run == TransactionTable::kEveryRun ? "every run" : "newest run",
                         static_cast<unsigned long long>(count));
        require(sqlite3_total_changes(handle) == changesBefore);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    FuzzCase& fc = fuzzCase();
    const bool filterLike = looksLikeDisplayFilter(text);
    CompiledDisplayFilter filter;
    try {
        filter = compileDisplayFilter(text, 3);
    } catch (const DisplayFilterError& error) {
        require(error.position() >= 1 && error.position() <= text.size() + 1);
        if (verbose())
            std::fprintf(stderr, "refused: %.200s\n", error.what());
        return 0;
    }
    requireNoUserText(filter.sql);

    sqlite3* handle = fc.store->database().handle();
    const int changesBefore = sqlite3_total_changes(handle);
    try {
        runDirectly(fc, filter);
        require(sqlite3_total_changes(handle) == changesBefore);
        if (filterLike)
            runThroughTable(fc, text);
        if (verbose())
            std::fprintf(stderr, "ran: %zu characters of SQL, %zu parameters\n", filter.sql.size(), filter.values.size());
    } catch (const Error& error) {
        // SQLite refused what the compiler made: a compiler bug.
        std::fprintf(stderr, "the compiled filter failed: %s\nSQL (%zu characters): %.400s\n", error.what(), filter.sql.size(), filter.sql.c_str());
        std::abort();
    }
    return 0;
}
