#include "zkdv/store/transaction_table.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>
#include <utility>
#include <variant>

#include "zkdv/audit/selection.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/store/database.h"
#include "zkdv/store/display_filter.h"
#include "zkdv/store/latest_verdicts.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_order.h"

namespace zkdv {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();


double realOrNaN(const Statement& row, int column)
{
    return row.isNull(column) ? kNaN : row.real(column);
}

std::string textOrEmpty(const Statement& row, int column)
{
    return row.isNull(column) ? std::string() : row.text(column);
}

TransactionRow rowFrom(const Statement& s)
{
    TransactionRow row;
    row.index = static_cast<std::uint64_t>(s.int64(0));
    row.loss = realOrNaN(s, 1);
    row.lr = realOrNaN(s, 2);
    row.updateNorm = realOrNaN(s, 3);
    row.maxUpdate = realOrNaN(s, 4);
    row.hasDeltas = s.int64(5) != 0;
    row.hasStateDigest = s.int64(6) != 0;
    row.segment = static_cast<std::uint64_t>(s.int64(7));
    if (!s.isNull(8)) {
        row.verdict = verdictOrUnverifiable(s.text(8));
        row.verdictRun = s.int64(13);
        row.runCount = static_cast<std::uint32_t>(s.int64(14));
        row.runsDisagree = s.int64(15) != 0;
    }
    row.worstMaxUlp = realOrNaN(s, 9);
    row.worstRelativeL2 = realOrNaN(s, 10);
    row.worstTensor = textOrEmpty(s, 11);
    row.worstSlot = textOrEmpty(s, 12);
    row.flag = textOrEmpty(s, 16);
    row.note = textOrEmpty(s, 17);
    return row;
}

std::string trimmed(const std::string& text)
{
    std::size_t begin = 0, end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin])))
        ++begin;
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1])))
        --end;
    return text.substr(begin, end - begin);
}

std::string lowered(std::string text)
{
    for (char& c : text)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
}

// A decimal transaction index, or nullopt when `text` is not one (or does not fit).
std::optional<std::int64_t> parseIndex(const std::string& text)
{
    if (text.empty() || text.size() > 18)
        return std::nullopt;
    std::int64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9')
            return std::nullopt;
        value = value * 10 + (c - '0');
    }
    return value;
}

TransactionTable::Column orderColumnOf(TransactionTable::Column column)
{
    // segment = idx / snapshot_interval (docs/case-schema.md), so ordering by (segment, idx)
    // is the index order.
    return column == TransactionTable::Column::Segment ? TransactionTable::Column::Index : column;
}

}  // namespace

TransactionTable::TransactionTable(Database& db, std::int64_t tapeId) : db_(db), tapeId_(tapeId)
{
    storedOrders_ = db_.queryInt64("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'transaction_orders'")
                        .value_or(0) != 0;
    loadTape();
    resolveRun();
    rebuild();
}

TransactionTable::~TransactionTable() = default;

void TransactionTable::loadTape()
{
    // The tape row changes when a tape is ingested again (e.g. a truncated tape, completed):
    // only then are its transactions counted again, so refresh() stays cheap.
    Statement tape = db_.prepare("SELECT transaction_count, chain_head, ingested_at FROM tapes WHERE id = ?1");
    tape.bind(1, tapeId_);
    tapeExists_ = tape.step();
    std::string signature = tapeExists_ ? std::to_string(tape.int64(0)) + ' ' + tape.text(1) + ' ' + tape.text(2) : std::string();
    if (tapeExists_ && signature == tapeSignature_)
        return;
    tapeSignature_ = std::move(signature);
    // Three queries: min() and max() alone are index lookups, and count(*) alone scans the
    // narrowest index; together they would step through every row.
    const auto one = [&](const char* sql) {
        Statement row = db_.prepare(sql);
        row.bind(1, tapeId_);
        return row.step() && !row.isNull(0) ? row.int64(0) : std::int64_t(-1);
    };
    const std::uint64_t count = static_cast<std::uint64_t>(std::max<std::int64_t>(0, one("SELECT count(*) FROM transactions WHERE tape_id = ?1")));
    const bool contiguous = count == 0
        || (one("SELECT min(idx) FROM transactions WHERE tape_id = ?1") == 0
            && one("SELECT max(idx) FROM transactions WHERE tape_id = ?1") == static_cast<std::int64_t>(count) - 1);
    orders_.clear();
    sampledSet_.reset();
    topqSet_.reset();
    transactionCount_ = count;
    contiguous_ = contiguous;
}

