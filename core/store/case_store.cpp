#include "zkdv/store/case_store.h"

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <ctime>
#include <deque>
#include <exception>
#include <future>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

#include "sync_ahead.h"
#include "zkdv/store/case_schema.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/tape_seal.h"
#include "zkdv/store/tape_link.h"
#include "zkdv/store/transaction_count.h"
#include "zkdv/store/transaction_order.h"
#include "zkdv/util/utc_time.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

namespace {
std::optional<std::string> optionalHex(const std::optional<Digest>& digest)
{
    return digest ? std::optional<std::string>(toHex(*digest)) : std::nullopt;
}

std::optional<std::int64_t> optionalInteger(const std::optional<std::uint64_t>& value)
{
    return value ? std::optional<std::int64_t>(static_cast<std::int64_t>(*value)) : std::nullopt;
}
}  // namespace

namespace {

std::string shapeJson(const std::vector<std::int64_t>& shape) { return nlohmann::json(shape).dump(); }

std::string absolutePath(const std::string& path)
{
    std::error_code error;
    auto absolute = std::filesystem::absolute(path, error);
    return error ? path : absolute.lexically_normal().string();
}

ByteSpan digestBytes(const Digest& digest) { return ByteSpan(digest.data(), digest.size()); }

// Binds bytes that stay valid until the statement has run, without the copy bindBlob makes.
void bindStaticBlob(Database& db, Statement& statement, int index, ByteSpan blob)
{
    const int rc = sqlite3_bind_blob(statement.handle(), index, blob.size ? blob.data : static_cast<const void*>(""),
                                     static_cast<int>(blob.size), SQLITE_STATIC);
    if (rc != SQLITE_OK)
        db.check(rc, "cannot bind parameter " + std::to_string(index) + " of a row insert");
}

// OR FAIL: a row that breaks a constraint stops the ingest, which then rolls back as a
// whole, so a statement need not undo its own earlier rows; with the default (ABORT) SQLite
// keeps a statement journal for every multi-row INSERT to be able to.
constexpr const char* kInsertTransactionColumns =
    "INSERT OR FAIL INTO transactions(tape_id, idx, segment, loss, lr, update_norm, max_update, fingerprints, has_deltas,"
    " has_state_digest, state_digest, wall_time_ns, record_index, record_offset, record_length, record_digest, scheduled)";

// The row of one transaction or snapshot record as the case stores it, kept until inserted
// (by a thread of its own, except with --embed).
struct PendingRow {
    bool snapshot = false;
    std::int64_t idx = 0;  // transaction index, or the snapshot's before_transaction
    std::int64_t segment = 0;
    double loss = 0;
    std::optional<double> lr;
    double updateNorm = 0;
    double maxUpdate = 0;
    std::size_t fingerprintsAt = 0;  // into RowChunk::fingerprints
    std::size_t fingerprintCount = 0;
    std::size_t scheduledAt = 0;  // into RowChunk::scheduled
    std::size_t scheduledCount = 0;  // 0: NULL (the tape schedules nothing)
    bool hasDeltas = false;
    bool hasStateDigest = false;
    Digest stateDigest{};
    std::int64_t wallTimeNs = 0;
    std::int64_t recordIndex = 0;
    std::int64_t recordOffset = 0;
    std::int64_t recordLength = 0;
    Digest recordDigest{};
};

struct RowChunk {
    std::vector<PendingRow> rows;
    std::vector<double> fingerprints;  // every row's (l2, max_abs) pairs, back to back
    std::vector<double> scheduled;     // every row's scheduled option values, back to back

    void clear()
    {
        rows.clear();
        fingerprints.clear();
        scheduled.clear();
    }

    // `scheduledOptions`: the options the root schedules (none: the row's `scheduled` is NULL).
    PendingRow& addTransaction(const TransactionRecord& record, const RecordLocation& location, std::optional<double> lr,
                               double updateNorm, std::uint64_t snapshotInterval, const std::vector<std::string>& scheduledOptions)
    {
        PendingRow& row = rows.emplace_back();
        const std::size_t parameters = record.updateL2.size();
        row.fingerprintsAt = fingerprints.size();
        row.fingerprintCount = parameters * 2;
        row.maxUpdate = 0.0;
        for (std::size_t i = 0; i < parameters; ++i) {
            fingerprints.push_back(record.updateL2[i]);
            fingerprints.push_back(record.updateMaxAbs[i]);
            row.maxUpdate = std::max(row.maxUpdate, record.updateMaxAbs[i]);
        }
        row.scheduledAt = scheduled.size();
        // The reader made sure a tape with a schedule records each option for every group.
        for (const std::string& option : scheduledOptions)
            for (double value : record.optimizerGroupValues(option))
                scheduled.push_back(value);
        row.scheduledCount = scheduled.size() - row.scheduledAt;
        row.idx = static_cast<std::int64_t>(record.index);
        row.segment = static_cast<std::int64_t>(record.index / snapshotInterval);
        row.loss = record.loss;
        row.lr = lr;
        row.updateNorm = updateNorm;
        row.hasDeltas = !record.deltas.empty();
        row.hasStateDigest = record.stateDigest.has_value();
        if (record.stateDigest)
            row.stateDigest = *record.stateDigest;
        row.wallTimeNs = static_cast<std::int64_t>(record.wallTimeNs);
        setRecord(row, location);
        return row;
    }

