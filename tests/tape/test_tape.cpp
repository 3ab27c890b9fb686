// Tape writer and reader: round trips, exhaustive damage, truncation, record order.

#include <QtTest>

#include <algorithm>
#include <cstring>
#include <random>

#include <nlohmann/json.hpp>

#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/sampling_schedule.h"
#include "zkdv/tape/scalar_value.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tape/state_digest.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/tape_writer.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/huge_page_allocator.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/sampling_generator.h"

using namespace zkdv;
using test::readAll;
using test::writeAll;

namespace {

// Remembers where every record lies and what the visitor saw.
struct RecordingVisitor : TapeVisitor {
    std::vector<RecordLocation> records;
    std::vector<std::uint64_t> transactionIndexes;
    std::vector<double> losses;
    std::vector<std::vector<std::uint8_t>> batchBytes;  // of the last transaction
    std::vector<std::string> batchDtypes;
    std::vector<std::vector<double>> l2;
    std::vector<bool> hasDeltas;
    std::vector<std::optional<Digest>> stateDigests;
    std::vector<std::uint64_t> snapshotPositions;
    std::vector<std::vector<std::string>> snapshotNames;
    std::vector<std::uint8_t> program;
    std::optional<RootRecord> root;
    bool sealSeen = false;

    void keep(const RecordLocation& location)
    {
        RecordLocation copy = location;
        copy.payload = ByteSpan();
        records.push_back(copy);
    }
    void onRoot(const RootRecord& r, const RecordLocation& l) override
    {
        root = r;
        keep(l);
    }
    void onProgram(const RecordLocation& l) override
    {
        program.assign(l.payload.begin(), l.payload.end());
        keep(l);
    }
    void onSnapshot(const SnapshotRecord& s, const RecordLocation& l) override
    {
        snapshotPositions.push_back(s.beforeTransaction);
        std::vector<std::string> names;
        for (auto* list : {&s.parameters, &s.buffers, &s.stateSlots})
            for (const TensorView* t : *list)
                names.push_back(t->name);
        snapshotNames.push_back(names);
        keep(l);
    }
    void onTransaction(const TransactionRecord& t, const RecordLocation& l) override
    {
        transactionIndexes.push_back(t.index);
        losses.push_back(t.loss);
        batchBytes.clear();
        batchDtypes.clear();
        for (const TensorView* b : t.batch) {
            batchBytes.emplace_back(b->data.begin(), b->data.end());
            batchDtypes.emplace_back(dtypeName(b->dtype));
        }
        l2.push_back(t.updateL2);
        hasDeltas.push_back(!t.deltas.empty());
        stateDigests.push_back(t.stateDigest);
        keep(l);
    }
    void onSeal(const SealRecord&, const RecordLocation& l) override
    {
        sealSeen = true;
        keep(l);
    }
};

RootRecord smallRoot(const std::string& programBytes)
{
    RootRecord root;
    root.producerName = "test";
    root.producerVersion = "1";
    root.torchVersion = "none";
    root.parameters = {{"layer.weight", {2, 3}, DType::F32}, {"layer.bias", {2}, DType::F32}};
    root.buffers = {{"count", {}, DType::I64}};
    root.optimizerContract = "SGD";
    root.optimizerGroups = {{{"layer.weight"}, R"({"lr":0.1})"}, {{"layer.bias"}, R"({"lr":0.2})"}};
    root.programSha256 = Sha256::of(ByteSpan(std::string_view(programBytes)));
    root.snapshotInterval = 2;
    root.metadataJson = R"({"note":"ünïcode ✓"})";
    return root;
}

// Writes a snapshot of a state whose values are derived from `k`.
void writeSnapshot(TapeWriter& writer, std::uint64_t k)
{
    static std::vector<float> weight(6), bias(2);
    static std::int64_t count;
    for (std::size_t i = 0; i < weight.size(); ++i)
        weight[i] = static_cast<float>(k) + 0.5f * static_cast<float>(i);
    bias = {static_cast<float>(k), -static_cast<float>(k)};
    count = static_cast<std::int64_t>(k);
    SafetensorsBuilder blob;
    blob.setMetadata("zkdv.record", "snapshot");
    blob.setMetadata("before_transaction", std::to_string(k));
    blob.add(parameterTensorName("layer.weight"), DType::F32, {2, 3}, ByteSpan(weight.data(), 24));
    blob.add(parameterTensorName("layer.bias"), DType::F32, {2}, ByteSpan(bias.data(), 8));
    blob.add(bufferTensorName("count"), DType::I64, {}, ByteSpan(&count, 8));
    if (k > 0) {
        blob.add(stateTensorName("layer.weight", "momentum_buffer"), DType::F32, {2, 3}, ByteSpan(weight.data(), 24));
        blob.add(stateTensorName("layer.bias", "momentum_buffer"), DType::F32, {2}, ByteSpan(bias.data(), 8));
    }
    std::vector<std::uint8_t> header;
    writer.append(tape::RecordType::Snapshot, blob.pieces(header));
}

}  // namespace

class TestTape : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void roundTripEveryRecordTypeAndDtype_data();
    void roundTripEveryRecordTypeAndDtype();
    void stateDigestFollowsTheSpec();
    void everySingleByteFlipIsDetectedAndLocated();
    void problemNamesTheTransactionAtFault();
    void everyTruncationIsReportedNeverComplete();
    void removedReorderedOrInsertedRecordsBreakTheChain();
    void recordOrderIsEnforced();
    void finalSnapshotEndsEveryTape_data();
    void finalSnapshotEndsEveryTape();
    void unknownRecordTypes();
    void notATapeAndUnsupportedVersion();
    void writerRefusesExistingPathWithoutOverwrite();
    void bytesAfterTheSealAreCorruption();
    void fileSha256MatchesAStraightHash();
    void hugePageBuffersHoldWhatIsWritten();
    void sampledChecksFollowTheChainBoundDraws();
    void rootRefusesWhatTheSpecForbids_data();
    void rootRefusesWhatTheSpecForbids();
    void numericEnvironmentRoundTripsAndSaysWhatDiffers();
    void malformedNumericsAreRefused_data();
    void malformedNumericsAreRefused();

private:
    test::TempDir dir_;
};

