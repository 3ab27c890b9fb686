// Tests for CaseStore: ingesting tapes into an audit case, the index it keeps of every
// record, idempotence, refusal of damaged input without partial writes, program files and
// schema versions.

#include <QtTest>

#include <QDateTime>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iterator>
#include <limits>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_schema.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_order.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/sha256.h"

using namespace zkdv;
using test::readAll;
using test::writeAll;

namespace {

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

std::vector<std::uint8_t> blobOf(const Statement& row, int column)
{
    ByteSpan blob = row.blob(column);
    return std::vector<std::uint8_t>(blob.begin(), blob.end());
}

std::vector<std::uint8_t> bytesOf(const Digest& digest) { return std::vector<std::uint8_t>(digest.begin(), digest.end()); }

struct DemoSpec {
    std::uint64_t steps = 30;
    int batchSize = 4;
    int snapshotInterval = 12;
    double updateCheck = 0.3;
    double stateCheck = 0.3;
    std::uint64_t seed = 7;
    bool seal = true;
};

std::string writeDemo(const std::string& path, const DemoSpec& spec = {})
{
    SyntheticDemoOptions options;
    options.steps = spec.steps;
    options.batchSize = spec.batchSize;
    options.features = 4;
    options.classes = 3;
    options.snapshotInterval = spec.snapshotInterval;
    options.updateCheckProbability = spec.updateCheck;
    options.stateCheckProbability = spec.stateCheck;
    options.seed = spec.seed;
    options.seal = spec.seal;
    options.overwrite = true;
    writeSyntheticDemoTape(path, options);
    return path;
}

// Where every record of a tape lies and what a scan sees in it.
struct LayoutVisitor : TapeVisitor {
    struct Record {
        std::uint64_t index = 0;
        std::uint32_t type = 0;
        std::uint64_t offset = 0;
        std::uint64_t frameSize = 0;
        std::uint64_t payloadSize = 0;
        Digest digest{};
    };
    struct Transaction {
        std::uint64_t index = 0;
        std::uint64_t recordIndex = 0;
        double loss = 0;
        std::optional<double> lr;
        std::vector<double> l2, maxAbs;
        bool hasDeltas = false;
        std::optional<Digest> stateDigest;
        std::uint64_t wallTimeNs = 0;
    };
    std::vector<Record> records;
    std::vector<Transaction> transactions;
    std::vector<std::uint64_t> snapshots;
    std::vector<std::uint8_t> program;
    std::optional<RootRecord> root;
    std::string rootPayload;

    void keep(const RecordLocation& l)
    {
        records.push_back({l.index, l.type, l.offset, l.frameSize, l.payload.size, l.digest});
    }
    void onRoot(const RootRecord& r, const RecordLocation& l) override
    {
        root = r;
        rootPayload = std::string(l.payload.asString());
        keep(l);
    }
    void onProgram(const RecordLocation& l) override
    {
        program.assign(l.payload.begin(), l.payload.end());
        keep(l);
    }
    void onSnapshot(const SnapshotRecord& s, const RecordLocation& l) override
    {
        snapshots.push_back(s.beforeTransaction);
        keep(l);
    }
    void onTransaction(const TransactionRecord& t, const RecordLocation& l) override
    {
        transactions.push_back({t.index, l.index, t.loss, t.optimizerValue("lr"), t.updateL2, t.updateMaxAbs, !t.deltas.empty(),
                                t.stateDigest, t.wallTimeNs});
        keep(l);
    }
    void onSeal(const SealRecord&, const RecordLocation& l) override { keep(l); }

    const Record& recordOfTransaction(std::uint64_t t) const { return records[transactions[t].recordIndex]; }
    int deltaCount() const
    {
        return static_cast<int>(std::count_if(transactions.begin(), transactions.end(), [](const Transaction& t) { return t.hasDeltas; }));
    }
    int digestCount() const
    {
        return static_cast<int>(
            std::count_if(transactions.begin(), transactions.end(), [](const Transaction& t) { return t.stateDigest.has_value(); }));
    }
};

LayoutVisitor layoutOf(const std::string& path, TapeSummary* summaryOut = nullptr)
{
    LayoutVisitor visitor;
    TapeSummary summary = scanTape(path, &visitor);
    if (summaryOut)
        *summaryOut = summary;
    return visitor;
}

const std::vector<std::string> kTables = {"case_info", "tapes",       "tensors",  "optimizer_groups", "programs", "transactions",
                                          "snapshots", "payloads",    "replay_runs", "verdicts",      "metrics",
                                          "transaction_orders"};

std::int64_t count(Database& db, const std::string& sql) { return db.queryInt64(sql).value_or(-1); }

std::int64_t rows(Database& db, const std::string& table) { return count(db, "SELECT count(*) FROM " + table); }

// Every table's row count.
std::vector<std::int64_t> tableCounts(Database& db)
{
    std::vector<std::int64_t> counts;
    for (const std::string& table : kTables)
        counts.push_back(rows(db, table));
    return counts;
}

// Every row of every table, each column through SQL quote(), in key order: equal dumps
// mean equal case contents.
std::string dumpCase(Database& db)
{
    std::string dump;
    for (const std::string& table : kTables) {
        std::vector<std::string> columns;
        Statement info = db.prepare("SELECT name FROM pragma_table_info('" + table + "') ORDER BY cid");
        while (info.step())
            columns.push_back(info.text(0));
        std::string select = "SELECT ";
        for (std::size_t i = 0; i < columns.size(); ++i)
            select += (i ? " || ',' || quote(" : "quote(") + columns[i] + ")";
        Statement query = db.prepare(select + " FROM " + table + " ORDER BY 1");
        dump += "[" + table + "]\n";
        while (query.step())
            dump += query.text(0) + "\n";
    }
    return dump;
}

std::string tapesRow(Database& db, std::int64_t id)
{
    Statement query = db.prepare(
        "SELECT quote(id) || ',' || quote(file_sha256) || ',' || quote(chain_head) || ',' || quote(path) || ',' || quote(size) || ',' ||"
        " quote(status) || ',' || quote(record_count) || ',' || quote(transaction_count) || ',' || quote(snapshot_count) || ',' ||"
        " quote(embedded) || ',' || quote(ingested_at) FROM tapes WHERE id = ?1");
    query.bind(1, id);
    return query.step() ? query.text(0) : std::string("<no row>");
}

QJsonValue parseJson(const std::string& text)
{
    QJsonParseError error{};
    QJsonDocument document = QJsonDocument::fromJson(QByteArray::fromStdString(text), &error);
    if (error.error != QJsonParseError::NoError)
        return QJsonValue(QStringLiteral("<invalid JSON: %1>").arg(QString::fromStdString(text)));
    return document.isArray() ? QJsonValue(document.array()) : QJsonValue(document.object());
}

QJsonArray shapeArray(const std::vector<std::int64_t>& shape)
{
    QJsonArray array;
    for (std::int64_t d : shape)
        array.append(static_cast<qint64>(d));
    return array;
}

}  // namespace

class TestCaseStore : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void ingestStoresTheTapeRow();
    void ingestStoresTheSortOrders();
    void ingestLeavesTheCaseInWalMode();
    void ingestLeavesForeignKeysEnforced();
    void ingestIndexesEveryRecord_data();
    void ingestIndexesEveryRecord();
    void ingestStoresTheModelLayout();
    void optimizerGroupParametersAreLayoutNames();
    void ingestStoresTheEmbeddedProgram();
    void reingestingIsANoOp_data();
    void reingestingIsANoOp();
    void secondTapeIsAdded();
    void embedCopiesEveryPayload();
    void corruptTapeIsRefusedAndCaseUnchanged_data();
    void corruptTapeIsRefusedAndCaseUnchanged();
    void incompleteTape_data();
    void incompleteTape();
    void nonTapeIsRefusedAndCaseUnchanged_data();
    void nonTapeIsRefusedAndCaseUnchanged();
    void addProgramFile_data();
    void addProgramFile();
    void newerCaseIsRefusedAndUnchanged_data();
    void newerCaseIsRefusedAndUnchanged();
    void readOnlyOpenMigratesAnOlderCaseUnlessItIsReadOnly();
    void tapesListsIngestedTapes();
    void readersWorkDuringAnIngest();
    void replayResultsSurviveAConcurrentIngest();
    void impossibleTransactionCountIsRefused_data();
    void impossibleTransactionCountIsRefused();