    PendingRow& addSnapshot(const SnapshotRecord& snapshot, const RecordLocation& location)
    {
        PendingRow& row = rows.emplace_back();
        row.snapshot = true;
        row.idx = static_cast<std::int64_t>(snapshot.beforeTransaction);
        setRecord(row, location);
        return row;
    }

private:
    static void setRecord(PendingRow& row, const RecordLocation& location)
    {
        row.recordIndex = static_cast<std::int64_t>(location.index);
        row.recordOffset = static_cast<std::int64_t>(location.offset);
        row.recordLength = static_cast<std::int64_t>(location.frameSize);
        row.recordDigest = location.digest;
    }
};

constexpr std::size_t kTransactionValues = 16;  // per transactions row, besides the tape id

// Binds a transaction row's values (all but the tape id) from parameter `first` on, in the
// column order of kInsertTransactionColumns.
void bindTransactionRow(Database& db, Statement& statement, int first, const RowChunk& chunk, const PendingRow& row)
{
    statement.bind(first, row.idx)
        .bind(first + 1, row.segment)
        .bind(first + 2, row.loss)
        .bind(first + 3, row.lr)
        .bind(first + 4, row.updateNorm)
        .bind(first + 5, row.maxUpdate)
        .bind(first + 7, row.hasDeltas ? 1 : 0)
        .bind(first + 8, row.hasStateDigest ? 1 : 0);
    bindStaticBlob(db, statement, first + 6,
                   ByteSpan(chunk.fingerprints.data() + row.fingerprintsAt, row.fingerprintCount * sizeof(double)));
    if (row.hasStateDigest)
        bindStaticBlob(db, statement, first + 9, digestBytes(row.stateDigest));
    else
        statement.bindNull(first + 9);
    statement.bind(first + 10, row.wallTimeNs)
        .bind(first + 11, row.recordIndex)
        .bind(first + 12, row.recordOffset)
        .bind(first + 13, row.recordLength);
    bindStaticBlob(db, statement, first + 14, digestBytes(row.recordDigest));
    if (row.scheduledCount > 0)
        bindStaticBlob(db, statement, first + 15, ByteSpan(chunk.scheduled.data() + row.scheduledAt, row.scheduledCount * sizeof(double)));
    else
        statement.bindNull(first + 15);
}

void insertTransactionRow(Database& db, Statement& insertOne, std::int64_t tapeId, const RowChunk& chunk, const PendingRow& row)
{
    insertOne.bind(1, tapeId);
    bindTransactionRow(db, insertOne, 2, chunk, row);
    insertOne.run();
}

void insertSnapshotRow(Database& db, Statement& insertOne, std::int64_t tapeId, const PendingRow& row)
{
    insertOne.bind(1, tapeId).bind(2, row.idx).bind(3, row.recordIndex).bind(4, row.recordOffset).bind(5, row.recordLength);
    bindStaticBlob(db, insertOne, 6, digestBytes(row.recordDigest));
    insertOne.run();
}

// Inserts transaction and snapshot rows on a thread of its own, fed through a short queue
// of row chunks, so SQLite's work overlaps the tape's hashing and checking instead of
// adding to them. The connection is used by this thread alone while it runs.
class RowInserter {
public:
    static constexpr std::size_t kChunkRows = 2048;
    static constexpr std::size_t kQueuedChunks = 4;

    RowInserter(Database& db, Statement& insertTransaction, Statement& insertSnapshot, std::int64_t tapeId)
        : db_(db), insertTransaction_(insertTransaction), insertSnapshot_(insertSnapshot),
          insertTransactions_(db.prepare(multiRowInsert(kRowsPerStatement))), syncAhead_(db), tapeId_(tapeId),
          thread_([this] { work(); })
    {
        insertTransactions_.bind(1, tapeId_);
    }