std::string TransactionTable::verdictSource() const
{
    return showsEveryRun() ? latest_->name() + " v" : std::string("verdicts v");
}

std::string TransactionTable::rowQuery() const
{
    // Columns as rowFrom() reads them; one run's rows count one run and never disagree.
    return "SELECT t.idx, t.loss, t.lr, t.update_norm, t.max_update, t.has_deltas, t.has_state_digest, t.segment,"
           " v.verdict, v.worst_max_ulp, v.worst_rel_l2, v.worst_tensor, v.worst_slot, v.run_id, " +
           std::string(showsEveryRun() ? "v.run_count, v.disagree" : "1, 0") + ", n.flag, n.note FROM transactions t LEFT JOIN " +
           verdictSource() + " ON " + verdictKey() +
           " = ?2 AND v.idx = t.idx LEFT JOIN transaction_notes n ON n.tape_id = t.tape_id AND n.idx = t.idx WHERE t.tape_id = ?1 ";
}

std::string TransactionTable::verdictKey() const { return showsEveryRun() ? "v.view" : "v.run_id"; }

void TransactionTable::resolveRun()
{
    if (requestedRun_ == kEveryRun) {
        if (!latest_)
            latest_ = std::make_unique<LatestVerdictTable>(db_, tapeId_);
        latest_->refresh();
        runId_ = kEveryRun;
        return;
    }
    latest_.reset();
    if (requestedRun_ != 0) {
        runId_ = requestedRun_;
        return;
    }
    Statement newest = db_.prepare("SELECT max(id) FROM replay_runs WHERE tape_id = ?1");
    newest.bind(1, tapeId_);
    runId_ = newest.step() && !newest.isNull(0) ? newest.int64(0) : 0;
}

void TransactionTable::setRun(std::int64_t runId)
{
    // The row queries name the verdict source: prepared again for the new one.
    rangeQuery_.reset();
    pointQuery_.reset();
    requestedRun_ = runId;
    resolveRun();
    orders_.erase(Column::Verdict);
    orders_.erase(Column::WorstDivergence);
    rebuild();
}

void TransactionTable::setView(const View& view)
{
    rangeQuery_.reset();
    pointQuery_.reset();
    requestedRun_ = view.run;
    resolveRun();
    orders_.erase(Column::Verdict);
    orders_.erase(Column::WorstDivergence);
    sortColumn_ = view.sort;
    ascending_ = view.ascending;
    quickFilter_ = view.filter;
    text_ = trimmed(view.text);
    topq_ = std::max<std::uint64_t>(1, view.topq);
    rebuild();
}

void TransactionTable::setSort(Column column, bool ascending)
{
    sortColumn_ = column;
    ascending_ = ascending;
    rebuild();
}

void TransactionTable::setFilter(QuickFilter filter, const std::string& text, std::uint64_t topq)
{
    quickFilter_ = filter;
    text_ = trimmed(text);
    topq_ = std::max<std::uint64_t>(1, topq);
    rebuild();
}

void TransactionTable::refresh()
{
    loadTape();
    resolveRun();
    // Verdicts change while a replay runs, notes as the auditor writes them; the tape's own
    // columns never change after ingest.
    orders_.erase(Column::Verdict);
    orders_.erase(Column::WorstDivergence);
    orders_.erase(Column::Note);
    rebuild();
}