private:
    test::TempDir dir_;
    int cases_ = 0;
    std::string freshCase() { return dir_.file("case-" + std::to_string(++cases_) + ".zkaudit"); }
};

void TestCaseStore::ingestStoresTheTapeRow()
{
    const std::string tapePath = writeDemo(dir_.file("row.zkdv"));
    TapeSummary scanned;
    const LayoutVisitor layout = layoutOf(tapePath, &scanned);
    QCOMPARE(scanned.status, TapeStatus::Sealed);
    const std::vector<std::uint8_t> bytes = readAll(tapePath);

    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    IngestResult result = store.ingestTape(tapePath);
    QVERIFY(!result.alreadyPresent);
    QVERIFY(result.tapeId > 0);
    QCOMPARE(result.summary.status, TapeStatus::Sealed);

    Database& db = store.database();
    QCOMPARE(rows(db, "tapes"), std::int64_t(1));
    Statement row = db.prepare(
        "SELECT id, file_sha256, chain_head, path, size, status, format_major, format_minor, root_json, optimizer_contract,"
        " snapshot_interval, program_sha256, program_kind, record_count, transaction_count, snapshot_count, embedded, ingested_at"
        " FROM tapes");
    QVERIFY(row.step());
    QCOMPARE(row.int64(0), result.tapeId);
    QVERIFY(row.isNull(1));  // the file SHA-256 only when asked for
    QCOMPARE(row.text(2), toHex(scanned.chainHead));
    QCOMPARE(row.text(2), toHex(layout.records.back().digest));  // the seal's digest
    QVERIFY2(!row.text(3).empty() && row.text(3).front() == '/', row.text(3).c_str());
    QVERIFY2(contains(row.text(3), "row.zkdv"), row.text(3).c_str());
    QCOMPARE(row.int64(4), static_cast<std::int64_t>(bytes.size()));
    QCOMPARE(row.text(5), std::string("sealed"));
    QCOMPARE(row.int64(6), std::int64_t(1));
    QCOMPARE(row.int64(7), std::int64_t(tape::kMinorVersion));
    QCOMPARE(row.text(8), layout.rootPayload);
    QCOMPARE(row.text(9), std::string("SGD"));
    QCOMPARE(row.int64(10), std::int64_t(12));
    QCOMPARE(row.text(11), toHex(layout.root->programSha256));
    QCOMPARE(row.text(12), std::string("synthetic"));
    QCOMPARE(row.int64(13), static_cast<std::int64_t>(layout.records.size()));
    QCOMPARE(row.int64(13), std::int64_t(1 + 1 + 4 + 30 + 1));  // root, program, 4 snapshots (the last the final state), 30 transactions, seal
    QCOMPARE(row.int64(14), std::int64_t(30));
    QCOMPARE(row.int64(15), std::int64_t(4));
    QCOMPARE(row.int64(16), std::int64_t(0));
    QVERIFY2(QDateTime::fromString(QString::fromStdString(row.text(17)), Qt::ISODate).isValid(), row.text(17).c_str());
    QVERIFY2(row.text(17).back() == 'Z', row.text(17).c_str());
    QVERIFY(!row.step());
    QCOMPARE(rows(db, "payloads"), std::int64_t(0));  // not embedded

    // Asked for on the same tape again, the whole-file SHA-256 completes the row; nothing else changes.
    IngestOptions withSha256;
    withSha256.computeFileSha256 = true;
    const std::vector<std::int64_t> countsBefore = tableCounts(db);
    const IngestResult again = store.ingestTape(tapePath, withSha256);
    QVERIFY(again.alreadyPresent);
    QCOMPARE(again.tapeId, result.tapeId);
    QCOMPARE(tableCounts(db), countsBefore);
    Statement sha = db.prepare("SELECT file_sha256 FROM tapes WHERE id = ?1");
    sha.bind(1, result.tapeId);
    QVERIFY(sha.step());
    QCOMPARE(sha.text(0), toHex(Sha256::of(ByteSpan(bytes))));
    QCOMPARE(store.tape(result.tapeId)->fileSha256, toHex(Sha256::of(ByteSpan(bytes))));
}

void TestCaseStore::ingestStoresTheSortOrders()
{
    // The orders ingest stores are exactly SQLite's ORDER BY column, idx (the demo's learning
    // rate is constant: all ties, ordered by index).
    const std::string tapePath = writeDemo(dir_.file("orders.zkdv"));
    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const IngestResult result = store.ingestTape(tapePath);
    Database& db = store.database();
    QCOMPARE(count(db, "SELECT count(*) FROM transaction_orders WHERE tape_id = " + std::to_string(result.tapeId)), std::int64_t(3));
    for (const char* column : {"loss", "lr", "update_norm"}) {
        Statement stored = db.prepare("SELECT ascending FROM transaction_orders WHERE tape_id = ?1 AND column_name = ?2");
        stored.bind(1, result.tapeId).bind(2, column);
        QVERIFY(stored.step());
        const std::optional<std::vector<std::int64_t>> order = decodeTransactionOrder(stored.blob(0), 30);
        QVERIFY2(order, column);
        std::vector<std::int64_t> expected;
        Statement sorted = db.prepare(std::string("SELECT idx FROM transactions WHERE tape_id = ?1 ORDER BY ") + column + ", idx");
        sorted.bind(1, result.tapeId);
        while (sorted.step())
            expected.push_back(sorted.int64(0));
        QCOMPARE(*order, expected);
    }

    // The ordering itself, on values SQL orders in a particular way.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const std::vector<double> values = {2.5, nan, -inf, 0.0, -0.0, 2.5, inf, -1e-300, nan, 1e300, -7.0};
    Database& scratch = db;
    scratch.exec("CREATE TEMP TABLE values_(idx INTEGER, v REAL)");
    Statement insert = scratch.prepare("INSERT INTO values_ VALUES(?1, ?2)");
    TransactionOrder order;
    // Added out of index order, as nothing guarantees the order rows arrive in.
    for (std::size_t k = values.size(); k-- > 0;) {
        insert.bind(1, static_cast<std::int64_t>(k)).bind(2, values[k]).run();
        order.add(k, values[k]);
    }
    order.sort();
    std::vector<std::int64_t> expected;
    Statement sorted = scratch.prepare("SELECT idx FROM values_ ORDER BY v, idx");
    while (sorted.step())
        expected.push_back(sorted.int64(0));
    QCOMPARE(order.ascending(), expected);
    const auto blob = order.encode();
    QVERIFY(blob);
    QCOMPARE(decodeTransactionOrder(ByteSpan(blob->data(), blob->size()), values.size()), std::optional<std::vector<std::int64_t>>(expected));
    QVERIFY(!decodeTransactionOrder(ByteSpan(blob->data(), blob->size()), values.size() + 1));
    // Many entries, few distinct values (ties) and keys spread over every digit, added in a
    // shuffled order: the same order as sorting by (value, index) directly.
    std::mt19937_64 random(7);
    std::vector<std::pair<double, std::uint64_t>> reference;
    TransactionOrder large;
    std::vector<std::uint64_t> indexes(200000);
    std::iota(indexes.begin(), indexes.end(), std::uint64_t(0));
    std::shuffle(indexes.begin(), indexes.end(), random);
    for (std::uint64_t index : indexes) {
        const std::uint64_t draw = random();
        double value = draw % 5 == 0 ? double(draw % 7) : std::ldexp(double(draw % 1000003) - 500000.0, int(draw % 200) - 100);
        if (draw % 97 == 0)
            value = nan;
        large.add(index, value);
        reference.emplace_back(std::isnan(value) ? -inf : value, index);
    }
    std::sort(reference.begin(), reference.end(), [&](const auto& a, const auto& b) {
        // NaN (stored as -inf here) first, before a real -inf: none is drawn, so -inf is only NaN.
        return a.first < b.first || (a.first == b.first && a.second < b.second);
    });
    large.sort();
    const std::vector<std::int64_t> sortedLarge = large.ascending();
    QCOMPARE(sortedLarge.size(), reference.size());
    for (std::size_t i = 0; i < reference.size(); ++i)
        QCOMPARE(sortedLarge[i], static_cast<std::int64_t>(reference[i].second));

    TransactionOrder tooWide;
    tooWide.add(std::uint64_t(1) << 32, 1.0);
    QVERIFY(!tooWide.encode());
}