void TestTape::roundTripEveryRecordTypeAndDtype_data()
{
    QTest::addColumn<int>("lossDtype");
    QTest::newRow("F32 loss") << static_cast<int>(DType::F32);
    QTest::newRow("F64 loss") << static_cast<int>(DType::F64);
    QTest::newRow("F16 loss") << static_cast<int>(DType::F16);
    QTest::newRow("BF16 loss") << static_cast<int>(DType::BF16);
}

void TestTape::roundTripEveryRecordTypeAndDtype()
{
    QFETCH(int, lossDtype);
    const DType lossType = static_cast<DType>(lossDtype);
    const std::string path = dir_.file("roundtrip-" + std::to_string(lossDtype) + ".zkdv");
    const std::string program = "program bytes \x01\x02\x00 end";
    RootRecord root = smallRoot(program);
    root.updateCheckProbability = 0.5;
    root.stateCheckProbability = 0.5;
    std::vector<bool> expectedDeltas, expectedDigests;

    // One batch tensor of every dtype, with bytes that differ per transaction.
    const std::vector<DType> dtypes = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                                       DType::I32, DType::I16, DType::I8, DType::U8, DType::Bool};
    std::vector<std::vector<std::uint8_t>> lastBatch;
    std::vector<double> expectedLosses;
    std::vector<Digest> stateDigests;
    // The draws are keyed by the chain (spec 5.2), so which transactions carry checks depends
    // on every byte written: the first seed from 3 on whose draws give both kinds of
    // transaction for both checks is used, so the round trip covers records with and without.
    auto mixed = [](const std::vector<bool>& drawn) {
        const auto n = std::count(drawn.begin(), drawn.end(), true);
        return n > 0 && n < static_cast<long>(drawn.size());
    };
    for (std::uint64_t seed = 3; seed < 67 && !(mixed(expectedDeltas) && mixed(expectedDigests)); ++seed) {
        root.samplingSeed = seed;
        SamplingSchedule sampling(root);
        expectedDeltas.clear();
        expectedDigests.clear();
        lastBatch.clear();
        expectedLosses.clear();
        stateDigests.clear();
        TapeWriter writer(path, TapeWriter::OpenMode::Overwrite);
        std::string rootJson = root.toJson();
        Digest anchor = writer.append(tape::RecordType::Root, ByteSpan(std::string_view(rootJson)));
        writer.append(tape::RecordType::Program, ByteSpan(std::string_view(program)));
        for (std::uint64_t t = 0; t < 5; ++t) {
            const SampledChecks checks = sampling.next(anchor);
            expectedDeltas.push_back(checks.update);
            expectedDigests.push_back(checks.state);
            if (t % 2 == 0)
                writeSnapshot(writer, t);
            TransactionRecordBuilder record(t, 1000 + t);
            // Loss values exactly representable in every float dtype.
            double lossValue = 2.0 - 0.25 * static_cast<double>(t);
            std::vector<std::uint8_t> lossBytes(8);
            if (lossType == DType::F64)
                std::memcpy(lossBytes.data(), &lossValue, 8);
            else if (lossType == DType::F32) {
                float f = static_cast<float>(lossValue);
                std::memcpy(lossBytes.data(), &f, 4);
            } else if (lossType == DType::BF16) {
                float f = static_cast<float>(lossValue);
                std::uint32_t bits;
                std::memcpy(&bits, &f, 4);
                writeLittleEndian<std::uint16_t>(lossBytes.data(), static_cast<std::uint16_t>(bits >> 16));
            } else {  // F16: 2.0 - 0.25t for t < 5 has an exact half encoding
                std::uint16_t half = 0;
                for (std::uint32_t candidate = 0; candidate < 0x7c00; ++candidate)
                    if (halfToFloat(static_cast<std::uint16_t>(candidate)) == static_cast<float>(lossValue)) {
                        half = static_cast<std::uint16_t>(candidate);
                        break;
                    }
                writeLittleEndian<std::uint16_t>(lossBytes.data(), half);
            }
            lossBytes.resize(dtypeSize(lossType));
            record.setLoss(lossType, ByteSpan(lossBytes));
            expectedLosses.push_back(lossValue);

            lastBatch.clear();
            for (std::size_t d = 0; d < dtypes.size(); ++d) {
                std::vector<std::uint8_t> bytes(3 * dtypeSize(dtypes[d]));
                for (std::size_t b = 0; b < bytes.size(); ++b)
                    bytes[b] = dtypes[d] == DType::Bool ? static_cast<std::uint8_t>((b + t) % 2) : static_cast<std::uint8_t>(b * 7 + t + d);
                lastBatch.push_back(bytes);
            }
            for (std::size_t d = 0; d < dtypes.size(); ++d)
                record.addBatchTensor(dtypes[d], {3}, ByteSpan(lastBatch[d]));
            record.setOptimizerValue("lr", {0.1, 0.2});
            record.setUpdateFingerprints({0.5 * static_cast<double>(t), 1.0}, {0.25, 0.125});
            std::vector<float> deltaWeight(6, -0.5f), deltaBias(2, 0.25f);
            if (checks.update) {
                record.addDelta("layer.weight", DType::F32, {2, 3}, ByteSpan(deltaWeight.data(), 24));
                record.addDelta("layer.bias", DType::F32, {2}, ByteSpan(deltaBias.data(), 8));
            }
            Digest digest = Sha256::of(ByteSpan(std::string_view("state " + std::to_string(t))));
            stateDigests.push_back(digest);
            if (checks.state)
                record.setStateDigest(digest);
            SafetensorsBuilder blob = record.blob();
            std::vector<std::uint8_t> header;
            anchor = writer.append(tape::RecordType::Transaction, blob.pieces(header));
        }
        writeSnapshot(writer, 5);  // the final state (spec 2.4, since 1.5)
        writer.seal();
    }

    RecordingVisitor visitor;
    TapeSummary summary = scanTape(path, &visitor);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "not sealed");
    QCOMPARE(summary.transactionCount, std::uint64_t(5));
    QCOMPARE(summary.snapshotCount, std::uint64_t(4));
    QCOMPARE(summary.recordCount, std::uint64_t(2 + 5 + 4 + 1));
    QVERIFY(visitor.sealSeen);
    QVERIFY(visitor.root);
    QCOMPARE(visitor.root->toJson(), root.toJson());
    QCOMPARE(visitor.root->metadataJson, root.metadataJson);
    QCOMPARE(std::string(visitor.program.begin(), visitor.program.end()), program);
    QCOMPARE(visitor.transactionIndexes, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
    QCOMPARE(visitor.losses, expectedLosses);
    QCOMPARE(visitor.batchBytes, lastBatch);
    QCOMPARE(visitor.batchDtypes.size(), dtypes.size());
    for (std::size_t d = 0; d < dtypes.size(); ++d)
        QCOMPARE(visitor.batchDtypes[d], std::string(dtypeName(dtypes[d])));
    QCOMPARE(visitor.l2[4], (std::vector<double>{2.0, 1.0}));
    QCOMPARE(visitor.hasDeltas, expectedDeltas);
    // Both kinds of transaction occur, so the round trip covers records with and without checks.
    const auto deltaRecords = std::count(expectedDeltas.begin(), expectedDeltas.end(), true);
    const auto digestRecords = std::count(expectedDigests.begin(), expectedDigests.end(), true);
    QVERIFY(deltaRecords > 0 && deltaRecords < 5);
    QVERIFY(digestRecords > 0 && digestRecords < 5);
    for (std::size_t t = 0; t < 5; ++t) {
        QCOMPARE(visitor.stateDigests[t].has_value(), bool(expectedDigests[t]));
        if (expectedDigests[t])
            QVERIFY(*visitor.stateDigests[t] == stateDigests[t]);
    }
    QCOMPARE(visitor.snapshotPositions, (std::vector<std::uint64_t>{0, 2, 4, 5}));
    QCOMPARE(visitor.snapshotNames[1].back(), std::string("state/layer.bias/momentum_buffer"));
    QCOMPARE(summary.chainHead, visitor.records.back().digest);
}