    ~RowInserter()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            abandon_.store(true);
            closed_ = true;
        }
        changed_.notify_all();
        if (thread_.joinable())
            thread_.join();
    }

    RowChunk& current() { return current_; }

    // Hands the current chunk over once it is full; rethrows the inserter's failure.
    void pushIfFull()
    {
        if (current_.rows.size() >= kChunkRows)
            push();
    }

    // Inserts everything handed over so far, then returns; rethrows the inserter's failure.
    void flush()
    {
        push();
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return (queue_.empty() && !busy_) || failure_; });
        if (failure_)
            std::rethrow_exception(failure_);
    }

    // Inserts everything and stops the thread; rethrows the inserter's failure.
    void finish()
    {
        flush();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            closed_ = true;
        }
        changed_.notify_all();
        thread_.join();
    }

private:
    void push()
    {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] { return queue_.size() < kQueuedChunks || failure_; });
        if (failure_)
            std::rethrow_exception(failure_);
        if (current_.rows.empty())
            return;
        queue_.push_back(std::move(current_));
        // Refill the storage of a chunk already inserted, when there is one.
        current_ = std::move(spare_);
        spare_ = RowChunk();
        lock.unlock();
        changed_.notify_all();
        current_.clear();
        current_.rows.reserve(kChunkRows);
    }

    void work()
    {
        for (;;) {
            RowChunk chunk;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                changed_.wait(lock, [&] { return !queue_.empty() || closed_; });
                if (abandon_ || queue_.empty())
                    return;
                chunk = std::move(queue_.front());
                queue_.pop_front();
                busy_ = true;
            }
            changed_.notify_all();
            try {
                insert(chunk);
                if (++insertedChunks_ % kSyncAheadChunks == 0)
                    syncAhead_.request();
            } catch (...) {
                std::lock_guard<std::mutex> lock(mutex_);
                failure_ = std::current_exception();
                busy_ = false;
                changed_.notify_all();
                return;
            }
            {
                std::lock_guard<std::mutex> lock(mutex_);
                busy_ = false;
                // Keep the chunk's storage for the producer to refill.
                if (!spare_.rows.capacity())
                    spare_ = std::move(chunk);
            }
            changed_.notify_all();
        }
    }

    // Transaction rows go in kRowsPerStatement at a time: one statement keeps its cursor on
    // the table's last page between rows (appends need no descent from the root) and is
    // stepped and reset once per batch, and the tape id is bound once.
    void insert(const RowChunk& chunk)
    {
        batch_.clear();
        for (const PendingRow& row : chunk.rows) {
            if (abandon_.load(std::memory_order_relaxed))
                return;
            if (row.snapshot) {
                insertSnapshotRow(db_, insertSnapshot_, tapeId_, row);
                continue;
            }
            batch_.push_back(&row);
            if (batch_.size() == kRowsPerStatement) {
                for (std::size_t i = 0; i < batch_.size(); ++i)
                    bindTransactionRow(db_, insertTransactions_, 2 + static_cast<int>(i * kTransactionValues), chunk, *batch_[i]);
                insertTransactions_.run();
                batch_.clear();
            }
        }
        for (const PendingRow* row : batch_)
            insertTransactionRow(db_, insertTransaction_, tapeId_, chunk, *row);
        batch_.clear();
    }

    static std::string multiRowInsert(std::size_t rows)
    {
        std::string sql = std::string(kInsertTransactionColumns) + " VALUES";
        int parameter = 2;
        for (std::size_t r = 0; r < rows; ++r) {
            sql += r ? ",(?1" : "(?1";
            for (std::size_t c = 0; c < kTransactionValues; ++c)
                sql += ",?" + std::to_string(parameter++);
            sql += ')';
        }
        return sql;
    }

    static constexpr std::size_t kRowsPerStatement = 64;  // 1,025 parameters, under SQLite's 32,766
    // ~11 MB of rows a sync.
    static constexpr std::size_t kSyncAheadChunks = 32;

    Database& db_;
    Statement& insertTransaction_;
    Statement& insertSnapshot_;
    Statement insertTransactions_;
    std::vector<const PendingRow*> batch_;
    SyncAhead syncAhead_;
    std::size_t insertedChunks_ = 0;
    std::int64_t tapeId_;
    RowChunk current_;
    RowChunk spare_;
    std::mutex mutex_;
    std::condition_variable changed_;
    std::deque<RowChunk> queue_;
    bool busy_ = false;
    bool closed_ = false;
    std::atomic<bool> abandon_{false};  // the ingest failed or was cancelled: drop the rest
    std::exception_ptr failure_;
    std::thread thread_;  // last: starts once everything above exists
};

// Writes each verified record into the case as the scanner hands it over. Without --embed
// the transaction and snapshot rows are inserted by a RowInserter thread; with it every
// insert happens on the scanning thread (payloads are only valid during the visitor call).
class IngestVisitor : public TapeVisitor {
public:
    IngestVisitor(Database& db, const std::string& tapePath, const IngestOptions& options)
        : db_(db), tapePath_(tapePath), options_(options),
          insertTransaction_(db.prepare(std::string(kInsertTransactionColumns) +
                                        " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)")),
          insertSnapshot_(db.prepare(
              "INSERT INTO snapshots(tape_id, before_transaction, record_index, record_offset, record_length, record_digest)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6)")),
          insertPayload_(db.prepare("INSERT INTO payloads(tape_id, record_index, content) VALUES(?1, ?2, ?3)"))
    {
    }