void TestCaseStore::ingestLeavesTheCaseInWalMode()
{
    // Ingest writes in WAL mode and leaves no rollback journal; with another connection
    // reading the case it ingests without waiting for it.
    const auto journalMode = [](Database& db) {
        Statement mode = db.prepare("PRAGMA journal_mode");
        return mode.step() ? mode.text(0) : std::string();
    };
    const std::string casePath = freshCase();
    const std::string first = writeDemo(dir_.file("wal-1.zkdv"));
    DemoSpec other;
    other.seed = 23;
    const std::string second = writeDemo(dir_.file("wal-2.zkdv"), other);
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        QVERIFY(!store.ingestTape(first).alreadyPresent);
        QCOMPARE(journalMode(store.database()), std::string("wal"));
        QVERIFY(!QFileInfo::exists(QString::fromStdString(casePath + "-journal")));
    }
    {
        CaseStore reader(casePath, CaseStore::Access::ReadOnly);
        Statement reading = reader.database().prepare("SELECT idx FROM transactions");
        QVERIFY(reading.step());  // a read transaction stays open
        {
            CaseStore store(casePath, CaseStore::Access::ReadWrite);
            QElapsedTimer timer;
            timer.start();
            QVERIFY(!store.ingestTape(second).alreadyPresent);
            QVERIFY2(timer.elapsed() < 4000, "ingest waited for the reader's lock");
            QCOMPARE(journalMode(store.database()), std::string("wal"));
            QCOMPARE(count(store.database(), "SELECT count(*) FROM tapes"), std::int64_t(2));
        }
        reading.reset();
        QCOMPARE(count(reader.database(), "SELECT count(*) FROM transactions"), std::int64_t(60));
    }

    // A case left in rollback mode (by an ingest interrupted there) is WAL again once opened
    // for writing.
    {
        Database db(casePath, Database::Mode::ReadWrite);
        QVERIFY(db.trySetJournalMode("delete"));
    }
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    QCOMPARE(journalMode(store.database()), std::string("wal"));
}

void TestCaseStore::ingestLeavesForeignKeysEnforced()
{
    // Ingest inserts with foreign keys off (its rows refer to the tape row it adds); the
    // connection must enforce them again afterwards, whether the ingest succeeded or not.
    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const auto enforced = [&] { return count(store.database(), "PRAGMA foreign_keys") == 1; };
    const std::string good = writeDemo(dir_.file("fk-good.zkdv"));
    const std::int64_t tapeId = store.ingestTape(good).tapeId;
    QVERIFY(enforced());
    std::vector<std::uint8_t> bytes = readAll(good);
    bytes[bytes.size() / 2] ^= 0x01;
    const std::string corrupt = dir_.file("fk-corrupt.zkdv");
    writeAll(corrupt, bytes, bytes.size());
    QVERIFY_THROWS_EXCEPTION(IngestError, store.ingestTape(corrupt));
    QVERIFY(enforced());
    QVERIFY_THROWS_EXCEPTION(DatabaseError, store.database().exec("INSERT INTO snapshots VALUES(12345, 0, 0, 0, 0, x'00')"));
    // Deleting the tape cascades to every row that refers to it.
    Statement remove = store.database().prepare("DELETE FROM tapes WHERE id = ?1");
    remove.bind(1, tapeId).run();
    QCOMPARE(count(store.database(), "SELECT count(*) FROM transactions"), std::int64_t(0));
    QCOMPARE(count(store.database(), "SELECT count(*) FROM snapshots"), std::int64_t(0));
    QCOMPARE(count(store.database(), "SELECT count(*) FROM transaction_orders"), std::int64_t(0));
}

void TestCaseStore::ingestIndexesEveryRecord_data()
{
    QTest::addColumn<int>("steps");
    QTest::addColumn<int>("interval");
    QTest::addColumn<double>("probability");
    QTest::addColumn<QList<int>>("expectedSnapshots");
    QTest::newRow("30 steps, some sampled") << 30 << 12 << 0.3 << QList<int>{0, 12, 24, 30};  // the last: the final state (tape format 2.4)
    QTest::newRow("24 steps, final snapshot") << 24 << 12 << 0.3 << QList<int>{0, 12, 24};
    QTest::newRow("every step sampled") << 7 << 3 << 1.0 << QList<int>{0, 3, 6, 7};
    QTest::newRow("nothing sampled") << 13 << 5 << 0.0 << QList<int>{0, 5, 10, 13};
}