void TestTape::stateDigestFollowsTheSpec()
{
    // name NUL dtype NUL u32 rank, i64 dims, u64 byte length, data — built by hand here.
    const float values[2] = {1.0f, -2.0f};
    StateDigest digest;
    digest.add("param/w", DType::F32, {2}, ByteSpan(values, sizeof values));
    std::vector<std::uint8_t> manual;
    for (char c : std::string("param/w"))
        manual.push_back(static_cast<std::uint8_t>(c));
    manual.push_back(0);
    for (char c : std::string("F32"))
        manual.push_back(static_cast<std::uint8_t>(c));
    manual.push_back(0);
    std::uint8_t number[8];
    writeLittleEndian<std::uint32_t>(number, 1);
    manual.insert(manual.end(), number, number + 4);
    writeLittleEndian<std::int64_t>(number, 2);
    manual.insert(manual.end(), number, number + 8);
    writeLittleEndian<std::uint64_t>(number, 8);
    manual.insert(manual.end(), number, number + 8);
    const auto* raw = reinterpret_cast<const std::uint8_t*>(values);
    manual.insert(manual.end(), raw, raw + 8);
    QCOMPARE(toHex(digest.finish()), toHex(Sha256::of(ByteSpan(manual))));
}

namespace {
std::string smallDemoTape(const std::string& path)
{
    SyntheticDemoOptions options;
    options.steps = 3;
    options.batchSize = 2;
    options.features = 2;
    options.classes = 2;
    options.snapshotInterval = 2;
    options.updateCheckProbability = 0.5;
    options.stateCheckProbability = 0.5;
    options.overwrite = true;
    writeSyntheticDemoTape(path, options);
    return path;
}
}  // namespace

void TestTape::everySingleByteFlipIsDetectedAndLocated()
{
    const std::string original = smallDemoTape(dir_.file("flip-original.zkdv"));
    RecordingVisitor layout;
    QVERIFY(scanTape(original, &layout).status == TapeStatus::Sealed);
    const std::vector<std::uint8_t> bytes = readAll(original);
    auto recordAt = [&](std::uint64_t offset) -> std::int64_t {
        for (const RecordLocation& r : layout.records)
            if (offset >= r.offset && offset < r.offset + r.frameSize)
                return static_cast<std::int64_t>(r.index);
        return -1;
    };

    const std::string damaged = dir_.file("flip.zkdv");
    ScanOptions options;
    options.hashThreads = 1;
    int checked = 0;
    for (std::size_t offset = 0; offset < bytes.size(); ++offset) {
        std::vector<std::uint8_t> copy = bytes;
        copy[offset] ^= static_cast<std::uint8_t>(1u << (offset % 8));
        writeAll(damaged, copy, copy.size());
        try {
            TapeSummary summary = scanTape(damaged, nullptr, options);
            QVERIFY2(summary.status != TapeStatus::Sealed, qPrintable(QStringLiteral("flip at byte %1 went unnoticed").arg(offset)));
            QVERIFY2(summary.problem, qPrintable(QStringLiteral("flip at byte %1 has no problem").arg(offset)));
            const std::int64_t expected = offset < tape::kFileHeaderSize ? 0 : recordAt(offset);
            QVERIFY2(static_cast<std::int64_t>(summary.problem->recordIndex) == expected,
                     qPrintable(QStringLiteral("flip at byte %1 (record %2) reported as %3").arg(offset).arg(expected).arg(
                         QString::fromStdString(summary.problem->describe()))));
            if (offset >= tape::kFileHeaderSize) {
                const RecordLocation& record = layout.records[static_cast<std::size_t>(expected)];
                QVERIFY(summary.problem->byteOffset >= record.offset && summary.problem->byteOffset < record.offset + record.frameSize);
                // A flip in frame bytes 0-19 fails the header check, which then vouches for no type.
                const TapeProblem& problem = *summary.problem;
                const QString where = QStringLiteral("flip at byte %1: %2").arg(offset).arg(QString::fromStdString(problem.describe()));
                QVERIFY2(problem.frameOffset == record.offset, qPrintable(where));
                if (offset - record.offset < 20) {
                    QVERIFY2(!problem.recordType && !problem.transactionIndex, qPrintable(where));
                } else {
                    QVERIFY2(problem.recordType == record.type, qPrintable(where));
                    const auto before = static_cast<std::uint64_t>(
                        std::count_if(layout.records.begin(), layout.records.begin() + expected, [](const RecordLocation& r) {
                            return r.type == static_cast<std::uint32_t>(tape::RecordType::Transaction);
                        }));
                    const bool transaction = record.type == static_cast<std::uint32_t>(tape::RecordType::Transaction);
                    QVERIFY2(transaction ? problem.transactionIndex == before : !problem.transactionIndex, qPrintable(where));
                }
            }
        } catch (const NotATapeError& error) {
            QVERIFY2(offset < 10, qPrintable(QStringLiteral("flip at byte %1 called not a tape").arg(offset)));
            QCOMPARE(error.offset().value_or(offset + 1) <= offset, true);
        }
        ++checked;
    }
    QCOMPARE(checked, static_cast<int>(bytes.size()));
}