void TransactionTable::rebuild()
{
    std::optional<IndexList> filter = quickFilterSet();
    if (std::optional<IndexList> text = textFilterSet()) {
        if (filter) {
            IndexList both;
            std::set_intersection(filter->begin(), filter->end(), text->begin(), text->end(), std::back_inserter(both));
            filter = std::move(both);
        } else {
            filter = std::move(text);
        }
    }

    // The new view is built aside and swapped in at the end: a query that fails (the case
    // damaged while it is shown) leaves the view as it was, never half-reset.
    const Column order = orderColumnOf(sortColumn_);
    bool identity = false;
    std::shared_ptr<const IndexList> view;
    if (!filter) {
        if (order == Column::Index && contiguous_)
            identity = true;
        else
            view = ascendingOrder(order);
    } else if (order == Column::Index) {
        view = std::make_shared<const IndexList>(std::move(*filter));
    } else {
        // Keep the sorted order's sequence, restricted to the filter's members.
        const std::shared_ptr<const IndexList> sorted = ascendingOrder(order);
        IndexList visible;
        if (!filter->empty()) {
            std::vector<bool> member(static_cast<std::size_t>(filter->back()) + 1, false);
            for (std::int64_t index : *filter)
                member[static_cast<std::size_t>(index)] = true;
            visible.reserve(filter->size());
            for (std::int64_t index : *sorted) {
                if (index >= 0 && static_cast<std::size_t>(index) < member.size() && member[static_cast<std::size_t>(index)])
                    visible.push_back(index);
            }
        }
        view = std::make_shared<const IndexList>(std::move(visible));
    }
    view_ = std::move(view);
    identity_ = identity;
}

std::shared_ptr<const TransactionTable::IndexList> TransactionTable::ascendingOrder(Column column)
{
    auto cached = orders_.find(column);
    if (cached != orders_.end())
        return cached->second;
    std::shared_ptr<const IndexList> order;
    switch (column) {
    case Column::Index:
    case Column::Segment:
        order = std::make_shared<const IndexList>(allIndexes());
        break;
    case Column::Loss:
        order = columnOrder("loss");
        break;
    case Column::LearningRate:
        order = columnOrder("lr");
        break;
    case Column::UpdateNorm:
        order = columnOrder("update_norm");
        break;
    case Column::SampledChecks:
        order = sampledOrder();
        break;
    case Column::Note:
        order = noteOrder();
        break;
    case Column::Verdict:
        order = verdictOrder(false);
        break;
    case Column::WorstDivergence:
        order = verdictOrder(true);
        break;
    }
    orders_[column] = order;
    return order;
}

std::shared_ptr<const TransactionTable::IndexList> TransactionTable::columnOrder(const char* column) const
{
    if (storedOrders_) {
        Statement stored = db_.prepare("SELECT ascending FROM transaction_orders WHERE tape_id = ?1 AND column_name = ?2");
        stored.bind(1, tapeId_).bind(2, column);
        // A stored order that does not cover the rows now present is not used.
        if (stored.step()) {
            if (std::optional<IndexList> order = decodeTransactionOrder(stored.blob(0), transactionCount_))
                return std::make_shared<const IndexList>(std::move(*order));
        }
    }
    // Tapes ingested before schema version 4, or too long for a stored order: sorted here,
    // the same way ingest sorts (SQLite's own sort of a million rows spills to disk).
    TransactionOrder order;
    order.reserve(transactionCount_);
    Statement rows = db_.prepare(std::string("SELECT idx, ") + column + " FROM transactions WHERE tape_id = ?1");
    rows.bind(1, tapeId_);
    while (rows.step())
        order.add(static_cast<std::uint64_t>(rows.int64(0)), rows.isNull(1) ? std::numeric_limits<double>::quiet_NaN() : rows.real(1));
    order.sort();
    return std::make_shared<const IndexList>(order.ascending());
}