void TestCaseStore::ingestIndexesEveryRecord()
{
    QFETCH(int, steps);
    QFETCH(int, interval);
    QFETCH(double, probability);
    QFETCH(QList<int>, expectedSnapshots);

    DemoSpec spec;
    spec.steps = static_cast<std::uint64_t>(steps);
    spec.snapshotInterval = interval;
    spec.updateCheck = probability;
    spec.stateCheck = probability;
    const std::string tapePath = writeDemo(dir_.file("index-" + std::string(QTest::currentDataTag()) + ".zkdv"), spec);
    const std::vector<std::uint8_t> bytes = readAll(tapePath);
    const LayoutVisitor layout = layoutOf(tapePath);
    QCOMPARE(layout.transactions.size(), static_cast<std::size_t>(steps));
    if (probability > 0.0 && probability < 1.0) {  // the sample must actually be mixed for the counts to mean something
        QVERIFY(layout.deltaCount() > 0 && layout.deltaCount() < steps);
        QVERIFY(layout.digestCount() > 0 && layout.digestCount() < steps);
    }

    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const std::int64_t id = store.ingestTape(tapePath).tapeId;
    Database& db = store.database();

    // Transactions: one row each, idx 0..N-1, located and digested exactly.
    QCOMPARE(count(db, "SELECT count(*) FROM transactions WHERE tape_id = " + std::to_string(id)), std::int64_t(steps));
    Statement t = db.prepare(
        "SELECT idx, segment, loss, lr, update_norm, max_update, fingerprints, has_deltas, has_state_digest, state_digest, wall_time_ns,"
        " record_index, record_offset, record_length, record_digest FROM transactions WHERE tape_id = ?1 ORDER BY idx");
    t.bind(1, id);
    std::int64_t expectedIdx = 0;
    while (t.step()) {
        QCOMPARE(t.int64(0), expectedIdx);
        const auto& seen = layout.transactions[static_cast<std::size_t>(expectedIdx)];
        const auto& record = layout.records[seen.recordIndex];
        QCOMPARE(t.int64(1), expectedIdx / interval);
        QCOMPARE(t.real(2), seen.loss);
        QVERIFY(seen.lr);
        QCOMPARE(t.real(3), *seen.lr);
        double sumSquares = 0.0, maxAbs = 0.0;
        for (std::size_t p = 0; p < seen.l2.size(); ++p) {
            sumSquares += seen.l2[p] * seen.l2[p];
            maxAbs = std::max(maxAbs, seen.maxAbs[p]);
        }
        QVERIFY2(std::abs(t.real(4) - std::sqrt(sumSquares)) <= 1e-12 * std::max(1.0, std::sqrt(sumSquares)),
                 qPrintable(QStringLiteral("update_norm %1 vs %2").arg(t.real(4)).arg(std::sqrt(sumSquares))));
        QCOMPARE(t.real(5), maxAbs);

        // Fingerprints: 16 bytes per parameter, (l2, max_abs) as little-endian float64.
        const std::vector<std::uint8_t> fingerprints = blobOf(t, 6);
        QCOMPARE(fingerprints.size(), 16 * layout.root->parameters.size());
        for (std::size_t p = 0; p < seen.l2.size(); ++p) {
            double l2 = 0, mx = 0;
            std::memcpy(&l2, fingerprints.data() + 16 * p, 8);
            std::memcpy(&mx, fingerprints.data() + 16 * p + 8, 8);
            QCOMPARE(l2, seen.l2[p]);
            QCOMPARE(mx, seen.maxAbs[p]);
        }
        QCOMPARE(t.int64(7), std::int64_t(seen.hasDeltas ? 1 : 0));
        QCOMPARE(t.int64(8), std::int64_t(seen.stateDigest ? 1 : 0));
        if (seen.stateDigest)
            QCOMPARE(blobOf(t, 9), bytesOf(*seen.stateDigest));
        else
            QVERIFY(t.isNull(9));
        QCOMPARE(t.int64(10), static_cast<std::int64_t>(seen.wallTimeNs));

        QCOMPARE(t.int64(11), static_cast<std::int64_t>(seen.recordIndex));
        const auto offset = static_cast<std::size_t>(t.int64(12));
        const auto length = static_cast<std::size_t>(t.int64(13));
        QCOMPARE(offset, static_cast<std::size_t>(record.offset));
        QCOMPARE(length, static_cast<std::size_t>(record.frameSize));
        QVERIFY(length > tape::kDigestSize && offset + length <= bytes.size());
        const std::vector<std::uint8_t> digest = blobOf(t, 14);
        QCOMPARE(digest.size(), std::size_t(32));
        QCOMPARE(bytesOf(Sha256::of(ByteSpan(bytes.data() + offset, length - tape::kDigestSize))), digest);
        QCOMPARE(std::vector<std::uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(offset + length - tape::kDigestSize),
                                           bytes.begin() + static_cast<std::ptrdiff_t>(offset + length)),
                 digest);
        QCOMPARE(readLittleEndian<std::uint32_t>(bytes.data() + offset), std::uint32_t(tape::RecordType::Transaction));
        ++expectedIdx;
    }
    QCOMPARE(expectedIdx, std::int64_t(steps));

    // Sampled checks: the case counts what a scan sees.
    QCOMPARE(count(db, "SELECT count(*) FROM transactions WHERE has_deltas"), std::int64_t(layout.deltaCount()));
    QCOMPARE(count(db, "SELECT count(*) FROM transactions WHERE has_state_digest"), std::int64_t(layout.digestCount()));
    if (probability == 1.0)
        QCOMPARE(layout.deltaCount(), steps);

    // Snapshots: one row per snapshot record, located and digested exactly.
    Statement s = db.prepare(
        "SELECT before_transaction, record_index, record_offset, record_length, record_digest FROM snapshots WHERE tape_id = ?1"
        " ORDER BY before_transaction");
    s.bind(1, id);
    QList<int> positions;
    while (s.step()) {
        positions.append(static_cast<int>(s.int64(0)));
        const auto& record = layout.records[static_cast<std::size_t>(s.int64(1))];
        QCOMPARE(record.type, std::uint32_t(tape::RecordType::Snapshot));
        QCOMPARE(static_cast<std::uint64_t>(s.int64(2)), record.offset);
        QCOMPARE(static_cast<std::uint64_t>(s.int64(3)), record.frameSize);
        const auto offset = static_cast<std::size_t>(record.offset);
        const auto length = static_cast<std::size_t>(record.frameSize);
        QCOMPARE(bytesOf(Sha256::of(ByteSpan(bytes.data() + offset, length - tape::kDigestSize))), blobOf(s, 4));
    }
    QCOMPARE(positions, expectedSnapshots);
}

void TestCaseStore::ingestStoresTheModelLayout()
{
    const std::string tapePath = writeDemo(dir_.file("layout.zkdv"));
    const LayoutVisitor layout = layoutOf(tapePath);
    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const std::int64_t id = store.ingestTape(tapePath).tapeId;
    Database& db = store.database();

    const RootRecord& root = *layout.root;
    QCOMPARE(count(db, "SELECT count(*) FROM tensors"), static_cast<std::int64_t>(root.parameters.size() + root.buffers.size()));
    Statement tensors = db.prepare("SELECT position, name, dtype, shape FROM tensors WHERE tape_id = ?1 AND kind = ?2 ORDER BY position");
    for (auto [kind, specs] : {std::pair{"parameter", &root.parameters}, std::pair{"buffer", &root.buffers}}) {
        tensors.reset();
        tensors.bind(1, id).bind(2, kind);
        std::size_t i = 0;
        while (tensors.step()) {
            QVERIFY(i < specs->size());
            QCOMPARE(tensors.int64(0), static_cast<std::int64_t>(i));
            QCOMPARE(tensors.text(1), (*specs)[i].name);
            QCOMPARE(tensors.text(2), std::string(dtypeName((*specs)[i].dtype)));
            QCOMPARE(parseJson(tensors.text(3)), QJsonValue(shapeArray((*specs)[i].shape)));
            ++i;
        }
        QCOMPARE(i, specs->size());
    }
    QVERIFY(!root.buffers.empty());  // the demo has buffers, so both kinds were checked

    Statement groups = db.prepare("SELECT group_index, options FROM optimizer_groups WHERE tape_id = ?1 ORDER BY group_index");
    groups.bind(1, id);
    std::size_t g = 0;
    while (groups.step()) {
        QVERIFY(g < root.optimizerGroups.size());
        QCOMPARE(groups.int64(0), static_cast<std::int64_t>(g));
        const QJsonValue options = parseJson(groups.text(1));
        QCOMPARE(options, parseJson(root.optimizerGroups[g].optionsJson));
        QCOMPARE(options.toObject().value(QStringLiteral("lr")).toDouble(), 0.05);
        ++g;
    }
    QCOMPARE(g, root.optimizerGroups.size());
    QVERIFY(g > 0);
}

// docs/case-schema.md: optimizer_groups.parameters is a "JSON array of parameter positions"
// (the model-layout positions of tensors.position).
void TestCaseStore::optimizerGroupParametersAreLayoutNames()
{
    const std::string tapePath = writeDemo(dir_.file("groups.zkdv"));
    const LayoutVisitor layout = layoutOf(tapePath);
    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const std::int64_t id = store.ingestTape(tapePath).tapeId;
    Statement groups = store.database().prepare("SELECT parameters FROM optimizer_groups WHERE tape_id = ?1 ORDER BY group_index");
    groups.bind(1, id);
    std::size_t g = 0;
    while (groups.step()) {
        QJsonArray expected;
        for (const std::string& name : layout.root->optimizerGroups[g].parameters)
            expected.append(QString::fromStdString(name));
        QCOMPARE(parseJson(groups.text(0)), QJsonValue(expected));
        ++g;
    }
    QCOMPARE(g, layout.root->optimizerGroups.size());
}