// The auditor knows transactions by their index, not by record numbers: a damaged
// transaction's finding names it, unless its header check failed (then its type is unknown).
void TestTape::problemNamesTheTransactionAtFault()
{
    const std::string original = smallDemoTape(dir_.file("named-original.zkdv"));
    RecordingVisitor layout;
    QVERIFY(scanTape(original, &layout).status == TapeStatus::Sealed);
    // The second transaction: records before it include the root, the program and snapshots.
    std::uint64_t transactions = 0;
    const RecordLocation* second = nullptr;
    for (const RecordLocation& record : layout.records)
        if (record.type == static_cast<std::uint32_t>(tape::RecordType::Transaction) && transactions++ == 1)
            second = &record;
    QVERIFY(second && second->index > 1);
    const std::vector<std::uint8_t> bytes = readAll(original);
    const std::string damaged = dir_.file("named.zkdv");

    std::vector<std::uint8_t> payloadFlipped = bytes;
    payloadFlipped[second->offset + tape::kFrameHeaderSize + 100] ^= 0x10;
    writeAll(damaged, payloadFlipped);
    TapeSummary summary = scanTape(damaged);
    QVERIFY(summary.problem);
    QCOMPARE(summary.problem->transactionIndex, std::optional<std::uint64_t>(1));
    QCOMPARE(summary.problem->recordType, std::optional<std::uint32_t>(static_cast<std::uint32_t>(tape::RecordType::Transaction)));
    QCOMPARE(summary.problem->frameOffset, std::optional<std::uint64_t>(second->offset));
    const std::string named = "record " + std::to_string(second->index) + " (transaction 1) at byte ";
    QVERIFY2(summary.problem->describe().rfind(named, 0) == 0, summary.problem->describe().c_str());

    std::vector<std::uint8_t> checkDamaged = bytes;
    checkDamaged[second->offset + 16] ^= 0x01;  // the header check itself
    writeAll(damaged, checkDamaged);
    summary = scanTape(damaged);
    QVERIFY(summary.problem);
    QVERIFY(!summary.problem->recordType && !summary.problem->transactionIndex);
    QCOMPARE(summary.problem->frameOffset, std::optional<std::uint64_t>(second->offset));
    QVERIFY2(summary.problem->describe().rfind("record " + std::to_string(second->index) + " at byte ", 0) == 0,
             summary.problem->describe().c_str());

    // A cut transaction, whose header is whole and checked, is named too.
    writeAll(damaged, bytes, second->offset + second->frameSize - 1);
    summary = scanTape(damaged);
    QCOMPARE(summary.status, TapeStatus::Truncated);
    QCOMPARE(summary.problem->transactionIndex, std::optional<std::uint64_t>(1));
}

void TestTape::everyTruncationIsReportedNeverComplete()
{
    const std::string original = smallDemoTape(dir_.file("cut-original.zkdv"));
    RecordingVisitor layout;
    QVERIFY(scanTape(original, &layout).status == TapeStatus::Sealed);
    const std::vector<std::uint8_t> bytes = readAll(original);
    const std::string cut = dir_.file("cut.zkdv");
    ScanOptions options;
    options.hashThreads = 1;
    for (std::size_t length = 0; length < bytes.size(); ++length) {
        writeAll(cut, bytes, length);
        if (length == 0) {
            QVERIFY_THROWS_EXCEPTION(NotATapeError, scanTape(cut, nullptr, options));
            continue;
        }
        TapeSummary summary = scanTape(cut, nullptr, options);
        QVERIFY2(summary.status != TapeStatus::Sealed && summary.status != TapeStatus::Corrupt,
                 qPrintable(QStringLiteral("cut at %1: %2").arg(length).arg(QString::fromLatin1(tapeStatusName(summary.status).data()))));
        std::uint64_t whole = 0;
        for (const RecordLocation& r : layout.records)
            if (r.offset + r.frameSize <= length)
                ++whole;
        QCOMPARE(summary.recordCount, whole);
        const bool onBoundary = length == tape::kFileHeaderSize || (whole > 0 && layout.records[whole - 1].offset + layout.records[whole - 1].frameSize == length);
        QCOMPARE(summary.status, onBoundary ? TapeStatus::Unsealed : TapeStatus::Truncated);
        if (!onBoundary)
            QCOMPARE(summary.problem->recordIndex, whole);
    }
}

void TestTape::removedReorderedOrInsertedRecordsBreakTheChain()
{
    const std::string original = smallDemoTape(dir_.file("chain-original.zkdv"));
    RecordingVisitor layout;
    QVERIFY(scanTape(original, &layout).status == TapeStatus::Sealed);
    const std::vector<std::uint8_t> bytes = readAll(original);
    auto frame = [&](std::size_t index) {
        const RecordLocation& r = layout.records[index];
        return std::vector<std::uint8_t>(bytes.begin() + static_cast<std::ptrdiff_t>(r.offset),
                                         bytes.begin() + static_cast<std::ptrdiff_t>(r.offset + r.frameSize));
    };
    auto assemble = [&](const std::vector<std::size_t>& order) {
        std::vector<std::uint8_t> out(bytes.begin(), bytes.begin() + tape::kFileHeaderSize);
        for (std::size_t index : order) {
            auto f = frame(index);
            out.insert(out.end(), f.begin(), f.end());
        }
        return out;
    };
    const std::size_t n = layout.records.size();
    std::vector<std::size_t> all(n);
    for (std::size_t i = 0; i < n; ++i)
        all[i] = i;

    struct Case {
        const char* name;
        std::vector<std::size_t> order;
        std::uint64_t expectedRecord;
    };
    std::vector<Case> cases;
    auto removed = all;
    removed.erase(removed.begin() + 4);
    cases.push_back({"removed", removed, 4});
    auto swapped = all;
    std::swap(swapped[4], swapped[5]);
    cases.push_back({"reordered", swapped, 4});
    auto inserted = all;
    inserted.insert(inserted.begin() + 5, 4);
    cases.push_back({"duplicated", inserted, 5});
    for (const Case& c : cases) {
        std::vector<std::uint8_t> tape = assemble(c.order);
        const std::string path = dir_.file(std::string(c.name) + ".zkdv");
        writeAll(path, tape, tape.size());
        TapeSummary summary = scanTape(path);
        QCOMPARE(summary.status, TapeStatus::Corrupt);
        QCOMPARE(summary.problem->recordIndex, c.expectedRecord);
        QVERIFY2(summary.problem->message.find("hash chain broken") != std::string::npos, summary.problem->message.c_str());
    }
}