    std::int64_t tapeId() const { return tapeId_; }

    // Waits until every row handed over is in the case; rethrows an insert's failure.
    void finish()
    {
        if (inserter_) {
            inserter_->finish();
            inserter_.reset();
        }
    }

    void onRoot(const RootRecord& root, const RecordLocation& location) override
    {
        root_ = root;
        scheduledOptions_ = root.optimizerSchedule ? root.optimizerSchedule->options : std::vector<std::string>();
        // Room for the transactions the tape's size suggests, so gathering never reallocates;
        // pages not written to are never resident.
        std::error_code error;
        const std::size_t expected = std::min<std::size_t>(std::filesystem::file_size(tapePath_, error) / 256, kMaxOrderedTransactions);
        for (TransactionOrder& order : orders_)
            order.reserve(error ? 0 : expected);
        Statement insert = db_.prepare(
            "INSERT INTO tapes(file_sha256, chain_head, path, size, status, format_major, format_minor, root_json, producer,"
            " optimizer_contract, snapshot_interval, program_sha256, program_kind, record_count, transaction_count,"
            " snapshot_count, embedded, ingested_at)"
            " VALUES(NULL, '', ?2, 0, 'unsealed', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, 0, 0, ?11, ?12)");
        // A placeholder identity (no chain head, size 0) until the whole tape has been read.
        insert.bind(2, absolutePath(tapePath_))
            .bind(3, root.formatMajor)
            .bind(4, root.formatMinor)
            .bind(5, location.payload.asString())
            .bind(6, root.producerName + " " + root.producerVersion)
            .bind(7, root.optimizerContract)
            .bind(8, root.snapshotInterval)
            .bind(9, toHex(root.programSha256))
            .bind(10, root.programKind)
            .bind(11, options_.embed ? 1 : 0)
            .bind(12, utcNow());
        insert.run();
        tapeId_ = db_.lastInsertRowId();

        Statement tensor = db_.prepare("INSERT INTO tensors(tape_id, kind, position, name, dtype, shape) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
        auto addSpecs = [&](const std::vector<TensorSpec>& specs, const char* kind) {
            for (std::size_t i = 0; i < specs.size(); ++i) {
                tensor.bind(1, tapeId_).bind(2, kind).bind(3, static_cast<std::int64_t>(i)).bind(4, specs[i].name);
                tensor.bind(5, dtypeName(specs[i].dtype)).bind(6, shapeJson(specs[i].shape));
                tensor.run();
            }
        };
        addSpecs(root.parameters, "parameter");
        addSpecs(root.buffers, "buffer");

        Statement group = db_.prepare("INSERT INTO optimizer_groups(tape_id, group_index, options, parameters) VALUES(?1, ?2, ?3, ?4)");
        for (std::size_t g = 0; g < root.optimizerGroups.size(); ++g) {
            group.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(g)).bind(3, root.optimizerGroups[g].optionsJson);
            group.bind(4, nlohmann::json(root.optimizerGroups[g].parameters).dump());
            group.run();
        }
        embed(location);
        if (!options_.embed)
            inserter_ = std::make_unique<RowInserter>(db_, insertTransaction_, insertSnapshot_, tapeId_);
    }

    void onProgram(const RecordLocation& location) override
    {
        if (inserter_)
            inserter_->flush();  // the connection is the scanning thread's again until the next row
        Statement insert = db_.prepare(
            "INSERT INTO programs(sha256, kind, size, source, path, tape_id, record_offset, content)"
            " VALUES(?1, ?2, ?3, 'embedded', NULL, ?4, ?5, ?6)"
            " ON CONFLICT(sha256) DO UPDATE SET content = coalesce(programs.content, excluded.content)");
        insert.bind(1, toHex(root_.programSha256))
            .bind(2, root_.programKind)
            .bind(3, static_cast<std::int64_t>(location.payload.size))
            .bind(4, tapeId_)
            .bind(5, static_cast<std::int64_t>(location.offset + tape::kFrameHeaderSize))
            .bindBlob(6, location.payload);
        insert.run();
        embed(location);
    }

    void onSnapshot(const SnapshotRecord& snapshot, const RecordLocation& location) override
    {
        if (inserter_) {
            inserter_->current().addSnapshot(snapshot, location);
            inserter_->pushIfFull();
            return;
        }
        single_.rows.clear();
        insertSnapshotRow(db_, insertSnapshot_, tapeId_, single_.addSnapshot(snapshot, location));
        embed(location);
    }