void TestCaseStore::ingestStoresTheEmbeddedProgram()
{
    const std::string tapePath = writeDemo(dir_.file("program.zkdv"));
    const LayoutVisitor layout = layoutOf(tapePath);
    QVERIFY(!layout.program.empty());
    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const std::int64_t id = store.ingestTape(tapePath).tapeId;
    Database& db = store.database();
    QCOMPARE(rows(db, "programs"), std::int64_t(1));
    Statement program = db.prepare("SELECT sha256, kind, size, source, tape_id, record_offset, content FROM programs");
    QVERIFY(program.step());
    QCOMPARE(program.text(0), toHex(layout.root->programSha256));
    QCOMPARE(program.text(0), toHex(Sha256::of(ByteSpan(layout.program))));
    QCOMPARE(program.text(1), std::string("synthetic"));
    QCOMPARE(program.int64(2), static_cast<std::int64_t>(layout.program.size()));
    QCOMPARE(program.text(3), std::string("embedded"));
    QCOMPARE(program.int64(4), id);
    QCOMPARE(static_cast<std::uint64_t>(program.int64(5)), layout.records[1].offset + tape::kFrameHeaderSize);
    QCOMPARE(blobOf(program, 6), layout.program);
    // record_offset points at the program's bytes inside the tape.
    const std::vector<std::uint8_t> bytes = readAll(tapePath);
    const auto at = static_cast<std::ptrdiff_t>(program.int64(5));
    QCOMPARE(std::vector<std::uint8_t>(bytes.begin() + at, bytes.begin() + at + static_cast<std::ptrdiff_t>(layout.program.size())),
             layout.program);
}

void TestCaseStore::reingestingIsANoOp_data()
{
    QTest::addColumn<bool>("fromCopy");
    QTest::addColumn<bool>("embedSecondTime");
    QTest::addColumn<bool>("reopen");
    QTest::newRow("same path") << false << false << false;
    QTest::newRow("same path, case reopened") << false << false << true;
    QTest::newRow("byte-identical copy elsewhere") << true << false << false;
    QTest::newRow("same path with --embed") << false << true << false;
}

void TestCaseStore::reingestingIsANoOp()
{
    QFETCH(bool, fromCopy);
    QFETCH(bool, embedSecondTime);
    QFETCH(bool, reopen);
    const std::string tag = QTest::currentDataTag();
    const std::string tapePath = writeDemo(dir_.file("again-" + tag + ".zkdv"));
    std::string secondPath = tapePath;
    if (fromCopy) {
        secondPath = dir_.file("again-copy-" + tag + ".zkdv");
        const std::vector<std::uint8_t> bytes = readAll(tapePath);
        writeAll(secondPath, bytes, bytes.size());
    }
    const std::string casePath = freshCase();
    auto store = std::make_unique<CaseStore>(casePath, CaseStore::Access::ReadWrite);
    const IngestResult first = store->ingestTape(tapePath);
    QVERIFY(!first.alreadyPresent);
    const std::vector<std::int64_t> countsBefore = tableCounts(store->database());
    const std::string rowBefore = tapesRow(store->database(), first.tapeId);
    const std::string dumpBefore = dumpCase(store->database());
    QVERIFY(contains(dumpBefore, toHex(first.summary.chainHead)));  // the dump really holds the rows
    if (reopen)
        store = std::make_unique<CaseStore>(casePath, CaseStore::Access::ReadWrite);

    IngestOptions options;
    options.embed = embedSecondTime;
    const IngestResult second = store->ingestTape(secondPath, options);
    QVERIFY(second.alreadyPresent);
    QCOMPARE(second.tapeId, first.tapeId);
    QCOMPARE(second.summary.status, TapeStatus::Sealed);
    QCOMPARE(tableCounts(store->database()), countsBefore);
    QCOMPARE(tapesRow(store->database(), first.tapeId), rowBefore);
    QCOMPARE(dumpCase(store->database()), dumpBefore);
}

void TestCaseStore::secondTapeIsAdded()
{
    DemoSpec other;
    other.seed = 11;
    const std::string firstPath = writeDemo(dir_.file("first.zkdv"));
    const std::string secondPath = writeDemo(dir_.file("second.zkdv"), other);
    QVERIFY(readAll(firstPath) != readAll(secondPath));

    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const IngestResult first = store.ingestTape(firstPath);
    const IngestResult second = store.ingestTape(secondPath);
    QVERIFY(!first.alreadyPresent);
    QVERIFY(!second.alreadyPresent);
    QVERIFY(second.tapeId != first.tapeId);
    Database& db = store.database();
    QCOMPARE(rows(db, "tapes"), std::int64_t(2));
    QCOMPARE(rows(db, "transactions"), std::int64_t(60));
    QCOMPARE(rows(db, "snapshots"), std::int64_t(8));  // 0, 12, 24 and the final state, 30, of each
    for (std::int64_t id : {first.tapeId, second.tapeId}) {
        QCOMPARE(count(db, "SELECT count(*) FROM transactions WHERE tape_id = " + std::to_string(id)), std::int64_t(30));
        QCOMPARE(count(db, "SELECT count(*) FROM tensors WHERE tape_id = " + std::to_string(id)), std::int64_t(4));
    }
    QCOMPARE(count(db, "SELECT count(DISTINCT chain_head) FROM tapes"), std::int64_t(2));
    QCOMPARE(count(db, "SELECT count(*) FROM transaction_orders"), std::int64_t(6));
    // Both demo tapes embed the same program: one row, still with its content.
    QCOMPARE(rows(db, "programs"), std::int64_t(1));
    QCOMPARE(count(db, "SELECT count(*) FROM programs WHERE content IS NOT NULL"), std::int64_t(1));
    const std::vector<CaseTape> tapes = store.tapes();
    QCOMPARE(tapes.size(), std::size_t(2));
    QVERIFY(tapes[0].programPresent && tapes[1].programPresent);
}

void TestCaseStore::embedCopiesEveryPayload()
{
    const std::string tapePath = writeDemo(dir_.file("embed.zkdv"));
    const LayoutVisitor layout = layoutOf(tapePath);
    const std::vector<std::uint8_t> bytes = readAll(tapePath);
    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    IngestOptions options;
    options.embed = true;
    const std::int64_t id = store.ingestTape(tapePath, options).tapeId;
    Database& db = store.database();
    QCOMPARE(count(db, "SELECT embedded FROM tapes WHERE id = " + std::to_string(id)), std::int64_t(1));
    QCOMPARE(rows(db, "payloads"), static_cast<std::int64_t>(layout.records.size()));
    Statement payloads = db.prepare("SELECT record_index, content FROM payloads WHERE tape_id = ?1 ORDER BY record_index");
    payloads.bind(1, id);
    std::size_t i = 0;
    while (payloads.step()) {
        QCOMPARE(payloads.int64(0), static_cast<std::int64_t>(i));
        const auto& record = layout.records[i];
        const auto begin = bytes.begin() + static_cast<std::ptrdiff_t>(record.offset + tape::kFrameHeaderSize);
        QVERIFY2(blobOf(payloads, 1) == std::vector<std::uint8_t>(begin, begin + static_cast<std::ptrdiff_t>(record.payloadSize)),
                 qPrintable(QStringLiteral("payload of record %1 differs from the tape").arg(i)));
        ++i;
    }
    QCOMPARE(i, layout.records.size());
    QCOMPARE(store.tapes().front().embedded, true);
}

void TestCaseStore::corruptTapeIsRefusedAndCaseUnchanged_data()
{
    QTest::addColumn<int>("transaction");
    QTest::addColumn<bool>("caseHoldsATape");
    QTest::addColumn<bool>("embed");
    QTest::newRow("first transaction, empty case") << 0 << false << false;
    QTest::newRow("middle transaction, case with a tape") << 13 << true << false;
    QTest::newRow("last transaction, case with a tape, embed") << 29 << true << true;
    QTest::newRow("last transaction, empty case, embed") << 29 << false << true;
}