void TestTape::recordOrderIsEnforced()
{
    const std::string program = "p";
    RootRecord root = smallRoot(program);
    const std::string rootJson = root.toJson();
    auto transaction = [](std::uint64_t index) {
        static float loss = 1.0f;
        TransactionRecordBuilder record(index, 1);
        record.setLoss(DType::F32, ByteSpan(&loss, 4));
        record.setOptimizerValue("lr", {0.1, 0.2});
        record.setUpdateFingerprints({0.0, 0.0}, {0.0, 0.0});
        return record.blob().toBytes();
    };
    struct Case {
        const char* name;
        std::function<void(TapeWriter&)> write;
        std::string expected;
    };
    std::vector<Case> cases = {
        {"transaction before its snapshot", [&](TapeWriter& w) { w.append(tape::RecordType::Transaction, transaction(0)); },
         "must be preceded by the snapshot"},
        {"index out of sequence",
         [&](TapeWriter& w) {
             writeSnapshot(w, 0);
             w.append(tape::RecordType::Transaction, transaction(1));
         },
         "out of sequence: expected 0"},
        {"snapshot out of place",
         [&](TapeWriter& w) {
             writeSnapshot(w, 0);
             w.append(tape::RecordType::Transaction, transaction(0));
             writeSnapshot(w, 3);
         },
         "snapshot before transaction 3 is out of place"},
        {"missing program", [&](TapeWriter& w) { writeSnapshot(w, 0); }, "record 1 must be the program record"},
    };
    for (const Case& c : cases) {
        const std::string path = dir_.file(std::string("order-") + c.name + ".zkdv");
        {
            TapeWriter writer(path, TapeWriter::OpenMode::Overwrite);
            writer.append(tape::RecordType::Root, ByteSpan(std::string_view(rootJson)));
            if (std::string(c.name) != "missing program")
                writer.append(tape::RecordType::Program, ByteSpan(std::string_view(program)));
            c.write(writer);
            writer.seal();
        }
        TapeSummary summary = scanTape(path);
        QCOMPARE(summary.status, TapeStatus::Corrupt);
        QVERIFY2(summary.problem->message.find(c.expected) != std::string::npos, (std::string(c.name) + ": " + summary.problem->message).c_str());
    }
}

void TestTape::finalSnapshotEndsEveryTape_data()
{
    // Written record by record from the spec (2.4), interval 2: snapshot k of `placed` goes
    // right before transaction k, those of `trailing` after the last transaction, then the seal.
    QTest::addColumn<int>("minor");
    QTest::addColumn<int>("transactions");
    QTest::addColumn<QList<int>>("placed");
    QTest::addColumn<QList<int>>("trailing");
    QTest::addColumn<QString>("refusal");  // empty: the tape reads as sealed
    QTest::addColumn<bool>("atTheSeal");   // the refusal names the seal record and its frame
    QTest::newRow("1.5 final snapshot after an odd count") << 5 << 3 << QList<int>{0, 2} << QList<int>{3} << QString() << false;
    QTest::newRow("1.5 regular snapshot is the final one") << 5 << 4 << QList<int>{0, 2} << QList<int>{4} << QString() << false;
    QTest::newRow("1.5 no transactions") << 5 << 0 << QList<int>{} << QList<int>{0} << QString() << false;
    QTest::newRow("1.5 final snapshot missing")
        << 5 << 3 << QList<int>{0, 2} << QList<int>{} << QStringLiteral("the tape ends after 3 transactions without the snapshot of that state")
        << true;
    QTest::newRow("1.5 final snapshot twice") << 5 << 3 << QList<int>{0, 2} << QList<int>{3, 3}
                                              << QStringLiteral("the snapshot before transaction 3 is already on the tape") << false;
    QTest::newRow("1.5 regular snapshot twice") << 5 << 4 << QList<int>{0, 2} << QList<int>{4, 4}
                                                << QStringLiteral("the snapshot before transaction 4 is already on the tape") << false;
    QTest::newRow("1.5 final snapshot of the wrong count") << 5 << 3 << QList<int>{0, 2} << QList<int>{2}
                                                           << QStringLiteral("snapshot before transaction 2 is out of place") << false;
    QTest::newRow("1.5 transaction after the final snapshot") << 5 << 4 << QList<int>{0, 2, 3} << QList<int>{4}
                                                              << QStringLiteral("transaction 3 follows the final snapshot") << false;
    QTest::newRow("1.4 ends without the final state") << 4 << 3 << QList<int>{0, 2} << QList<int>{} << QString() << false;
    QTest::newRow("1.4 snapshot off the interval")
        << 4 << 3 << QList<int>{0, 2} << QList<int>{3}
        << QStringLiteral("no snapshot belongs here (format 1.4 has snapshots only at multiples of the interval)") << false;
}

