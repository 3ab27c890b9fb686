#pragma once
// One tape's transactions as a sortable, filterable table joined with a replay run's
// verdicts, read in windows: the workstation's transaction table without Qt.

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/verdict.h"

namespace zkdv {

class Database;
class LatestVerdictTable;
class Statement;

// One row of the table. Doubles are NaN where the case holds NULL (or nothing).
struct TransactionRow {
    std::uint64_t index = 0;
    double loss = 0.0;
    double lr = 0.0;
    double updateNorm = 0.0;
    double maxUpdate = 0.0;
    bool hasDeltas = false;
    bool hasStateDigest = false;
    std::uint64_t segment = 0;
    std::optional<Verdict> verdict;  // nullopt: not replayed (by the run shown)
    std::int64_t verdictRun = 0;     // the run the verdict comes from
    // Showing every run (TransactionTable::kEveryRun): how many runs replayed the transaction
    // and whether their verdicts differ (the newest one is shown).
    std::uint32_t runCount = 0;
    bool runsDisagree = false;
    double worstMaxUlp = 0.0;
    double worstRelativeL2 = 0.0;
    std::string worstTensor;
    std::string worstSlot;
    // For a within-tolerance verdict: the bound of its run's tolerance the worst comparison
    // met (Tolerance::passedBy).
    std::string toleranceCriterion;
    std::string flag;  // the auditor's flag (transaction_notes.h); "" when the transaction has no note
    std::string note;
};

// The rows of one tape under a sort and a filter, for a view that shows a few dozen of a
// million at a time. The visible order is computed once per sort/filter as a vector of
// transaction indexes (the index order needs none); rows() then reads only the window
// asked for. Sorting by loss, lr or update norm reads the order ingest stored (schema
// version 4, transaction_order.h); descending is the ascending order reversed (ties by
// index, NULLs first ascending).
// Not thread-safe; the Database must outlive the table. Throws DatabaseError.
class TransactionTable {
public:
    enum class Column { Index, Loss, LearningRate, UpdateNorm, SampledChecks, Segment, Verdict, WorstDivergence, Note };
    enum class QuickFilter { All, Diverged, NotReplayed, SampledChecks, TopQ };

    TransactionTable(Database& db, std::int64_t tapeId);
    ~TransactionTable();
    TransactionTable(const TransactionTable&) = delete;
    TransactionTable& operator=(const TransactionTable&) = delete;

    std::int64_t tapeId() const { return tapeId_; }
    // False when the case holds no such tape (the table is then empty).
    bool tapeExists() const { return tapeExists_; }
    std::uint64_t transactionCount() const { return transactionCount_; }

    // Every run of the tape at once: per transaction, the newest run's verdict
    // (zkdv/store/latest_verdicts.h).
    static constexpr std::int64_t kEveryRun = -1;
    // kEveryRun; 0: the tape's newest run in replay_runs, looked up again by refresh(); or
    // one run's id.
    void setRun(std::int64_t runId);
    // The run whose verdicts the rows show: kEveryRun, a run id, or 0 when the tape has none.
    std::int64_t effectiveRunId() const { return runId_; }

    void setSort(Column column, bool ascending);
    Column sortColumn() const { return sortColumn_; }
    bool sortAscending() const { return ascending_; }

    // `text`: "" no text filter; a number: that transaction; "A-B": indexes A to B; anything
    // else: transactions whose verdict or worst tensor contains it (case-insensitive).
    // `topq` is q for QuickFilter::TopQ (the union over parameters of the q largest
    // recorded update L2 norms, the same choice as `--select topq:q`).
    void setFilter(QuickFilter filter, const std::string& text = {}, std::uint64_t topq = 10);

    // Re-reads the transaction count, the newest run (when following it) and the verdicts,
    // keeping sort and filter.
    void refresh();