std::shared_ptr<const TransactionTable::IndexList> TransactionTable::sampledOrder()
{
    // Ascending: none, digest only, deltas only, deltas and digest; ties by index.
    std::vector<std::pair<int, std::int64_t>> sampled;
    Statement rows = db_.prepare(
        "SELECT idx, has_deltas, has_state_digest FROM transactions WHERE tape_id = ?1 AND (has_deltas OR has_state_digest)");
    rows.bind(1, tapeId_);
    while (rows.step())
        sampled.emplace_back((rows.int64(1) != 0 ? 2 : 0) + (rows.int64(2) != 0 ? 1 : 0), rows.int64(0));
    std::sort(sampled.begin(), sampled.end());
    IndexList members;
    members.reserve(sampled.size());
    for (const auto& entry : sampled)
        members.push_back(entry.second);
    std::sort(members.begin(), members.end());
    auto order = std::make_shared<IndexList>(complement(members, sampled.size()));
    for (const auto& entry : sampled)
        order->push_back(entry.second);
    return order;
}

std::shared_ptr<const TransactionTable::IndexList> TransactionTable::noteOrder()
{
    // Ascending: no note, then by flag (none, question, suspicious, confirmed), ties by index.
    std::vector<std::pair<int, std::int64_t>> noted;
    Statement rows = db_.prepare("SELECT idx, CASE flag WHEN 'question' THEN 1 WHEN 'suspicious' THEN 2 WHEN 'confirmed' THEN 3 ELSE 0 END"
                                 " FROM transaction_notes WHERE tape_id = ?1");
    rows.bind(1, tapeId_);
    while (rows.step())
        if (holds(rows.int64(0)))
            noted.emplace_back(static_cast<int>(rows.int64(1)), rows.int64(0));
    std::sort(noted.begin(), noted.end());
    IndexList members;
    members.reserve(noted.size());
    for (const auto& entry : noted)
        members.push_back(entry.second);
    std::sort(members.begin(), members.end());
    auto order = std::make_shared<IndexList>(complement(members, noted.size()));
    for (const auto& entry : noted)
        order->push_back(entry.second);
    return order;
}

std::shared_ptr<const TransactionTable::IndexList> TransactionTable::verdictOrder(bool byWorstUlp)
{
    // Not replayed first (in index order), then the run's verdicts by severity or by worst
    // ULP distance (replayed without a comparison before any distance).
    struct Entry {
        double key;
        std::int64_t index;
    };
    std::vector<Entry> replayed;
    IndexList members;
    if (runId_ != 0) {
        Statement rows = db_.prepare("SELECT v.idx, v.verdict, v.worst_max_ulp FROM " + verdictSource() + " WHERE " + verdictKey() +
                                     " = ?1 ORDER BY v.idx");
        rows.bind(1, runId_);
        while (rows.step()) {
            if (!holds(rows.int64(0)))
                continue;
            double key;
            if (byWorstUlp)
                key = rows.isNull(2) ? -std::numeric_limits<double>::infinity() : rows.real(2);
            else
                key = static_cast<double>(verdictOrUnverifiable(rows.text(1)));  // best to worst
            replayed.push_back({key, rows.int64(0)});
            members.push_back(rows.int64(0));
        }
    }
    std::stable_sort(replayed.begin(), replayed.end(), [](const Entry& a, const Entry& b) { return a.key < b.key; });
    auto order = std::make_shared<IndexList>(complement(members, replayed.size()));
    for (const Entry& entry : replayed)
        order->push_back(entry.index);
    return order;
}