void TestTape::finalSnapshotEndsEveryTape()
{
    QFETCH(int, minor);
    QFETCH(int, transactions);
    QFETCH(QList<int>, placed);
    QFETCH(QList<int>, trailing);
    QFETCH(QString, refusal);
    QFETCH(bool, atTheSeal);
    const std::string program = "p";
    RootRecord root = smallRoot(program);
    root.formatMinor = minor;
    const std::string rootJson = root.toJson();
    const std::string path = dir_.file("final-" + std::string(QTest::currentDataTag()) + ".zkdv");
    std::uint64_t sealIndex = 0, sealOffset = 0;
    {
        TapeWriter writer(path, TapeWriter::OpenMode::Overwrite, static_cast<std::uint16_t>(minor));
        writer.append(tape::RecordType::Root, ByteSpan(std::string_view(rootJson)));
        writer.append(tape::RecordType::Program, ByteSpan(std::string_view(program)));
        for (int t = 0; t < transactions; ++t) {
            if (placed.contains(t))
                writeSnapshot(writer, static_cast<std::uint64_t>(t));
            static float loss = 1.0f;
            TransactionRecordBuilder record(static_cast<std::uint64_t>(t), 1);
            record.setLoss(DType::F32, ByteSpan(&loss, 4));
            record.setOptimizerValue("lr", {0.1, 0.2});
            record.setUpdateFingerprints({0.0, 0.0}, {0.0, 0.0});
            writer.append(tape::RecordType::Transaction, record.blob().toBytes());
        }
        for (int k : trailing)
            writeSnapshot(writer, static_cast<std::uint64_t>(k));
        sealIndex = writer.recordCount();
        sealOffset = writer.bytesWritten();
        writer.seal();
    }
    const TapeSummary summary = scanTape(path);
    if (refusal.isEmpty()) {
        QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "not sealed");
        QCOMPARE(summary.snapshotCount, std::uint64_t(placed.size() + trailing.size()));
        return;
    }
    QCOMPARE(summary.status, TapeStatus::Corrupt);
    QVERIFY2(summary.problem->message.find(refusal.toStdString()) != std::string::npos, summary.problem->describe().c_str());
    if (atTheSeal) {
        QCOMPARE(summary.problem->recordIndex, sealIndex);
        QCOMPARE(summary.problem->byteOffset, sealOffset);
        QVERIFY2(summary.problem->message.find("final snapshot, before_transaction 3, right before the seal") != std::string::npos,
                 summary.problem->message.c_str());
    }
}

void TestTape::unknownRecordTypes()
{
    const std::string program = "p";
    const std::string rootJson = smallRoot(program).toJson();
    for (bool critical : {false, true}) {
        const std::string path = dir_.file(critical ? "unknown-critical.zkdv" : "unknown.zkdv");
        {
            TapeWriter writer(path, TapeWriter::OpenMode::Overwrite);
            writer.append(tape::RecordType::Root, ByteSpan(std::string_view(rootJson)));
            writer.append(tape::RecordType::Program, ByteSpan(std::string_view(program)));
            writeSnapshot(writer, 0);
            writer.appendRaw(77, critical ? tape::kFlagCritical : 0, {ByteSpan(std::string_view("from the future"))});
            writer.seal();
        }
        TapeSummary summary = scanTape(path);
        if (critical) {
            QCOMPARE(summary.status, TapeStatus::Corrupt);
            QCOMPARE(summary.problem->recordIndex, std::uint64_t(3));
            QVERIFY(summary.problem->message.find("unknown critical record type 77") != std::string::npos);
        } else {
            QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "");
            QCOMPARE(summary.unknownRecordCount, std::uint64_t(1));
        }
    }
}

void TestTape::notATapeAndUnsupportedVersion()
{
    const std::string text = dir_.file("notes.txt");
    writeAll(text, std::vector<std::uint8_t>{'h', 'e', 'l', 'l', 'o', '\n'}, 6);
    QVERIFY_THROWS_EXCEPTION(NotATapeError, scanTape(text));
    const std::string missing = dir_.file("missing.zkdv");
    QVERIFY_THROWS_EXCEPTION(IoError, scanTape(missing));
    QVERIFY_THROWS_EXCEPTION(IoError, scanTape(dir_.path()));

    const std::string original = smallDemoTape(dir_.file("version.zkdv"));
    std::vector<std::uint8_t> bytes = readAll(original);
    writeLittleEndian<std::uint16_t>(bytes.data() + 8, 2);
    writeAll(original, bytes, bytes.size());
    try {
        scanTape(original);
        QFAIL("a major version 2 tape was accepted");
    } catch (const NotATapeError& error) {
        QVERIFY(std::string(error.what()).find("major version 2 is not supported") != std::string::npos);
    }
}

void TestTape::writerRefusesExistingPathWithoutOverwrite()
{
    const std::string path = smallDemoTape(dir_.file("existing.zkdv"));
    const std::vector<std::uint8_t> before = readAll(path);
    try {
        TapeWriter writer(path);
        QFAIL("an existing tape was replaced");
    } catch (const IoError& error) {
        QVERIFY(std::string(error.what()).find("already exists") != std::string::npos);
    }
    QVERIFY(readAll(path) == before);
    SyntheticDemoOptions options;
    options.steps = 1;
    QVERIFY_THROWS_EXCEPTION(IoError, writeSyntheticDemoTape(path, options));
    QVERIFY(readAll(path) == before);
}

void TestTape::bytesAfterTheSealAreCorruption()
{
    const std::string path = smallDemoTape(dir_.file("trailing.zkdv"));
    std::vector<std::uint8_t> bytes = readAll(path);
    const std::size_t sealedSize = bytes.size();
    bytes.insert(bytes.end(), 100, 0);
    writeAll(path, bytes, bytes.size());
    TapeSummary summary = scanTape(path);
    QCOMPARE(summary.status, TapeStatus::Corrupt);
    QVERIFY2(summary.problem->message.find("follow the seal") != std::string::npos, summary.problem->message.c_str());
    QCOMPARE(summary.validBytes, std::uint64_t(sealedSize));
}

