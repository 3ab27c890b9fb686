// Gradient transforms (tape format 1.7, section 5.1): what a transaction may record of the
// clipping its step did, and what a reader refuses.

#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

#include "zkdv/tape/gradient_transform.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/error.h"

using namespace zkdv;

namespace {

RootRecord rootOfMinor(int minor)
{
    RootRecord root;
    root.producerName = "test";
    root.producerVersion = "1";
    root.torchVersion = "2.15.0";
    root.parameters = {{"w", {2}, DType::F32}, {"b", {1}, DType::F32}};
    root.optimizerContract = "SGD";
    root.optimizerGroups = {{{"w", "b"}, R"({"lr":0.1})"}};
    const std::string json = root.toJson();
    nlohmann::json document = nlohmann::json::parse(json);
    document["format"]["minor"] = minor;
    const std::string text = document.dump();
    return RootRecord::parse(ByteSpan(std::string_view(text)));
}

struct Parsed {
    std::vector<std::uint8_t> bytes;
    std::unique_ptr<SafetensorsView> view;
    TransactionRecord record;
};

const float kLoss = 1.0f;
const std::vector<double> kZeros(2, 0.0);
const std::vector<double> kLr(1, 0.1);

// A transaction record with `metadata` as its gradient_transforms and `norms` as extra tensors.
std::unique_ptr<Parsed> parsed(const RootRecord& root, const std::string& metadata, const std::vector<std::pair<std::string, float>>& norms,
                               std::vector<std::int64_t> normShape = {})
{
    static std::vector<float> values;
    values.clear();
    values.reserve(norms.size() * 4);
    SafetensorsBuilder blob;
    blob.setMetadata("zkdv.record", "transaction");
    blob.setMetadata("index", "0");
    blob.setMetadata("wall_time_ns", "0");
    if (!metadata.empty())
        blob.setMetadata("gradient_transforms", metadata);
    blob.add("loss", DType::F32, {}, ByteSpan(&kLoss, sizeof kLoss));
    blob.add("optimizer/lr", DType::F64, {1}, ByteSpan(kLr.data(), sizeof(double)));
    blob.add("update/l2", DType::F64, {2}, ByteSpan(kZeros.data(), 2 * sizeof(double)));
    blob.add("update/max_abs", DType::F64, {2}, ByteSpan(kZeros.data(), 2 * sizeof(double)));
    for (const auto& [name, value] : norms) {
        std::int64_t count = 1;
        for (std::int64_t d : normShape)
            count *= d;
        const std::size_t at = values.size();
        for (std::int64_t i = 0; i < count; ++i)
            values.push_back(value);
        blob.add(name, DType::F32, normShape, ByteSpan(values.data() + at, static_cast<std::size_t>(count) * sizeof(float)));
    }
    auto result = std::make_unique<Parsed>();
    result->bytes = blob.toBytes();
    result->view = std::make_unique<SafetensorsView>(SafetensorsView::parse(ByteSpan(result->bytes.data(), result->bytes.size())));
    result->record = TransactionRecord::parse(*result->view, root);
    return result;
}

QString refusalOf(const RootRecord& root, const std::string& metadata, const std::vector<std::pair<std::string, float>>& norms,
                  std::vector<std::int64_t> normShape = {})
{
    try {
        parsed(root, metadata, norms, std::move(normShape));
    } catch (const FormatError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

const char* kClipNorm = R"([{"kind":"clip_grad_norm","max_norm":1.0,"norm_type":2.0,"error_if_nonfinite":false,"foreach":true}])";

}  // namespace

class TestGradientTransformFormat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theBuilderWritesWhatTheReaderReads()
    {
        const RootRecord root = rootOfMinor(tape::kMinorVersion);
        GradientTransform norm;
        norm.maxNorm = 0.1;  // not a binary fraction: must read back as the same double
        norm.normType = std::numeric_limits<double>::infinity();
        norm.errorIfNonfinite = true;
        norm.foreach = false;
        GradientTransform value;
        value.kind = GradientTransform::Kind::ClipValue;
        value.clipValue = 1e-3;
        const float total = 2.5f;
        TransactionRecordBuilder builder(0, 0);
        builder.setLoss(DType::F32, ByteSpan(&kLoss, sizeof kLoss));
        builder.setOptimizerValue("lr", kLr);
        builder.setUpdateFingerprints(kZeros, kZeros);
        builder.addGradientTransform(value);
        builder.addGradientTransform(norm, DType::F32, ByteSpan(&total, sizeof total));
        const std::vector<std::uint8_t> bytes = builder.blob().toBytes();
        const SafetensorsView view = SafetensorsView::parse(ByteSpan(bytes.data(), bytes.size()));
        const TransactionRecord record = TransactionRecord::parse(view, root);
        QCOMPARE(record.gradientTransforms.size(), std::size_t(2));
        QVERIFY(record.gradientTransforms[0] == value);
        QVERIFY(record.gradientTransforms[1] == norm);
        QVERIFY(record.gradientTransforms[1].maxNorm == 0.1);
        QVERIFY(std::isinf(record.gradientTransforms[1].normType));
        QVERIFY(!record.totalNorms[0]);
        QVERIFY(record.totalNorms[1]);
        QCOMPARE(record.totalNorms[1]->name, totalNormTensorName(1));
        QCOMPARE(QString::fromStdString(record.gradientTransforms[1].describe()),
                 QString("clip_grad_norm_(max_norm=0.1, norm_type=inf, error_if_nonfinite=True, foreach=False)"));
        QCOMPARE(QString::fromStdString(record.gradientTransforms[0].describe()), QString("clip_grad_value_(clip_value=0.001)"));
    }

    void aRecordWithoutTransformsHasNone()
    {
        const auto t = parsed(rootOfMinor(tape::kMinorVersion), "", {});
        QVERIFY(t->record.gradientTransforms.empty());
        QVERIFY(t->record.totalNorms.empty());
    }

    void readersRefuseWhatNoStepDid_data()
    {
        QTest::addColumn<QString>("metadata");
        QTest::addColumn<QStringList>("norms");
        QTest::addColumn<QString>("expected");
        const QStringList one{"gradients/total_norm/0"};
        QTest::newRow("not JSON") << "[{" << one << "gradient_transforms";
        QTest::newRow("not an array") << R"({"kind":"clip_grad_norm"})" << one << "must be a non-empty JSON array";
        QTest::newRow("empty") << "[]" << QStringList() << "must be a non-empty JSON array";
        QTest::newRow("unknown kind") << R"([{"kind":"scale","foreach":null}])" << QStringList() << "unknown kind \"scale\"";
        QTest::newRow("extra member")
            << R"([{"kind":"clip_grad_value","clip_value":1,"foreach":null,"scale":2}])" << QStringList() << "unexpected member \"scale\"";
        QTest::newRow("max_norm a string")
            << R"([{"kind":"clip_grad_norm","max_norm":"1","norm_type":2,"error_if_nonfinite":false,"foreach":null}])" << one
            << "\"max_norm\" must be a number";
        QTest::newRow("norm_type zero")
            << R"([{"kind":"clip_grad_norm","max_norm":1,"norm_type":0,"error_if_nonfinite":false,"foreach":null}])" << one
            << "norm_type must be a positive number or inf";
        QTest::newRow("norm_type -inf")
            << R"([{"kind":"clip_grad_norm","max_norm":1,"norm_type":"-inf","error_if_nonfinite":false,"foreach":null}])" << one
            << "\"norm_type\" must be a number";
        QTest::newRow("no error_if_nonfinite") << R"([{"kind":"clip_grad_norm","max_norm":1,"norm_type":2,"foreach":null}])" << one
                                               << "\"error_if_nonfinite\" must be true or false";
        QTest::newRow("no foreach") << R"([{"kind":"clip_grad_value","clip_value":1}])" << QStringList() << "\"foreach\" must be true, false or null";
        QTest::newRow("total norm missing") << QString(kClipNorm) << QStringList() << "missing tensor \"gradients/total_norm/0\"";
        QTest::newRow("total norm of a value clip")
            << R"([{"kind":"clip_grad_value","clip_value":1,"foreach":null}])" << one << "which has no total norm";
        QTest::newRow("total norm past the list") << QString(kClipNorm) << QStringList{"gradients/total_norm/0", "gradients/total_norm/1"}
                                                  << "the transaction records no gradient transform 1";
        QTest::newRow("leading zero") << QString(kClipNorm) << QStringList{"gradients/total_norm/00"} << "named gradients/total_norm/<transform number>";
        QTest::newRow("another gradients tensor") << QString(kClipNorm) << QStringList{"gradients/total_norm/0", "gradients/scale"}
                                                  << "unexpected tensor \"gradients/scale\"";
        std::string nine = "[";
        for (int i = 0; i < 9; ++i)
            nine += std::string(i ? "," : "") + R"({"kind":"clip_grad_value","clip_value":1,"foreach":null})";
        QTest::newRow("nine transforms") << QString::fromStdString(nine + "]") << QStringList() << "at most 8 are allowed";
    }
    void readersRefuseWhatNoStepDid()
    {
        QFETCH(QString, metadata);
        QFETCH(QStringList, norms);
        QFETCH(QString, expected);
        std::vector<std::pair<std::string, float>> tensors;
        for (const QString& name : norms)
            tensors.push_back({name.toStdString(), 1.0f});
        const QString message = refusalOf(rootOfMinor(tape::kMinorVersion), metadata.toStdString(), tensors);
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.startsWith("transaction record: "), qPrintable(message));
    }

