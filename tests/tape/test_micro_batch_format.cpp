// Gradient accumulation (tape format 1.7, section 5.4): a transaction of several micro-batches,
// each with its loss and its loss scale, and what a reader refuses.

#include <QtTest/QtTest>

#include <memory>

#include <nlohmann/json.hpp>

#include "small_root.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/error.h"

using namespace zkdv;

namespace {

RootRecord rootOfMinor(int minor) { return test::readAsMinor(test::oneParameterRoot(), minor); }

const float kLosses[3] = {1.0f, 2.0f, 4.0f};
const float kInputs[2] = {0.5f, -0.5f};
const std::vector<double> kZero(1, 0.0);
const std::vector<double> kLr(1, 0.1);

struct Parsed {
    std::vector<std::uint8_t> bytes;
    std::unique_ptr<SafetensorsView> view;
    TransactionRecord record;
};

// A record with `metadata` and tensors named `names` (each a scalar loss or a [2] input).
std::unique_ptr<Parsed> parsed(const RootRecord& root, const std::vector<std::pair<std::string, std::string>>& metadata,
                               const std::vector<std::string>& names)
{
    SafetensorsBuilder blob;
    blob.setMetadata("zkdv.record", "transaction");
    blob.setMetadata("index", "0");
    blob.setMetadata("wall_time_ns", "0");
    for (const auto& [key, value] : metadata)
        blob.setMetadata(key, value);
    std::size_t losses = 0;
    for (const std::string& name : names) {
        if (name.size() >= 4 && name.compare(name.size() - 4, 4, "loss") == 0)
            blob.add(name, DType::F32, {}, ByteSpan(&kLosses[losses++ % 3], sizeof(float)));
        else
            blob.add(name, DType::F32, {2}, ByteSpan(kInputs, sizeof kInputs));
    }
    blob.add("optimizer/lr", DType::F64, {1}, ByteSpan(kLr.data(), sizeof(double)));
    blob.add("update/l2", DType::F64, {1}, ByteSpan(kZero.data(), sizeof(double)));
    blob.add("update/max_abs", DType::F64, {1}, ByteSpan(kZero.data(), sizeof(double)));
    auto result = std::make_unique<Parsed>();
    result->bytes = blob.toBytes();
    result->view = std::make_unique<SafetensorsView>(SafetensorsView::parse(ByteSpan(result->bytes.data(), result->bytes.size())));
    result->record = TransactionRecord::parse(*result->view, root);
    return result;
}

QString refusalOf(const RootRecord& root, const std::vector<std::pair<std::string, std::string>>& metadata, const std::vector<std::string>& names)
{
    try {
        parsed(root, metadata, names);
    } catch (const FormatError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

const std::vector<std::string> kTwo = {"micro/0/loss", "micro/0/batch/0", "micro/1/loss", "micro/1/batch/0"};

}  // namespace

class TestMicroBatchFormat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theBuilderWritesWhatTheReaderReads()
    {
        LossScale quarter;
        quarter.op = LossScale::Op::Divide;
        quarter.by = 4;
        quarter.integral = true;
        TransactionRecordBuilder builder(0, 0);
        for (int m = 0; m < 3; ++m) {
            builder.addMicroBatch(DType::F32, ByteSpan(&kLosses[m], sizeof(float)), quarter);
            builder.addBatchTensor(DType::F32, {2}, ByteSpan(kInputs, sizeof kInputs));
        }
        builder.setOptimizerValue("lr", kLr);
        builder.setUpdateFingerprints(kZero, kZero);
        const std::vector<std::uint8_t> bytes = builder.blob().toBytes();
        const SafetensorsView view = SafetensorsView::parse(ByteSpan(bytes.data(), bytes.size()));
        QCOMPARE(std::string(view.metadataValue("micro_batches")), std::string("3"));
        QCOMPARE(std::string(view.metadataValue("loss_scales")), std::string(R"([{"by":4,"op":"div"},{"by":4,"op":"div"},{"by":4,"op":"div"}])"));
        const TransactionRecord record = TransactionRecord::parse(view, rootOfMinor(tape::kMinorVersion));
        QCOMPARE(record.microBatches.size(), std::size_t(3));
        for (const MicroBatch& micro : record.microBatches) {
            QVERIFY(micro.scale == quarter);
            QCOMPARE(micro.batch.size(), std::size_t(1));
        }
        QCOMPARE(record.microBatches[2].loss->name, std::string("micro/2/loss"));
        QCOMPARE(record.loss, (1.0 + 2.0 + 4.0) / 4);  // the step's loss: the scaled losses' sum
        QCOMPARE(record.batch.size(), std::size_t(3));
        QCOMPARE(QString::fromStdString(quarter.describe()), QStringLiteral("/ 4"));
    }

    void oneMicroBatchIsTheClassicLayout()
    {
        const auto t = parsed(rootOfMinor(tape::kMinorVersion), {}, {"loss", "batch/0", "batch/1"});
        QCOMPARE(t->record.microBatches.size(), std::size_t(1));
        QCOMPARE(t->record.microBatches[0].batch.size(), std::size_t(2));
        QVERIFY(t->record.microBatches[0].scale.op == LossScale::Op::None);
        QCOMPARE(t->record.loss, 1.0);
        // A single scaled loss is recorded too; the step's loss stays the program's.
        const auto scaled = parsed(rootOfMinor(tape::kMinorVersion), {{"loss_scales", R"([{"op":"mul","by":2.5}])"}}, {"loss", "batch/0"});
        QVERIFY(scaled->record.microBatches[0].scale.op == LossScale::Op::Multiply);
        QCOMPARE(scaled->record.microBatches[0].scale.by, 2.5);
        QCOMPARE(scaled->record.loss, 1.0);
    }

    void readersRefuseWhatNoStepDid_data()
    {
        QTest::addColumn<QString>("count");
        QTest::addColumn<QString>("scales");
        QTest::addColumn<QStringList>("names");
        QTest::addColumn<QString>("expected");
        auto list = [](const std::vector<std::string>& names) {
            QStringList out;
            for (const std::string& name : names)
                out << QString::fromStdString(name);
            return out;
        };
        QTest::newRow("one") << "1" << "" << list({"loss", "batch/0"}) << "holds 2 to 1024";
        QTest::newRow("too many") << "5000" << "" << list(kTwo) << "holds 2 to 1024";
        QTest::newRow("a classic loss too") << "2" << "" << list({"loss", "micro/0/loss", "micro/1/loss"}) << "unexpected tensor \"loss\"";
        QTest::newRow("a classic batch too") << "2" << "" << list({"batch/0", "micro/0/loss", "micro/1/loss"}) << "unexpected tensor \"batch/0\"";
        QTest::newRow("past the count") << "2" << "" << list({"micro/0/loss", "micro/1/loss", "micro/2/loss"}) << "m below 2";
        QTest::newRow("leading zero") << "2" << "" << list({"micro/0/loss", "micro/01/loss"}) << "m below 2";
        QTest::newRow("no loss") << "2" << "" << list({"micro/0/loss", "micro/1/batch/0"}) << "missing tensor \"micro/1/loss\"";
        QTest::newRow("a gap") << "2" << "" << list({"micro/0/loss", "micro/0/batch/1", "micro/1/loss", "micro/1/batch/1"})
                               << "micro/0/batch/0 is missing";
        QTest::newRow("another form") << "2" << "" << list({"micro/0/loss", "micro/0/batch/0", "micro/1/loss"})
                                      << "micro-batch 1 holds 0 batch tensors, micro-batch 0 1";
        QTest::newRow("something else") << "2" << "" << list({"micro/0/loss", "micro/1/loss", "micro/1/grad"}) << "unexpected tensor \"micro/1/grad\"";
        QTest::newRow("a huge batch number") << "2" << "" << list({"micro/0/loss", "micro/1/loss", "micro/1/batch/99999999"})
                                             << "at most 65536 tensors";
        QTest::newRow("scales too few") << "2" << "[null]" << list(kTwo) << "array of 2 entries";
        QTest::newRow("scale op") << "2" << R"([null,{"op":"add","by":1}])" << list(kTwo) << "\"op\" must be \"div\" or \"mul\"";
        QTest::newRow("scale zero") << "2" << R"([null,{"op":"div","by":0}])" << list(kTwo) << "not divided by zero";
        QTest::newRow("scale string") << "2" << R"([null,{"op":"div","by":"4"}])" << list(kTwo) << "\"by\" must be a number";
        QTest::newRow("scale extra") << "2" << R"([null,{"op":"div","by":4,"x":1}])" << list(kTwo) << "must be null or";
        QTest::newRow("scale huge int") << "2" << R"([null,{"op":"div","by":18446744073709551615}])" << list(kTwo) << "at most 2^53";
    }
    void readersRefuseWhatNoStepDid()
    {
        QFETCH(QString, count);
        QFETCH(QString, scales);
        QFETCH(QStringList, names);
        QFETCH(QString, expected);
        std::vector<std::pair<std::string, std::string>> metadata = {{"micro_batches", count.toStdString()}};
        if (!scales.isEmpty())
            metadata.push_back({"loss_scales", scales.toStdString()});
        std::vector<std::string> tensors;
        for (const QString& name : names)
            tensors.push_back(name.toStdString());
        const QString message = refusalOf(rootOfMinor(tape::kMinorVersion), metadata, tensors);
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    void olderTapesHoldOneMicroBatch()
    {
        const RootRecord older = rootOfMinor(tape::kGradientTransformMinor - 1);
        const auto t = parsed(older, {{"micro_batches", "2"}, {"loss_scales", "[1]"}}, {"loss", "batch/0"});
        QCOMPARE(t->record.microBatches.size(), std::size_t(1));
        QVERIFY(t->record.microBatches[0].scale.op == LossScale::Op::None);
        QVERIFY2(refusalOf(older, {{"micro_batches", "2"}}, kTwo).contains("unexpected tensor \"micro/"), "");
    }
};

QTEST_GUILESS_MAIN(TestMicroBatchFormat)
#include "test_micro_batch_format.moc"