std::optional<TransactionTable::IndexList> TransactionTable::quickFilterSet()
{
    switch (quickFilter_) {
    case QuickFilter::All:
        return std::nullopt;
    case QuickFilter::Diverged:
        if (runId_ == 0)
            return IndexList{};
        return ofThisTape(query("SELECT v.idx FROM " + verdictSource() + " WHERE " + verdictKey() + " = ?2 AND v.verdict = 'diverged' ORDER BY v.idx", true));
    case QuickFilter::NotReplayed:
        if (runId_ == 0)
            return allIndexes();
        return complement(ofThisTape(query("SELECT v.idx FROM " + verdictSource() + " WHERE " + verdictKey() + " = ?2 ORDER BY v.idx", true)));
    case QuickFilter::SampledChecks:
        if (!sampledSet_) {
            // Without ORDER BY, SQLite reads the small partial index transactions_sampled.
            sampledSet_ = query("SELECT idx FROM transactions WHERE tape_id = ?1 AND (has_deltas OR has_state_digest)", false);
            std::sort(sampledSet_->begin(), sampledSet_->end());
        }
        return sampledSet_;
    case QuickFilter::TopQ:
        if (!topqSet_ || topqSet_->first != topq_) {
            ReplayStore store(db_);
            SelectionSpec spec;
            spec.kind = SelectionSpec::Kind::TopQ;
            spec.count = topq_;
            IndexList chosen;
            for (std::uint64_t index : selectTransactions(spec, 0, store.selectionInput(tapeId_, true)))
                chosen.push_back(static_cast<std::int64_t>(index));
            topqSet_ = std::make_pair(topq_, std::move(chosen));
        }
        return topqSet_->second;
    }
    return std::nullopt;
}

std::optional<TransactionTable::IndexList> TransactionTable::textFilterSet()
{
    if (text_.empty())
        return std::nullopt;
    if (looksLikeDisplayFilter(text_)) {
        const CompiledDisplayFilter filter = compileDisplayFilter(text_, 3);
        Statement rows = db_.prepare("SELECT t.idx FROM transactions t LEFT JOIN " + verdictSource() + " ON " + verdictKey() +
                                     " = ?2 AND v.idx = t.idx WHERE t.tape_id = ?1 AND (" + filter.sql + ") ORDER BY t.idx");
        rows.bind(1, tapeId_).bind(2, runId_);
        for (std::size_t i = 0; i < filter.values.size(); ++i) {
            const int parameter = 3 + static_cast<int>(i);
            if (const double* number = std::get_if<double>(&filter.values[i]))
                rows.bind(parameter, *number);
            else
                rows.bind(parameter, std::get<std::string>(filter.values[i]));
        }
        IndexList matched;
        while (rows.step())
            matched.push_back(rows.int64(0));
        return matched;
    }
    std::int64_t first = 0, last = -1;
    if (std::optional<std::int64_t> index = parseIndex(text_)) {
        first = last = *index;
    } else if (std::size_t dash = text_.find('-'); dash != std::string::npos && parseIndex(trimmed(text_.substr(0, dash)))
               && parseIndex(trimmed(text_.substr(dash + 1)))) {
        first = *parseIndex(trimmed(text_.substr(0, dash)));
        last = *parseIndex(trimmed(text_.substr(dash + 1)));
        if (first > last)
            std::swap(first, last);
    } else {
        if (runId_ == 0)
            return IndexList{};
        // A verdict, or the name of any tensor the run compared for the transaction.
        return ofThisTape(query("SELECT v.idx FROM " + verdictSource() + " WHERE " + verdictKey() + " = ?2"
                                " AND (instr(lower(v.verdict), ?3) > 0 OR instr(lower(coalesce(v.worst_tensor, '')), ?3) > 0"
                                " OR EXISTS (SELECT 1 FROM metrics m WHERE m.run_id = v.run_id AND m.idx = v.idx AND instr(lower(m.tensor), ?3) > 0))"
                                " ORDER BY v.idx",
                                true, lowered(text_)));
    }
    IndexList range;
    if (contiguous_) {
        const std::int64_t end = std::min<std::int64_t>(last, static_cast<std::int64_t>(transactionCount_) - 1);
        for (std::int64_t index = first; index <= end; ++index)
            range.push_back(index);
        return range;
    }
    Statement rows = db_.prepare("SELECT idx FROM transactions WHERE tape_id = ?1 AND idx BETWEEN ?2 AND ?3 ORDER BY idx");
    rows.bind(1, tapeId_).bind(2, first).bind(3, last);
    while (rows.step())
        range.push_back(rows.int64(0));
    return range;
}