    void aTotalNormIsAFloatingScalar()
    {
        const QString message = refusalOf(rootOfMinor(tape::kMinorVersion), kClipNorm, {{"gradients/total_norm/0", 1.0f}}, {2});
        QVERIFY2(message.contains("expected a floating-point scalar of shape []"), qPrintable(message));
    }

    void olderTapesHoldNoTransforms()
    {
        // Before 1.7 the metadata is no part of the format: ignored, never applied; its tensor
        // is a tensor the reader does not know.
        const RootRecord older = rootOfMinor(tape::kGradientTransformMinor - 1);
        const auto t = parsed(older, kClipNorm, {});
        QVERIFY(t->record.gradientTransforms.empty());
        const QString message = refusalOf(older, kClipNorm, {{"gradients/total_norm/0", 1.0f}});
        QVERIFY2(message.contains("unexpected tensor \"gradients/total_norm/0\""), qPrintable(message));
    }

    void aWriterRefusesNumbersTorchWouldNot()
    {
        GradientTransform transform;
        transform.maxNorm = std::numeric_limits<double>::infinity();
        QVERIFY(!gradientTransformProblem(transform).empty());
        transform.maxNorm = 1.0;
        QVERIFY(gradientTransformProblem(transform).empty());
        transform.normType = -1.0;
        QVERIFY(!gradientTransformProblem(transform).empty());
        transform.normType = std::nan("");
        QVERIFY(!gradientTransformProblem(transform).empty());
        transform.kind = GradientTransform::Kind::ClipValue;
        transform.clipValue = std::nan("");
        QVERIFY(!gradientTransformProblem(transform).empty());
    }
};

QTEST_GUILESS_MAIN(TestGradientTransformFormat)
#include "test_gradient_transform_format.moc"