void TestTape::hugePageBuffersHoldWhatIsWritten()
{
    // The scanner's read windows and the stored sort orders live in these buffers.
    for (std::size_t count : {std::size_t(0), std::size_t(1), std::size_t(1000), std::size_t(3) << 18}) {
        HugePageVector<std::uint64_t> values;
        for (std::size_t i = 0; i < count; ++i)
            values.push_back(i * 0x9E3779B97F4A7C15u);  // grows through every size class
        QCOMPARE(values.size(), count);
        for (std::size_t i = 0; i < count; ++i)
            if (values[i] != i * 0x9E3779B97F4A7C15u)
                QFAIL(qPrintable(QStringLiteral("element %1 of %2 changed").arg(i).arg(count)));
        HugePageVector<std::uint64_t> moved = std::move(values);
        QCOMPARE(moved.size(), count);
    }
#if defined(__linux__)
    // Only whole, aligned 2 MiB ranges can be huge pages: a large buffer starts on one.
    HugePageVector<std::uint8_t> window(std::size_t(8) << 20, 0xA5);
    QCOMPARE(reinterpret_cast<std::uintptr_t>(window.data()) % (std::uintptr_t(2) << 20), std::uintptr_t(0));
    QCOMPARE(std::count(window.begin(), window.end(), std::uint8_t(0xA5)), std::ptrdiff_t(window.size()));
#endif
}

void TestTape::fileSha256MatchesAStraightHash()
{
    const std::string path = smallDemoTape(dir_.file("sha.zkdv"));
    ScanOptions options;
    options.computeFileSha256 = true;
    TapeSummary summary = scanTape(path, nullptr, options);
    QVERIFY(summary.fileSha256);
    QCOMPARE(toHex(*summary.fileSha256), toHex(Sha256::of(ByteSpan(readAll(path)))));
}

void TestTape::sampledChecksFollowTheChainBoundDraws()
{
    SyntheticDemoOptions options;
    options.steps = 300;
    options.batchSize = 2;
    options.updateCheckProbability = 0.2;
    options.stateCheckProbability = 0.1;
    options.seed = 99;
    options.overwrite = true;
    const std::string path = dir_.file("sampling.zkdv");
    writeSyntheticDemoTape(path, options);
    RecordingVisitor visitor;
    const TapeSummary summary = scanTape(path, &visitor);
    QCOMPARE(summary.status, TapeStatus::Sealed);
    QCOMPARE(summary.formatMinor, tape::kMinorVersion);
    QCOMPARE(visitor.root->samplingGenerator, std::string("splitmix64"));

    // An auditor recomputes which transactions had to carry checks (spec 5.2, format 1.3):
    // splitmix64 seeded with the seed XOR the first 8 bytes (little-endian) of the digest of
    // the transaction record before (the root record's for transaction 0); first draw update,
    // second state.
    Digest anchor = visitor.records.front().digest;
    std::size_t t = 0;
    int updates = 0, states = 0, seedStreamAgrees = 0;
    SamplingGenerator seedStream(visitor.root->samplingSeed);
    for (const RecordLocation& record : visitor.records) {
        if (record.type != static_cast<std::uint32_t>(tape::RecordType::Transaction))
            continue;
        SamplingGenerator generator(visitor.root->samplingSeed ^ readLittleEndian<std::uint64_t>(anchor.data()));
        const bool update = generator.uniform() < visitor.root->updateCheckProbability;
        const bool state = generator.uniform() < visitor.root->stateCheckProbability;
        QCOMPARE(visitor.hasDeltas[t], update);
        QCOMPARE(visitor.stateDigests[t].has_value(), state);
        const bool seedUpdate = seedStream.uniform() < visitor.root->updateCheckProbability;
        const bool seedState = seedStream.uniform() < visitor.root->stateCheckProbability;
        seedStreamAgrees += seedUpdate == update && seedState == state;
        updates += update;
        states += state;
        anchor = record.digest;
        ++t;
    }
    QCOMPARE(t, std::size_t(300));
    QVERIFY(updates > 30 && updates < 90);
    QVERIFY(states > 10 && states < 55);
    // The seed alone no longer decides: the draws of format 1.2 give another pattern.
    QVERIFY(seedStreamAgrees < 300);
    // splitmix64's published first output for seed 0.
    QCOMPARE(SamplingGenerator(0).next(), std::uint64_t(0xE220A8397B1DCDAFull));

    // The spec's chain-bound example (5.2), as computed by a Python reimplementation.
    RootRecord root;
    root.samplingSeed = 5;
    root.updateCheckProbability = 0.5;
    root.stateCheckProbability = 0.5;
    SamplingSchedule schedule(root);
    QCOMPARE(schedule.guarantee(), SamplingGuarantee::ChainBound);
    const SampledChecks example = schedule.next(Sha256::of(ByteSpan()));
    QVERIFY(example.updateDraw == 0.3721881556047013);  // exact, not fuzzy
    QVERIFY(example.stateDraw == 0.6422635780592324);
    QVERIFY(example.update && !example.state);
    root.formatMinor = 2;
    QCOMPARE(SamplingSchedule(root).guarantee(), SamplingGuarantee::SeedChosen);
    QCOMPARE(SamplingSchedule(root).next(Digest{}).updateDraw, SamplingGenerator(5).uniform());
    root.formatMinor = 1;
    QCOMPARE(SamplingSchedule(root).guarantee(), SamplingGuarantee::SeedChosen);
    QVERIFY(SamplingSchedule(root).enforced());
    // Format 1.0 names no draw rule (spec 5.2): nothing to enforce, and no generator to name.
    root.formatMinor = 0;
    QCOMPARE(SamplingSchedule(root).guarantee(), SamplingGuarantee::Unenforced);
    QVERIFY(!SamplingSchedule(root).enforced());
    QCOMPARE(samplingGuaranteeName(SamplingGuarantee::Unenforced), std::string_view("unenforced"));
    nlohmann::json oneZero = nlohmann::json::parse(smallRoot("program").toJson());
    oneZero["format"]["minor"] = 0;
    oneZero["sampling"].erase("generator");
    const std::string oneZeroText = oneZero.dump();
    const RootRecord parsed = RootRecord::parse(ByteSpan(std::string_view(oneZeroText)));
    QCOMPARE(parsed.samplingGenerator, std::string());
    QVERIFY(!nlohmann::json::parse(parsed.toJson())["sampling"].contains("generator"));
    oneZero["format"]["minor"] = 1;
    const std::string oneOneText = oneZero.dump();
    QVERIFY_THROWS_EXCEPTION(FormatError, RootRecord::parse(ByteSpan(std::string_view(oneOneText))));
}