bool TransactionTable::holds(std::int64_t index)
{
    if (contiguous_)
        return index >= 0 && static_cast<std::uint64_t>(index) < transactionCount_;
    const std::shared_ptr<const IndexList> all = ascendingOrder(Column::Index);
    return std::binary_search(all->begin(), all->end(), index);
}

TransactionTable::IndexList TransactionTable::ofThisTape(IndexList sorted)
{
    sorted.erase(std::remove_if(sorted.begin(), sorted.end(), [this](std::int64_t index) { return !holds(index); }), sorted.end());
    return sorted;
}

TransactionTable::IndexList TransactionTable::allIndexes()
{
    if (contiguous_) {
        IndexList all(transactionCount_);
        for (std::size_t i = 0; i < all.size(); ++i)
            all[i] = static_cast<std::int64_t>(i);
        return all;
    }
    return query("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY idx", false);
}

TransactionTable::IndexList TransactionTable::complement(const IndexList& sortedSubset, std::size_t extra)
{
    IndexList rest;
    if (contiguous_) {
        // 0..count-1 without the subset, with no list of every index to subtract from.
        rest.reserve((transactionCount_ >= sortedSubset.size() ? transactionCount_ - sortedSubset.size() : 0) + extra);
        auto skip = sortedSubset.begin();
        for (std::int64_t index = 0; index < static_cast<std::int64_t>(transactionCount_); ++index) {
            while (skip != sortedSubset.end() && *skip < index)
                ++skip;
            if (skip == sortedSubset.end() || *skip != index)
                rest.push_back(index);
        }
        return rest;
    }
    const std::shared_ptr<const IndexList> all = ascendingOrder(Column::Index);
    rest.reserve((all->size() >= sortedSubset.size() ? all->size() - sortedSubset.size() : 0) + extra);
    std::set_difference(all->begin(), all->end(), sortedSubset.begin(), sortedSubset.end(), std::back_inserter(rest));
    return rest;
}

TransactionTable::IndexList TransactionTable::query(const std::string& sql, bool bindRun, const std::string& text)
{
    Statement rows = db_.prepare(sql);
    if (bindRun)
        rows.bind(2, runId_);
    else
        rows.bind(1, tapeId_);
    if (!text.empty())
        rows.bind(3, text);
    IndexList result;
    while (rows.step())
        result.push_back(rows.int64(0));
    return result;
}

std::uint64_t TransactionTable::rowCount() const
{
    return identity_ ? transactionCount_ : view_->size();
}

std::int64_t TransactionTable::viewAt(std::uint64_t position) const
{
    const std::uint64_t count = rowCount();
    const std::uint64_t at = ascending_ ? position : count - 1 - position;
    if (identity_)
        return static_cast<std::int64_t>(at);
    return (*view_)[at];
}

std::uint64_t TransactionTable::transactionAt(std::uint64_t row) const
{
    return row < rowCount() ? static_cast<std::uint64_t>(viewAt(row)) : 0;
}

std::optional<std::uint64_t> TransactionTable::rowOf(std::uint64_t index) const
{
    const std::uint64_t count = rowCount();
    std::optional<std::uint64_t> at;
    if (identity_) {
        if (index < count)
            at = index;
    } else if (orderColumnOf(sortColumn_) == Column::Index) {
        auto found = std::lower_bound(view_->begin(), view_->end(), static_cast<std::int64_t>(index));
        if (found != view_->end() && *found == static_cast<std::int64_t>(index))
            at = static_cast<std::uint64_t>(found - view_->begin());
    } else {
        auto found = std::find(view_->begin(), view_->end(), static_cast<std::int64_t>(index));
        if (found != view_->end())
            at = static_cast<std::uint64_t>(found - view_->begin());
    }
    if (!at)
        return std::nullopt;
    return ascending_ ? *at : count - 1 - *at;
}