    void onTransaction(const TransactionRecord& record, const RecordLocation& location) override
    {
        const std::optional<double> lr = record.optimizerValue("lr");
        const double updateNorm = record.updateNorm();
        gatherOrders(record.index, record.loss, lr, updateNorm);
        const auto interval = static_cast<std::uint64_t>(root_.snapshotInterval);
        if (inserter_) {
            inserter_->current().addTransaction(record, location, lr, updateNorm, interval, scheduledOptions_);
            inserter_->pushIfFull();
            return;
        }
        single_.clear();
        const PendingRow& row = single_.addTransaction(record, location, lr, updateNorm, interval, scheduledOptions_);
        insertTransactionRow(db_, insertTransaction_, tapeId_, single_, row);
        embed(location);
    }

    void onSeal(const SealRecord&, const RecordLocation& location) override { embed(location); }

    // Sorts the gathered columns and stores their orders. Loss sorts and encodes on a second
    // thread while this one does the learning rate (mostly constant or a few steps of a
    // schedule: next to nothing) and the update norm. Call after finish().
    void storeOrders()
    {
        if (orders_[0].size() == 0 || ordersAbandoned_)
            return;
        using Encoded = std::optional<HugePageVector<std::uint8_t>>;
        auto sortAndEncode = [](TransactionOrder& order) -> Encoded {
            order.sort();
            return order.encode();
        };
        std::future<Encoded> loss = std::async(std::launch::async, sortAndEncode, std::ref(orders_[0]));
        std::array<Encoded, std::size(kOrderedTransactionColumns)> blobs;
        for (std::size_t column = 1; column < orders_.size(); ++column)
            blobs[column] = sortAndEncode(orders_[column]);
        blobs[0] = loss.get();
        Statement insert =
            db_.prepare("INSERT INTO transaction_orders(tape_id, column_name, ascending) VALUES(?1, ?2, zeroblob(?3))");
        for (std::size_t column = 0; column < orders_.size(); ++column) {
            if (!blobs[column])
                return;
            const ByteSpan blob(blobs[column]->data(), blobs[column]->size());
            insert.bind(1, tapeId_).bind(2, kOrderedTransactionColumns[column]).bind(3, static_cast<std::int64_t>(blob.size));
            insert.run();
            db_.writeBlob("transaction_orders", "ascending", db_.lastInsertRowId(), blob);
        }
    }

private:
    // The stored orders take 48 bytes per transaction while a tape is read; past this many
    // transactions a tape keeps none (its table sorts when asked), so ingest stays within
    // its memory bound whatever the tape's size.
    static constexpr std::size_t kMaxOrderedTransactions = std::size_t(1) << 21;

    void gatherOrders(std::uint64_t index, double loss, std::optional<double> lr, double updateNorm)
    {
        if (ordersAbandoned_)
            return;
        if (orders_[0].size() >= kMaxOrderedTransactions) {
            ordersAbandoned_ = true;
            orders_ = {};
            return;
        }
        orders_[0].add(index, loss);
        orders_[1].add(index, lr.value_or(std::numeric_limits<double>::quiet_NaN()));
        orders_[2].add(index, updateNorm);
    }

    void embed(const RecordLocation& location)
    {
        if (!options_.embed)
            return;
        insertPayload_.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(location.index)).bindBlob(3, location.payload);
        insertPayload_.run();
    }

    Database& db_;
    std::string tapePath_;
    IngestOptions options_;
    Statement insertTransaction_;
    Statement insertSnapshot_;
    Statement insertPayload_;
    RootRecord root_;
    std::vector<std::string> scheduledOptions_;  // the root's, in its order
    std::int64_t tapeId_ = 0;
    RowChunk single_;  // the one row inserted on this thread (--embed)
    std::array<TransactionOrder, std::size(kOrderedTransactionColumns)> orders_;
    bool ordersAbandoned_ = false;
    // Last: stopped (and joined) before the statements it uses go.
    std::unique_ptr<RowInserter> inserter_;
};

}  // namespace