    // What the table shows, to show the same on another connection (an export on its own
    // thread).
    struct View {
        std::int64_t run = 0;
        Column sort = Column::Index;
        bool ascending = true;
        QuickFilter filter = QuickFilter::All;
        std::string text;
        std::uint64_t topq = 10;
    };
    View view() const { return {requestedRun_, sortColumn_, ascending_, quickFilter_, text_, topq_}; }
    void setView(const View& view);

    std::uint64_t rowCount() const;
    // Rows [first, first + count) of the current order, clipped to rowCount().
    std::vector<TransactionRow> rows(std::uint64_t first, std::uint64_t count);
    std::uint64_t transactionAt(std::uint64_t row) const;
    // The row showing transaction `index`, or nullopt when it is filtered out (or absent).
    std::optional<std::uint64_t> rowOf(std::uint64_t index) const;
    // Rows of many transactions at once (one pass over the order): -1 where filtered out.
    std::vector<std::int64_t> rowsOf(const std::vector<std::uint64_t>& indexes) const;

private:
    using IndexList = std::vector<std::int64_t>;

    void loadTape();
    void resolveRun();
    void rebuild();
    std::shared_ptr<const IndexList> ascendingOrder(Column column);
    std::shared_ptr<const IndexList> columnOrder(const char* column) const;
    std::shared_ptr<const IndexList> verdictOrder(bool byWorstUlp);
    std::shared_ptr<const IndexList> sampledOrder();
    std::shared_ptr<const IndexList> noteOrder();
    std::optional<IndexList> quickFilterSet();
    std::optional<IndexList> textFilterSet();
    IndexList allIndexes();
    bool holds(std::int64_t index);  // the tape has transaction `index`
    IndexList ofThisTape(IndexList sorted);
    // Every index of the tape not in `sortedSubset`, with room for `extra` more.
    IndexList complement(const IndexList& sortedSubset, std::size_t extra = 0);
    // Binds ?1 = tape, or ?2 = run (and ?3 = text) when `bindRun`; returns column 0.
    IndexList query(const std::string& sql, bool bindRun, const std::string& text = {});
    std::int64_t viewAt(std::uint64_t position) const;
    bool showsEveryRun() const { return runId_ == kEveryRun; }
    // The shown verdicts as `v`, selected by ?2 the same way for one run and for every run.
    std::string verdictSource() const;
    std::string verdictKey() const;  // the column of `v` that ?2 selects
    std::string rowQuery() const;     // the rows with their verdicts, before the idx condition
    void explainTolerance(TransactionRow& row);

    Database& db_;
    std::int64_t tapeId_;
    bool tapeExists_ = false;
    bool contiguous_ = true;  // idx runs 0..count-1, so the index order needs no vector
    bool storedOrders_ = false;  // the case has table transaction_orders (schema version 4)
    std::uint64_t transactionCount_ = 0;
    std::string tapeSignature_;  // the tapes row the counts were taken from
    std::int64_t requestedRun_ = 0;
    std::int64_t runId_ = 0;
    std::unique_ptr<LatestVerdictTable> latest_;  // while showing every run
    std::map<std::int64_t, std::string> runTolerances_;  // by run: its tolerance as stored

    Column sortColumn_ = Column::Index;
    bool ascending_ = true;
    QuickFilter quickFilter_ = QuickFilter::All;
    std::string text_;
    std::uint64_t topq_ = 10;

    // Ascending orders of every transaction, by column (those that need no verdicts survive
    // refresh()), and the filter sets that depend only on the tape.
    std::map<Column, std::shared_ptr<const IndexList>> orders_;
    std::optional<IndexList> sampledSet_;
    std::optional<std::pair<std::uint64_t, IndexList>> topqSet_;

    // The view: when identity_, position p shows transaction p of the ascending index
    // order (before direction); otherwise view_ holds the indexes in ascending sort order.
    bool identity_ = true;
    std::shared_ptr<const IndexList> view_;

    std::unique_ptr<Statement> rangeQuery_;
    std::unique_ptr<Statement> pointQuery_;
};

}  // namespace zkdv