void TestCaseStore::corruptTapeIsRefusedAndCaseUnchanged()
{
    QFETCH(int, transaction);
    QFETCH(bool, caseHoldsATape);
    QFETCH(bool, embed);
    const std::string tag = QTest::currentDataTag();
    const std::string goodPath = writeDemo(dir_.file("corrupt-good-" + tag + ".zkdv"));
    const LayoutVisitor layout = layoutOf(goodPath);
    const auto& record = layout.recordOfTransaction(static_cast<std::uint64_t>(transaction));
    std::vector<std::uint8_t> bytes = readAll(goodPath);
    bytes[record.offset + tape::kFrameHeaderSize + record.payloadSize / 2] ^= 0x10;
    const std::string corruptPath = dir_.file("corrupt-" + tag + ".zkdv");
    writeAll(corruptPath, bytes, bytes.size());

    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    if (caseHoldsATape) {
        DemoSpec other;
        other.seed = 99;
        store.ingestTape(writeDemo(dir_.file("corrupt-other-" + tag + ".zkdv"), other));
    }
    const std::vector<std::int64_t> countsBefore = tableCounts(store.database());
    const std::string dumpBefore = dumpCase(store.database());

    IngestOptions options;
    options.embed = embed;
    try {
        store.ingestTape(corruptPath, options);
        QFAIL("a corrupt tape was ingested");
    } catch (const IngestError& error) {
        const std::string message = error.what();
        QVERIFY2(contains(message, "record " + std::to_string(record.index) + " (transaction " + std::to_string(transaction) + ") at byte"),
                 message.c_str());
        QVERIFY2(contains(message, "corrupt"), message.c_str());
        QVERIFY(error.summary());
        QCOMPARE(error.summary()->status, TapeStatus::Corrupt);
        QCOMPARE(error.summary()->problem->recordIndex, record.index);
        QCOMPARE(error.summary()->transactionCount, static_cast<std::uint64_t>(transaction));
    }
    QCOMPARE(tableCounts(store.database()), countsBefore);
    QCOMPARE(dumpCase(store.database()), dumpBefore);
    // The case still accepts the intact tape afterwards.
    QVERIFY(!store.ingestTape(goodPath).alreadyPresent);
}

void TestCaseStore::incompleteTape_data()
{
    // Cut the tape `bytesInto` bytes into the record of transaction `transaction` (-1: the seal).
    QTest::addColumn<int>("transaction");
    QTest::addColumn<int>("bytesInto");
    QTest::addColumn<QString>("status");
    QTest::newRow("cut inside a payload") << 17 << 100 << QStringLiteral("truncated");
    QTest::newRow("cut inside a frame header") << 17 << 10 << QStringLiteral("truncated");
    QTest::newRow("one byte of a frame header") << 5 << 1 << QStringLiteral("truncated");
    QTest::newRow("cut inside the last digest") << 29 << -5 << QStringLiteral("truncated");
    QTest::newRow("cut on a record boundary") << 17 << 0 << QStringLiteral("unsealed");
    QTest::newRow("before a due snapshot") << 12 << -1000000 << QStringLiteral("unsealed");
    QTest::newRow("seal cut off") << -1 << 0 << QStringLiteral("unsealed");
}

void TestCaseStore::incompleteTape()
{
    QFETCH(int, transaction);
    QFETCH(int, bytesInto);
    QFETCH(QString, status);
    const std::string tag = QTest::currentDataTag();
    const std::string goodPath = writeDemo(dir_.file("whole-" + tag + ".zkdv"));
    const LayoutVisitor layout = layoutOf(goodPath);
    std::vector<std::uint8_t> bytes = readAll(goodPath);

    std::size_t cut = 0;
    if (transaction < 0) {
        cut = static_cast<std::size_t>(layout.records.back().offset);
    } else if (bytesInto == -1000000) {
        // Just before the snapshot that precedes `transaction`: after transaction-1.
        const auto& previous = layout.recordOfTransaction(static_cast<std::uint64_t>(transaction - 1));
        cut = static_cast<std::size_t>(previous.offset + previous.frameSize);
    } else {
        const auto& record = layout.recordOfTransaction(static_cast<std::uint64_t>(transaction));
        cut = static_cast<std::size_t>(bytesInto >= 0 ? record.offset + static_cast<std::uint64_t>(bytesInto)
                                                      : record.offset + record.frameSize - static_cast<std::uint64_t>(-bytesInto));
    }
    const std::uint64_t wholeTransactions = transaction < 0 ? layout.transactions.size() : static_cast<std::uint64_t>(transaction);
    std::uint64_t wholeRecords = 0, wholeSnapshots = 0;
    Digest lastWhole{};
    for (const auto& r : layout.records)
        if (r.offset + r.frameSize <= cut) {
            ++wholeRecords;
            lastWhole = r.digest;
            if (r.type == std::uint32_t(tape::RecordType::Snapshot))
                ++wholeSnapshots;
        }
    const std::string cutPath = dir_.file("cut-" + tag + ".zkdv");
    writeAll(cutPath, bytes, cut);
    bytes.resize(cut);

    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    const std::string dumpBefore = dumpCase(store.database());
    try {
        store.ingestTape(cutPath);
        QFAIL("an incomplete tape was ingested without allowIncomplete");
    } catch (const IngestError& error) {
        const std::string message = error.what();
        QVERIFY2(contains(message, status.toStdString()), message.c_str());
        QVERIFY2(contains(message, std::to_string(wholeTransactions) + " whole transactions"), message.c_str());
        QVERIFY(error.summary());
        QCOMPARE(QString::fromUtf8(tapeStatusName(error.summary()->status).data()), status);
    }
    QCOMPARE(dumpCase(store.database()), dumpBefore);

    IngestOptions options;
    options.allowIncomplete = true;
    const IngestResult result = store.ingestTape(cutPath, options);
    QVERIFY(!result.alreadyPresent);
    Database& db = store.database();
    Statement row = db.prepare(
        "SELECT status, transaction_count, snapshot_count, record_count, size, file_sha256, chain_head FROM tapes WHERE id = ?1");
    row.bind(1, result.tapeId);
    QVERIFY(row.step());
    QCOMPARE(QString::fromStdString(row.text(0)), status);
    QCOMPARE(static_cast<std::uint64_t>(row.int64(1)), wholeTransactions);
    QCOMPARE(static_cast<std::uint64_t>(row.int64(2)), wholeSnapshots);
    QCOMPARE(static_cast<std::uint64_t>(row.int64(3)), wholeRecords);
    QCOMPARE(static_cast<std::size_t>(row.int64(4)), cut);
    QVERIFY(row.isNull(5));
    QCOMPARE(row.text(6), toHex(lastWhole));
    QCOMPARE(count(db, "SELECT count(*) FROM transactions"), static_cast<std::int64_t>(wholeTransactions));
    QCOMPARE(count(db, "SELECT max(idx) + 1 FROM transactions"), static_cast<std::int64_t>(wholeTransactions));
    QCOMPARE(count(db, "SELECT count(*) FROM snapshots"), static_cast<std::int64_t>(wholeSnapshots));
}

void TestCaseStore::nonTapeIsRefusedAndCaseUnchanged_data()
{
    QTest::addColumn<QByteArray>("content");
    QTest::addColumn<QString>("expected");  // "not-a-tape", "ingest" (a tape cut short) or "io"
    QTest::newRow("text file") << QByteArray("hello, this is not a tape at all\n") << QStringLiteral("not-a-tape");
    QTest::newRow("wrong magic, long") << QByteArray(4096, 'Z') << QStringLiteral("not-a-tape");
    QTest::newRow("three bytes") << QByteArray("ABC") << QStringLiteral("not-a-tape");
    // The magic is there, so this is a tape cut inside its file header, not a foreign file.
    QTest::newRow("magic only") << QByteArray("ZKDVTAPE") << QStringLiteral("ingest");
    QTest::newRow("empty file") << QByteArray() << QStringLiteral("not-a-tape");
    QTest::newRow("sqlite file") << QByteArray("SQLite format 3\0", 16) + QByteArray(4080, '\0') << QStringLiteral("not-a-tape");
    QTest::newRow("missing file") << QByteArray("<missing>") << QStringLiteral("io");
}