CaseStore::CaseStore(const std::string& path, Access access) : path_(path)
{
    db_ = std::make_unique<Database>(path, access == Access::ReadOnly ? Database::Mode::ReadOnly : Database::Mode::ReadWriteCreate);
    int before = 0;  // 0: a new file, which upgrade() creates rather than migrates
    try {
        before = db_->userVersion();
    } catch (const DatabaseError&) {
        // not an SQLite file: upgrade() says so, with the path
    }
    try {
        CaseSchema::upgrade(*db_);
        if (before != 0 && before < CaseSchema::latestVersion())
            migratedFrom_ = before;
    } catch (const SchemaUpgradeNeeded&) {
        // Only a read-only connection gets here. Reading an older case is what every reader
        // (info, report, the workstation's views) wants, so it is migrated once, by a writing
        // connection, as an ingest would; the migration is one transaction either way.
        // A file without write permission was made read-only on purpose (even root, who
        // could write it, leaves it as it is).
        const int version = before;
        db_.reset();
        std::string unwritable;
        std::error_code ignored;
        using std::filesystem::perms;
        if ((std::filesystem::status(path, ignored).permissions() & (perms::owner_write | perms::group_write | perms::others_write)) == perms::none)
            unwritable = "it has no write permission";
        else
            try {
                Database writer(path, Database::Mode::ReadWrite);
                if (sqlite3_db_readonly(writer.handle(), "main") == 1)
                    unwritable = "SQLite opens it read-only";
                else
                    CaseSchema::upgrade(writer);
            } catch (const DatabaseError& error) {
                unwritable = error.what();
            }
        if (!unwritable.empty())
            throw SchemaUpgradeNeeded("case " + path + " uses schema version " + std::to_string(version) + "; this build reads version " +
                                      std::to_string(CaseSchema::latestVersion()) +
                                      " and migrates an older case when it opens it, but this file cannot be written (" + unwritable +
                                      "); make it writable, or open a writable copy");
        migratedFrom_ = version;
        db_ = std::make_unique<Database>(path, Database::Mode::ReadOnly);
        CaseSchema::upgrade(*db_);
    }
    if (access == Access::ReadWrite) {
        bool wal = true;
        {
            Statement mode = db_->prepare("PRAGMA journal_mode");
            wal = !mode.step() || mode.text(0) == "wal";
        }
        if (!wal)
            db_->trySetJournalMode("wal");  // a case an older build's ingest left in rollback mode
        try {
            BusyTimeout wait(*db_, 100);
            ReplayStore(*db_).markInterruptedRuns();
        } catch (const DatabaseError& error) {
            if (!error.busy())
                throw;  // another process is writing: a later open records them
        }
    }
}

CaseStore::~CaseStore() = default;