std::vector<std::int64_t> TransactionTable::rowsOf(const std::vector<std::uint64_t>& indexes) const
{
    std::vector<std::int64_t> result(indexes.size(), -1);
    if (indexes.empty())
        return result;
    if (indexes.size() < 8 || identity_ || orderColumnOf(sortColumn_) == Column::Index) {
        for (std::size_t i = 0; i < indexes.size(); ++i) {
            if (std::optional<std::uint64_t> row = rowOf(indexes[i]))
                result[i] = static_cast<std::int64_t>(*row);
        }
        return result;
    }
    // One pass over the order instead of one search per index.
    std::vector<std::pair<std::int64_t, std::size_t>> wanted;
    for (std::size_t i = 0; i < indexes.size(); ++i)
        wanted.emplace_back(static_cast<std::int64_t>(indexes[i]), i);
    std::sort(wanted.begin(), wanted.end());
    const std::uint64_t count = rowCount();
    for (std::size_t position = 0; position < view_->size(); ++position) {
        const std::int64_t index = (*view_)[position];
        auto found = std::lower_bound(wanted.begin(), wanted.end(), std::make_pair(index, std::size_t(0)));
        for (; found != wanted.end() && found->first == index; ++found)
            result[found->second] = static_cast<std::int64_t>(ascending_ ? position : count - 1 - position);
    }
    return result;
}

void TransactionTable::explainTolerance(TransactionRow& row)
{
    if (row.verdict != Verdict::WithinTolerance)
        return;
    auto known = runTolerances_.find(row.verdictRun);
    if (known == runTolerances_.end()) {
        Statement run = db_.prepare("SELECT tolerance FROM replay_runs WHERE id = ?1");
        run.bind(1, row.verdictRun);
        known = runTolerances_.emplace(row.verdictRun, run.step() && !run.isNull(0) ? run.text(0) : std::string()).first;
    }
    try {
        const Tolerance tolerance = known->second.empty() ? Tolerance::defaults() : Tolerance::parse(known->second);
        row.toleranceCriterion = tolerance.passedBy(row.worstSlot, row.worstMaxUlp, row.worstRelativeL2);
    } catch (const ToleranceError&) {
        row.toleranceCriterion.clear();  // a tolerance this build cannot read explains nothing
    }
}

std::vector<TransactionRow> TransactionTable::rows(std::uint64_t first, std::uint64_t count)
{
    std::vector<TransactionRow> result;
    const std::uint64_t total = rowCount();
    if (first >= total)
        return result;
    count = std::min(count, total - first);
    result.reserve(count);
    if (identity_) {
        // Consecutive indexes: one range read of the primary key.
        const std::int64_t low = viewAt(ascending_ ? first : first + count - 1);
        const std::int64_t high = low + static_cast<std::int64_t>(count) - 1;
        if (!rangeQuery_)
            rangeQuery_ = std::make_unique<Statement>(db_.prepare(rowQuery() + "AND t.idx BETWEEN ?3 AND ?4 ORDER BY t.idx"));
        Statement& rows = *rangeQuery_;
        rows.reset();
        rows.bind(1, tapeId_).bind(2, runId_).bind(3, low).bind(4, high);
        while (rows.step())
            result.push_back(rowFrom(rows));
        rows.reset();
        for (TransactionRow& row : result)
            explainTolerance(row);
        if (!ascending_)
            std::reverse(result.begin(), result.end());
        return result;
    }
    if (!pointQuery_)
        pointQuery_ = std::make_unique<Statement>(db_.prepare(rowQuery() + "AND t.idx = ?3"));
    Statement& row = *pointQuery_;
    for (std::uint64_t position = first; position < first + count; ++position) {
        row.reset();
        row.bind(1, tapeId_).bind(2, runId_).bind(3, viewAt(position));
        if (row.step()) {
            result.push_back(rowFrom(row));
            explainTolerance(result.back());
        }
    }
    row.reset();
    return result;
}

}  // namespace zkdv