void TestCaseStore::nonTapeIsRefusedAndCaseUnchanged()
{
    QFETCH(QByteArray, content);
    QFETCH(QString, expected);
    const std::string tag = QTest::currentDataTag();
    const std::string path = dir_.file("nontape-" + tag + ".bin");
    if (content != "<missing>")
        writeAll(path, std::vector<std::uint8_t>(content.begin(), content.end()), static_cast<std::size_t>(content.size()));

    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    store.ingestTape(writeDemo(dir_.file("nontape-good-" + tag + ".zkdv")));
    const std::string dumpBefore = dumpCase(store.database());
    QString thrown = QStringLiteral("nothing");
    std::string message;
    try {
        store.ingestTape(path);
    } catch (const NotATapeError& error) {
        thrown = QStringLiteral("not-a-tape");
        message = error.what();
    } catch (const IngestError& error) {
        thrown = QStringLiteral("ingest");
        message = error.what();
    } catch (const IoError& error) {
        thrown = QStringLiteral("io");
        message = error.what();
    } catch (const std::exception& error) {
        thrown = QStringLiteral("other: ") + QString::fromStdString(error.what());
    }
    QCOMPARE(thrown, expected);
    QVERIFY2(contains(message, path), message.c_str());
    QCOMPARE(dumpCase(store.database()), dumpBefore);
}

void TestCaseStore::addProgramFile_data()
{
    QTest::addColumn<QString>("file");  // "program": the demo's program bytes; otherwise random bytes
    QTest::addColumn<bool>("withTape");
    QTest::newRow("embedded program, case with the tape") << QStringLiteral("program") << true;
    QTest::newRow("random file, case with a tape") << QStringLiteral("random") << true;
    QTest::newRow("program, empty case") << QStringLiteral("program") << false;
}

void TestCaseStore::addProgramFile()
{
    QFETCH(QString, file);
    QFETCH(bool, withTape);
    const std::string tag = QTest::currentDataTag();
    const std::string tapePath = writeDemo(dir_.file("prog-" + tag + ".zkdv"));
    const LayoutVisitor layout = layoutOf(tapePath);
    QVERIFY(!layout.program.empty());
    std::vector<std::uint8_t> bytes = layout.program;
    if (file != QLatin1String("program")) {
        std::mt19937 random(42);
        bytes.resize(777);
        for (auto& b : bytes)
            b = static_cast<std::uint8_t>(random());
    }
    const std::string programPath = dir_.file("prog-" + tag + ".bin");
    writeAll(programPath, bytes, bytes.size());

    CaseStore store(freshCase(), CaseStore::Access::ReadWrite);
    std::int64_t id = 0;
    if (withTape)
        id = store.ingestTape(tapePath).tapeId;
    const std::string dumpBefore = dumpCase(store.database());
    const bool matches = withTape && file == QLatin1String("program");
    if (matches) {
        const ProgramFileResult result = store.addProgramFile(programPath);
        QVERIFY(result.alreadyPresent);
        QCOMPARE(result.sha256, toHex(layout.root->programSha256));
        QCOMPARE(result.matchingTapes, std::vector<std::int64_t>{id});
    } else {
        try {
            store.addProgramFile(programPath);
            QFAIL("a program file matching no tape was accepted");
        } catch (const Error& error) {
            const std::string message = error.what();
            QVERIFY2(contains(message, "matches no tape"), message.c_str());
            QVERIFY2(contains(message, toHex(Sha256::of(ByteSpan(bytes)))), message.c_str());
        }
    }
    QCOMPARE(dumpCase(store.database()), dumpBefore);
    if (withTape)
        QVERIFY(store.tapes().front().programPresent);
}

void TestCaseStore::newerCaseIsRefusedAndUnchanged_data()
{
    QTest::addColumn<bool>("readOnly");
    QTest::newRow("read-write") << false;
    QTest::newRow("read-only") << true;
}

void TestCaseStore::newerCaseIsRefusedAndUnchanged()
{
    QFETCH(bool, readOnly);
    const std::string casePath = freshCase();
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        store.ingestTape(writeDemo(dir_.file(std::string("newer-") + (readOnly ? "ro" : "rw") + ".zkdv")));
    }
    const int newer = CaseSchema::latestVersion() + 1;
    {
        Database db(casePath, Database::Mode::ReadWrite);
        db.setUserVersion(newer);
    }
    const std::vector<std::uint8_t> before = readAll(casePath);
    QVERIFY(!before.empty());
    try {
        CaseStore store(casePath, readOnly ? CaseStore::Access::ReadOnly : CaseStore::Access::ReadWrite);
        QFAIL("a case with a newer schema was opened");
    } catch (const Error& error) {
        const std::string message = error.what();
        QVERIFY2(contains(message, casePath), message.c_str());
        QVERIFY2(contains(message, "version " + std::to_string(newer)), message.c_str());
        QVERIFY2(contains(message, "up to " + std::to_string(CaseSchema::latestVersion())), message.c_str());
    }
    QVERIFY(readAll(casePath) == before);
    Database db(casePath, Database::Mode::ReadOnly);
    QCOMPARE(db.userVersion(), newer);
}

void TestCaseStore::readOnlyOpenMigratesAnOlderCaseUnlessItIsReadOnly()
{
    // Every reader opens a case the one way (CaseStore): an older case is migrated once when
    // the file can be written, and refused with what to do when it cannot.
    const std::string writable = dir_.file("v1-writable.zkaudit");
    std::filesystem::copy_file(ZKDV_TEST_DATA_DIR "/cases/v1.zkaudit", writable);
    {
        CaseStore store(writable, CaseStore::Access::ReadOnly);
        QVERIFY(store.migratedFromVersion() == std::optional<int>(1));
        QCOMPARE(store.tapes().size(), std::size_t(1));
    }
    {
        Database db(writable, Database::Mode::ReadOnly);
        QCOMPARE(db.userVersion(), CaseSchema::latestVersion());
    }
    QVERIFY(!CaseStore(writable, CaseStore::Access::ReadOnly).migratedFromVersion());

    const std::string readOnly = dir_.file("v1-read-only.zkaudit");
    std::filesystem::copy_file(ZKDV_TEST_DATA_DIR "/cases/v1.zkaudit", readOnly);
    std::filesystem::permissions(readOnly, std::filesystem::perms::owner_read | std::filesystem::perms::group_read |
                                               std::filesystem::perms::others_read);
    const std::vector<std::uint8_t> before = readAll(readOnly);
    try {
        CaseStore store(readOnly, CaseStore::Access::ReadOnly);
        QFAIL("a read-only case that needs a migration was opened");
    } catch (const SchemaUpgradeNeeded& error) {
        const std::string message = error.what();
        QVERIFY2(contains(message, readOnly) && contains(message, "schema version 1"), message.c_str());
        QVERIFY2(contains(message, "cannot be written (it has no write permission)"), message.c_str());
        QVERIFY2(contains(message, "make it writable, or open a writable copy"), message.c_str());
    }
    QVERIFY(readAll(readOnly) == before);
    std::filesystem::permissions(readOnly, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
}

void TestCaseStore::tapesListsIngestedTapes()
{
    const std::string tapePath = writeDemo(dir_.file("listed.zkdv"));
    TapeSummary scanned;
    const LayoutVisitor layout = layoutOf(tapePath, &scanned);
    const std::string casePath = freshCase();
    std::int64_t id = 0;
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        QVERIFY(store.tapes().empty());
        id = store.ingestTape(tapePath).tapeId;
    }
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    const std::vector<CaseTape> tapes = store.tapes();
    QCOMPARE(tapes.size(), std::size_t(1));
    const CaseTape& tape = tapes.front();
    QCOMPARE(tape.id, id);
    QVERIFY(tape.programPresent);
    QCOMPARE(tape.status, std::string("sealed"));
    QVERIFY(tape.fileSha256.empty());
    QCOMPARE(tape.chainHead, toHex(scanned.chainHead));
    QCOMPARE(tape.size, scanned.fileSize);
    QCOMPARE(tape.optimizerContract, std::string("SGD"));
    QCOMPARE(tape.programSha256, toHex(layout.root->programSha256));
    QCOMPARE(tape.programKind, std::string("synthetic"));
    QCOMPARE(tape.snapshotInterval, 12);
    QCOMPARE(tape.transactionCount, std::uint64_t(30));
    QCOMPARE(tape.snapshotCount, std::uint64_t(4));  // 0, 12, 24 and the final state
    QCOMPARE(tape.recordCount, static_cast<std::uint64_t>(layout.records.size()));
    QVERIFY(!tape.embedded);
    QCOMPARE(tape.rootJson, layout.rootPayload);
    QVERIFY2(contains(tape.producer, "demo"), tape.producer.c_str());
    const std::optional<CaseTape> byId = store.tape(id);
    QVERIFY(byId);
    QCOMPARE(byId->chainHead, tape.chainHead);
    QVERIFY(!store.tape(id + 1000));
}