IngestResult CaseStore::ingestTape(const std::string& tapePath, const IngestOptions& options)
{
    IngestResult result;
    std::optional<std::string> fileSha256;
    // The ingest seals the rows it writes with this user's key (zkdv/store/tape_seal.h), read
    // before the write lock is taken; a tape whose key cannot be had is stored unsealed.
    std::optional<AuditorKey> key;
    try {
        key = AuditorKey::loadOrCreate();
    } catch (const Error& error) {
        result.sealProblem = error.what();
    }
    std::optional<Digest> fresh;
    {
        // The ingest writes in WAL mode, like every other writer: readers (info, report, the
        // workstation, a replay's workers) read the case throughout, and a replay storing
        // results waits for the commit (ReplayStore). The rollback journal wrote the new pages
        // once instead of twice (log, then checkpoint) but locked every reader out from the
        // first page spilled to the file until the commit; docs/reliability.md has the cost.
        // Every row an ingest adds refers to the tape row it adds first, so the foreign keys
        // hold by construction. Enforced, they would make each multi-row INSERT keep a
        // statement journal, a copy of every page it changes in case a later row of the
        // statement fails: 1.4 GB of temporary-file writes for a million transactions.
        ForeignKeysOff foreignKeysOff(*db_);
        std::optional<BusyTimeout> waitForOtherWriters(std::in_place, *db_, kWriterWaitMs);
        SqlTransaction transaction(*db_);
        waitForOtherWriters.reset();
        IngestVisitor visitor(*db_, tapePath, options);
        ScanOptions scan;
        scan.computeFileSha256 = options.computeFileSha256;
        scan.progress = options.progress;

        result.summary = scanTape(tapePath, &visitor, scan);
        visitor.finish();
        const TapeSummary& summary = result.summary;
        if (summary.status == TapeStatus::Corrupt)
            throw IngestError("tape " + tapePath + " is corrupt: " + summary.problem->describe(), summary);
        if (!summary.complete() && !options.allowIncomplete)
            throw IngestError("tape " + tapePath + " is " + std::string(tapeStatusName(summary.status)) +
                                  (summary.problem ? " (" + summary.problem->describe() + ")" : std::string()) +
                                  "; it holds " + std::to_string(summary.transactionCount) +
                                  " whole transactions but is not complete. Allow incomplete tapes to ingest its readable part.",
                              summary);
        if (!summary.root)
            throw IngestError("tape " + tapePath + " has no readable root record", summary);
        if (summary.fileSha256)
            fileSha256 = toHex(*summary.fileSha256);
        // What the whole tape says, stored in its row (`tapeId`); with `caseTape`, the tape's row
        // in the case, its identity and ingest time are left as they are and its file SHA-256 and
        // ingest time taken from the case's row, so that the two rows compare.
        auto storeSummary = [&](std::int64_t tapeId, std::optional<std::int64_t> caseTape) {
            Statement finish = db_->prepare(
                "UPDATE tapes SET file_sha256 = coalesce(?1, (SELECT c.file_sha256 FROM tapes c WHERE c.id = ?17)),"
                " chain_head = CASE WHEN ?17 IS NULL THEN ?2 ELSE chain_head END, size = CASE WHEN ?17 IS NULL THEN ?3 ELSE size END,"
                " status = ?4, record_count = ?5, transaction_count = ?6, snapshot_count = ?7, first_state_digest = ?9,"
                " final_state_digest = ?10, transactions_before = ?11, last_schedule_epoch = ?12, last_grad_scaler = ?13,"
                " signer_key_id = ?14, signer_algorithm = ?15, signer_public_key = ?16,"
                " ingested_at = coalesce((SELECT c.ingested_at FROM tapes c WHERE c.id = ?17), ingested_at) WHERE id = ?8");
            finish.bind(1, fileSha256)
                .bind(2, toHex(summary.chainHead))
                .bind(3, static_cast<std::int64_t>(summary.fileSize))
                .bind(4, tapeStatusName(summary.status))
                .bind(5, static_cast<std::int64_t>(summary.recordCount))
                .bind(6, static_cast<std::int64_t>(summary.transactionCount))
                .bind(7, static_cast<std::int64_t>(summary.snapshotCount))
                .bind(8, tapeId)
                .bind(9, optionalHex(summary.firstStateDigest))
                .bind(10, optionalHex(summary.finalStateDigest))
                .bind(11, static_cast<std::int64_t>(summary.root->resumes ? summary.root->resumes->transactionsBefore : 0))
                .bind(12, optionalInteger(summary.lastScheduleEpoch))
                .bind(13, summary.lastGradScalerStep ? std::optional<std::string>(gradScalerStepJson(*summary.lastGradScalerStep)) : std::nullopt)
                .bind(14, summary.signer ? std::optional<std::string>(summary.signer->keyId) : std::nullopt)
                .bind(15, summary.signer ? std::optional<std::string>(keyAlgorithmName(summary.signer->algorithm)) : std::nullopt)
                .bind(16, summary.signer ? std::optional<std::string>(summary.signer->publicKeyPem) : std::nullopt)
                .bind(17, caseTape);
            finish.run();
        };

        const std::string chainHead = toHex(summary.chainHead);
        Statement existing = db_->prepare("SELECT id FROM tapes WHERE chain_head = ?1 AND size = ?2");
        existing.bind(1, chainHead).bind(2, static_cast<std::int64_t>(summary.fileSize));
        if (existing.step()) {
            result.tapeId = existing.int64(0);
            result.alreadyPresent = true;
            if (key) {
                // The rows this ingest derived from the tape, identity and ingest time aside, to
                // compare with the case's before they roll back.
                storeSummary(visitor.tapeId(), result.tapeId);
                fresh = tapeContentDigest(*db_, visitor.tapeId());
            }
        } else {
            storeSummary(visitor.tapeId(), std::nullopt);
            visitor.storeOrders();
            if (key)
                sealTape(*db_, visitor.tapeId(), *key);
            transaction.commit();
            result.tapeId = visitor.tapeId();
            return result;
        }
    }  // the same tape again: its rows roll back, the case stays exactly as it was
    BusyTimeout wait(*db_, kWriterWaitMs);
    SqlTransaction transaction(*db_);
    if (fileSha256) {
        // ...except that a whole-file SHA-256 asked for now completes a tape ingested without one.
        Statement complete = db_->prepare("UPDATE tapes SET file_sha256 = ?1 WHERE id = ?2 AND file_sha256 IS NULL");
        complete.bind(1, *fileSha256).bind(2, result.tapeId);
        complete.run();
    }
    // ...and its state digests, for a tape ingested before the case kept them (schema 12).
    Statement digests = db_->prepare(
        "UPDATE tapes SET first_state_digest = coalesce(first_state_digest, ?1), final_state_digest = coalesce(final_state_digest, ?2),"
        " transactions_before = ?3, last_schedule_epoch = ?5, last_grad_scaler = ?6"
        " WHERE id = ?4 AND (first_state_digest IS NULL OR final_state_digest IS NULL)");
    digests.bind(1, optionalHex(result.summary.firstStateDigest))
        .bind(2, optionalHex(result.summary.finalStateDigest))
        .bind(3, static_cast<std::int64_t>(result.summary.root->resumes ? result.summary.root->resumes->transactionsBefore : 0))
        .bind(4, result.tapeId)
        .bind(5, optionalInteger(result.summary.lastScheduleEpoch))
        .bind(6, result.summary.lastGradScalerStep ? std::optional<std::string>(gradScalerStepJson(*result.summary.lastGradScalerStep))
                                                   : std::nullopt);
    digests.run();
    // ...and its seal, for a tape ingested before tape seals (schema 18) or by another auditor:
    // the case's rows are sealed when they are exactly what this ingest derived from the tape.
    if (fresh) {
        if (tapeContentDigest(*db_, result.tapeId) == *fresh) {
            sealTape(*db_, result.tapeId, *key);
            result.resealed = true;
        } else {
            result.rowsDiffer = true;
        }
    }
    transaction.commit();
    return result;
}