void TestTape::rootRefusesWhatTheSpecForbids_data()
{
    QTest::addColumn<QString>("pointer");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("message");
    // Section 3: the seed is an unsigned 64-bit integer; parameters are floating point.
    QTest::newRow("negative seed") << "/sampling/seed" << "-5" << "sampling.seed is -5; it must be an unsigned 64-bit integer";
    QTest::newRow("fractional seed") << "/sampling/seed" << "1.5" << "sampling.seed must be an integer";
    QTest::newRow("integer parameter") << "/model/parameters/1/dtype" << "\"I64\""
                                       << "model.parameters[1] (layer.bias) has dtype I64; parameters are floating point";
    QTest::newRow("boolean parameter") << "/model/parameters/0/dtype" << "\"BOOL\""
                                       << "model.parameters[0] (layer.weight) has dtype BOOL";
}

void TestTape::rootRefusesWhatTheSpecForbids()
{
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, message);
    nlohmann::json root = nlohmann::json::parse(smallRoot("program").toJson());
    // The unchanged root parses: the refusal below is the edit's.
    const std::string honest = root.dump();
    QVERIFY(RootRecord::parse(ByteSpan(std::string_view(honest))).parameters.size() == 2);
    root[nlohmann::json::json_pointer(pointer.toStdString())] = nlohmann::json::parse(value.toStdString());
    const std::string edited = root.dump();
    try {
        (void)RootRecord::parse(ByteSpan(std::string_view(edited)));
        QFAIL("the edited root parsed");
    } catch (const FormatError& error) {
        QVERIFY2(std::string(error.what()).find(message.toStdString()) != std::string::npos, error.what());
    }
}

namespace {
NumericEnvironment sampleEnvironment()
{
    NumericEnvironment environment;
    environment.cpuVendor = "GenuineIntel";
    environment.cpuModel = "Intel(R) Xeon(R) Platinum 8480+";
    environment.cpuFlags = {"amx_bf16", "amx_tile", "avx", "avx2", "avx512f", "fma"};
    environment.torchCpuCapability = "AVX512";
    environment.blas = "mkl";
    environment.mkl = "Intel(R) oneAPI Math Kernel Library Version 2024.2";
    environment.onednn = "Intel(R) MKL-DNN v3.13.3";
    environment.intraOpThreads = 4;
    environment.settings = {{"MKL_CBWR", "COMPATIBLE"}};
    return environment;
}
}  // namespace

void TestTape::numericEnvironmentRoundTripsAndSaysWhatDiffers()
{
    // Spec 3.2: optional; absent in every root before 1.5, and read back as written.
    RootRecord root = smallRoot("program");
    QVERIFY(!RootRecord::parse(ByteSpan(std::string_view(root.toJson()))).numerics);
    QVERIFY(!nlohmann::json::parse(root.toJson()).contains("numerics"));
    root.numerics = sampleEnvironment();
    const std::string text = root.toJson();
    const RootRecord parsed = RootRecord::parse(ByteSpan(std::string_view(text)));
    QVERIFY(parsed.numerics);
    QCOMPARE(parsed.numerics->toJson(), sampleEnvironment().toJson());
    QVERIFY(parsed.numerics->differences(sampleEnvironment()).empty());
    QCOMPARE(nlohmann::json::parse(text)["numerics"]["cpu"]["flags"].size(), std::size_t(6));

    // Every member that chooses kernels is compared, settings by name and value.
    NumericEnvironment other = sampleEnvironment();
    other.torchCpuCapability = "AVX2";
    other.settings = {{"MKL_CBWR", "AVX2"}, {"ATEN_CPU_CAPABILITY", "avx2"}};
    other.intraOpThreads = 1;
    const std::vector<std::string> expected{"torch_cpu_capability", "intra_op_threads", "settings.ATEN_CPU_CAPABILITY", "settings.MKL_CBWR"};
    QCOMPARE(sampleEnvironment().differences(other), expected);
    const std::string words = sampleEnvironment().describeDifferences(other);
    QVERIFY2(words.find("torch_cpu_capability \"AVX512\" -> \"AVX2\"") != std::string::npos, words.c_str());
    QVERIFY2(words.find("settings.ATEN_CPU_CAPABILITY (none) -> \"avx2\"") != std::string::npos, words.c_str());
    other = sampleEnvironment();
    other.cpuModel = "AMD EPYC";
    other.cpuFlags.pop_back();
    QCOMPARE(sampleEnvironment().differences(other), (std::vector<std::string>{"cpu.model", "cpu.flags"}));
}

void TestTape::malformedNumericsAreRefused_data()
{
    QTest::addColumn<QString>("pointer");
    QTest::addColumn<QString>("value");
    QTest::addColumn<QString>("message");
    QTest::newRow("not an object") << "/numerics" << "[]" << "root record: numerics must be an object";
    QTest::newRow("no cpu") << "/numerics/cpu" << "7" << "root record: numerics.cpu must be an object";
    QTest::newRow("flag not a string") << "/numerics/cpu/flags/0" << "1" << "numerics.cpu.flags holds 1, expected strings";
    QTest::newRow("capability a number") << "/numerics/torch_cpu_capability" << "2"
                                         << "numerics.torch_cpu_capability must be a string, found number";
    QTest::newRow("zero threads") << "/numerics/intra_op_threads" << "0" << "numerics.intra_op_threads must be an integer from 1 to 65536";
    QTest::newRow("setting a number") << "/numerics/settings/MKL_CBWR" << "1" << "numerics.settings.MKL_CBWR must be a string";
}

void TestTape::malformedNumericsAreRefused()
{
    QFETCH(QString, pointer);
    QFETCH(QString, value);
    QFETCH(QString, message);
    RootRecord honest = smallRoot("program");
    honest.numerics = sampleEnvironment();
    nlohmann::json root = nlohmann::json::parse(honest.toJson());
    root[nlohmann::json::json_pointer(pointer.toStdString())] = nlohmann::json::parse(value.toStdString());
    const std::string edited = root.dump();
    try {
        (void)RootRecord::parse(ByteSpan(std::string_view(edited)));
        QFAIL("the edited root parsed");
    } catch (const FormatError& error) {
        QVERIFY2(std::string(error.what()).find(message.toStdString()) != std::string::npos, error.what());
    }
}

QTEST_GUILESS_MAIN(TestTape)
#include "test_tape.moc"