namespace {

// Calls `action` once, from inside the ingest, when the scan has passed `fraction` of the tape.
class ProgressTrigger : public ProgressSink {
public:
    ProgressTrigger(double fraction, std::function<void()> action) : fraction_(fraction), action_(std::move(action)) {}
    void report(std::uint64_t done, std::uint64_t total, std::string_view) override
    {
        if (!fired_ && total > 0 && static_cast<double>(done) >= fraction_ * static_cast<double>(total)) {
            fired_ = true;
            action_();
        }
    }
    bool fired() const { return fired_; }

private:
    double fraction_;
    std::function<void()> action_;
    bool fired_ = false;
};

TransactionOutcome exactOutcome(std::uint64_t index)
{
    TransactionOutcome outcome;
    outcome.index = index;
    outcome.detail = "replayed bit for bit";
    TensorComparison comparison;
    comparison.tensor = "loss";
    comparison.slot = "loss";
    comparison.metrics.bitwiseEqual = true;
    outcome.comparisons.push_back(comparison);
    return outcome;
}

}  // namespace

void TestCaseStore::readersWorkDuringAnIngest()
{
    // Half-way through a large ingest (its page cache long spilled to the file), a second
    // connection reads the case at once: the tapes before it, not the one being written.
    DemoSpec spec;
    spec.steps = 120000;
    const std::string large = writeDemo(dir_.file("read-during-large.zkdv"), spec);
    const std::string small = writeDemo(dir_.file("read-during-small.zkdv"));
    const std::string casePath = freshCase();
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(small);

    std::string failure;
    std::int64_t tapesSeen = -1;
    ProgressTrigger halfWay(0.5, [&] {
        try {
            CaseStore reader(casePath, CaseStore::Access::ReadOnly);
            reader.database().setBusyTimeout(500);
            tapesSeen = static_cast<std::int64_t>(reader.tapes().size());
        } catch (const std::exception& error) {
            failure = error.what();
        }
    });
    IngestOptions options;
    options.progress = &halfWay;
    store.ingestTape(large, options);
    QVERIFY(halfWay.fired());
    QVERIFY2(failure.empty(), failure.c_str());
    QCOMPARE(tapesSeen, std::int64_t(1));
    QCOMPARE(count(store.database(), "SELECT count(*) FROM tapes"), std::int64_t(2));
}

void TestCaseStore::replayResultsSurviveAConcurrentIngest()
{
    // A replay storing results while another connection ingests a tape (holding the write lock
    // for the whole tape) keeps them and stores them once the lock is free: nothing is lost
    // and nothing fails.
    DemoSpec spec;
    spec.steps = 40000;
    const std::string large = writeDemo(dir_.file("replay-during-large.zkdv"), spec);
    const std::string small = writeDemo(dir_.file("replay-during-small.zkdv"));
    const std::string casePath = freshCase();
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    const std::int64_t tapeId = store.ingestTape(small).tapeId;

    CaseStore replayCase(casePath, CaseStore::Access::ReadWrite);
    ReplayStore replay(replayCase.database());
    ReplayRunInfo info;
    info.tapeId = tapeId;
    info.device = "cpu";
    info.selection = "all";
    const std::int64_t runId = replay.beginRun(info);

    std::string failure;
    std::size_t pendingMidway = 0;
    ProgressTrigger halfWay(0.5, [&] {
        try {
            for (std::uint64_t batch = 0; batch < 3; ++batch) {
                std::vector<TransactionOutcome> outcomes;
                for (std::uint64_t i = 0; i < 10; ++i)
                    outcomes.push_back(exactOutcome(batch * 10 + i));
                replay.storeOutcomes(runId, outcomes);
            }
            pendingMidway = replay.pendingOutcomes();
        } catch (const std::exception& error) {
            failure = error.what();
        }
    });
    IngestOptions options;
    options.progress = &halfWay;
    store.ingestTape(large, options);
    QVERIFY(halfWay.fired());
    QVERIFY2(failure.empty(), failure.c_str());
    QCOMPARE(pendingMidway, std::size_t(30));  // the ingest held the lock: kept, not failed

    replay.finishRun(runId, RunStatus::Finished, "");
    QCOMPARE(replay.pendingOutcomes(), std::size_t(0));
    const std::vector<StoredReplayRun> runs = replay.runs(tapeId);
    QCOMPARE(runs.size(), std::size_t(1));
    QCOMPARE(runs.front().status, RunStatus::Finished);
    QCOMPARE(runs.front().replayed, std::uint64_t(30));
    QCOMPARE(runs.front().exact, std::uint64_t(30));
    QCOMPARE(count(store.database(), "SELECT count(*) FROM metrics"), std::int64_t(30));
}

void TestCaseStore::impossibleTransactionCountIsRefused_data()
{
    QTest::addColumn<qint64>("claimed");
    QTest::addColumn<bool>("rowMissing");  // found only where every row is read (the replay)
    QTest::newRow("huge") << qint64(1000000000000000000) << false;
    QTest::newRow("negative") << qint64(-5) << false;
    QTest::newRow("one too many") << qint64(31) << false;
    QTest::newRow("one too few") << qint64(29) << false;
    QTest::newRow("a row missing in the middle") << qint64(30) << true;
}

void TestCaseStore::impossibleTransactionCountIsRefused()
{
    // A case someone edited (or damaged) claims a transaction count its rows do not have;
    // everything sized from it (the replay's selection, the transaction table) would allocate
    // for it. The count is checked against the rows wherever it is read.
    QFETCH(qint64, claimed);
    QFETCH(bool, rowMissing);
    const std::string casePath = freshCase();
    std::int64_t tapeId = 0;
    {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        tapeId = store.ingestTape(writeDemo(dir_.file("claims.zkdv"))).tapeId;
        Statement edit = store.database().prepare("UPDATE tapes SET transaction_count = ?1 WHERE id = ?2");
        edit.bind(1, static_cast<std::int64_t>(claimed)).bind(2, tapeId).run();
        if (rowMissing)
            store.database().exec("DELETE FROM transactions WHERE idx = 15");
    }
    CaseStore store(casePath, CaseStore::Access::ReadOnly);
    const std::string expected = "tape " + std::to_string(tapeId) + " of case " + casePath + " claims " + std::to_string(claimed) +
                                 " transactions, but ";
    for (int reader = rowMissing ? 2 : 0; reader < 3; ++reader) {
        std::string message;
        try {
            if (reader == 0)
                store.tapes();
            else if (reader == 1)
                store.tape(tapeId);
            else
                ReplayStore(store.database()).selectionInput(tapeId, true);
        } catch (const Error& error) {
            message = error.what();
        }
        QVERIFY2(contains(message, expected), message.c_str());
    }
}

QTEST_GUILESS_MAIN(TestCaseStore)
#include "test_case_store.moc"