ProgramFileResult CaseStore::addProgramFile(const std::string& programPath)
{
    MappedFile file(programPath);
    ProgramFileResult result;
    result.sha256 = toHex(Sha256::of(file.bytes()));

    SqlTransaction transaction(*db_);
    Statement tapes = db_->prepare("SELECT id, program_kind FROM tapes WHERE program_sha256 = ?1 ORDER BY id");
    tapes.bind(1, result.sha256);
    std::string kind;
    while (tapes.step()) {
        result.matchingTapes.push_back(tapes.int64(0));
        kind = tapes.text(1);
    }
    if (result.matchingTapes.empty())
        throw Error("program " + programPath + " (sha256 " + result.sha256 + ") matches no tape in case " + path_);

    Statement present = db_->prepare("SELECT content IS NOT NULL FROM programs WHERE sha256 = ?1");
    present.bind(1, result.sha256);
    if (present.step() && present.int64(0) != 0) {
        result.alreadyPresent = true;
        return result;
    }
    Statement insert = db_->prepare(
        "INSERT INTO programs(sha256, kind, size, source, path, tape_id, record_offset, content) VALUES(?1, ?2, ?3, 'file', ?4, ?5, NULL, ?6)"
        " ON CONFLICT(sha256) DO UPDATE SET content = excluded.content, source = 'file', path = excluded.path");
    insert.bind(1, result.sha256)
        .bind(2, kind)
        .bind(3, static_cast<std::int64_t>(file.size()))
        .bind(4, absolutePath(programPath))
        .bind(5, result.matchingTapes.front())
        .bindBlob(6, file.bytes());
    insert.run();
    transaction.commit();
    return result;
}

namespace {
constexpr const char* kTapeColumns =
    "SELECT t.id, t.path, t.file_sha256, t.chain_head, t.size, t.status, t.producer, t.optimizer_contract, t.program_sha256,"
    " t.program_kind, EXISTS(SELECT 1 FROM programs p WHERE p.sha256 = t.program_sha256 AND p.content IS NOT NULL),"
    " t.snapshot_interval, t.record_count, t.transaction_count, t.snapshot_count, t.embedded, t.ingested_at, t.root_json,"
    " t.transactions_before, t.signer_key_id, t.signer_algorithm FROM tapes t";

CaseTape tapeFromRow(Database& db, const Statement& row)
{
    CaseTape tape;
    tape.id = row.int64(0);
    tape.path = row.text(1);
    tape.fileSha256 = row.text(2);
    tape.chainHead = row.text(3);
    tape.size = static_cast<std::uint64_t>(row.int64(4));
    tape.status = row.text(5);
    tape.producer = row.text(6);
    tape.optimizerContract = row.text(7);
    tape.programSha256 = row.text(8);
    tape.programKind = row.text(9);
    tape.programPresent = row.int64(10) != 0;
    tape.snapshotInterval = static_cast<int>(row.int64(11));
    tape.recordCount = static_cast<std::uint64_t>(row.int64(12));
    tape.transactionCount = checkedTransactionCount(db, tape.id, row.int64(13), CountCheck::Bounds);
    tape.snapshotCount = static_cast<std::uint64_t>(row.int64(14));
    tape.embedded = row.int64(15) != 0;
    tape.ingestedAt = row.text(16);
    tape.rootJson = row.text(17);
    tape.transactionsBefore = static_cast<std::uint64_t>(std::max<std::int64_t>(0, row.int64(18)));
    tape.signerKeyId = row.text(19);
    tape.signerAlgorithm = row.text(20);
    tape.link = tapeLink(db, tape.id);
    return tape;
}
}  // namespace

std::vector<CaseTape> CaseStore::tapes()
{
    Statement query = db_->prepare(std::string(kTapeColumns) + " ORDER BY t.id");
    std::vector<CaseTape> result;
    while (query.step())
        result.push_back(tapeFromRow(*db_, query));
    return result;
}

std::optional<CaseTape> CaseStore::tape(std::int64_t id)
{
    Statement query = db_->prepare(std::string(kTapeColumns) + " WHERE t.id = ?1");
    query.bind(1, id);
    if (!query.step())
        return std::nullopt;
    return tapeFromRow(*db_, query);
}

}  // namespace zkdv
