// Gradient scaling (tape format 1.8, section 5.6): the root's grad_scaler, what each
// transaction records of it, the rule that moves the scale, and what a reader refuses.

#include <QtTest/QtTest>

#include <cmath>
#include <limits>
#include <memory>

#include <nlohmann/json.hpp>

#include "zkdv/audit/grad_scaler_follower.h"
#include "zkdv/tape/grad_scaler.h"
#include "small_root.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/error.h"

using namespace zkdv;

namespace {

const char* kScaler = R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": 1024.0, "growth_tracker": 0})";

RootRecord rootOf(int minor, const char* scaler)
{
    return test::readAsMinor(test::oneParameterRoot(), minor, [scaler](nlohmann::json& document) {
        if (scaler)
            document["grad_scaler"] = nlohmann::json::parse(scaler);
    });
}

struct Parsed {
    std::vector<std::uint8_t> bytes;
    std::unique_ptr<SafetensorsView> view;
    TransactionRecord record;
};

const float kLoss = 1.0f;
const std::vector<double> kZeros(1, 0.0);
const std::vector<double> kLr(1, 0.1);

// A transaction with `scaler` as its metadata grad_scaler and `transforms` as its gradient_transforms.
std::unique_ptr<Parsed> parsed(const RootRecord& root, const std::string& scaler, const std::string& transforms)
{
    SafetensorsBuilder blob;
    blob.setMetadata("zkdv.record", "transaction");
    blob.setMetadata("index", "0");
    blob.setMetadata("wall_time_ns", "0");
    if (!scaler.empty())
        blob.setMetadata("grad_scaler", scaler);
    if (!transforms.empty())
        blob.setMetadata("gradient_transforms", transforms);
    blob.add("loss", DType::F32, {}, ByteSpan(&kLoss, sizeof kLoss));
    blob.add("optimizer/lr", DType::F64, {1}, ByteSpan(kLr.data(), sizeof(double)));
    blob.add("update/l2", DType::F64, {1}, ByteSpan(kZeros.data(), sizeof(double)));
    blob.add("update/max_abs", DType::F64, {1}, ByteSpan(kZeros.data(), sizeof(double)));
    auto result = std::make_unique<Parsed>();
    result->bytes = blob.toBytes();
    result->view = std::make_unique<SafetensorsView>(SafetensorsView::parse(ByteSpan(result->bytes.data(), result->bytes.size())));
    result->record = TransactionRecord::parse(*result->view, root);
    return result;
}

QString refusal(const std::function<void()>& action)
{
    try {
        action();
    } catch (const FormatError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

const char* kUnscale = R"([{"kind": "unscale"}])";

}  // namespace

class TestGradScalerFormat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rootDeclaresTheRuleAndTheStart()
    {
        const RootRecord root = rootOf(tape::kGradScalerMinor, kScaler);
        QVERIFY(root.gradScaler.has_value());
        QCOMPARE(root.gradScaler->rule.growthInterval, std::int64_t(3));
        QCOMPARE(root.gradScaler->initial.scale, 1024.0f);
        // The writer's JSON reads back as the same declaration.
        const RootRecord again = RootRecord::parse(ByteSpan(std::string_view(root.toJson())));
        QVERIFY(again.gradScaler && again.gradScaler->initial == root.gradScaler->initial);
        QCOMPARE(again.gradScaler->rule.backoffFactor, 0.5);
    }

    void olderTapesIgnoreTheMember()
    {
        QVERIFY(!rootOf(7, kScaler).gradScaler.has_value());
        // A 1.7 reader knew no unscale entry: refused, as an unknown kind would be there.
        const RootRecord old = rootOf(7, nullptr);
        QVERIFY(refusal([&] { parsed(old, "", kUnscale); }).contains("format 1.7 does not know"));
        QVERIFY(refusal([&] { parsed(old, R"({"scale": 1024.0, "growth_tracker": 0, "skipped": false})", ""); }).isEmpty());
    }

    void rootRefusesWhatNoGradScalerHas_data()
    {
        QTest::addColumn<QString>("scaler");
        QTest::addColumn<QString>("expected");
        QTest::newRow("growth 1") << R"({"growth_factor": 1.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": 1.0, "growth_tracker": 0})"
                                  << "growth_factor";
        QTest::newRow("backoff 1") << R"({"growth_factor": 2.0, "backoff_factor": 1.0, "growth_interval": 3, "scale": 1.0, "growth_tracker": 0})"
                                   << "backoff_factor";
        QTest::newRow("backoff 0") << R"({"growth_factor": 2.0, "backoff_factor": 0, "growth_interval": 3, "scale": 1.0, "growth_tracker": 0})"
                                   << "backoff_factor";
        QTest::newRow("interval 0") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 0, "scale": 1.0, "growth_tracker": 0})"
                                    << "growth_interval";
        QTest::newRow("interval 2^31") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 2147483648, "scale": 1.0, "growth_tracker": 0})"
                                       << "fits 32 bits";
        QTest::newRow("interval 2^64") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 18446744073709551615, "scale": 1.0, "growth_tracker": 0})"
                                       << "fits 32 bits";
        QTest::newRow("fractional interval") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3.5, "scale": 1.0, "growth_tracker": 0})"
                                             << "integer";
        QTest::newRow("scale not float32") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": 0.1, "growth_tracker": 0})"
                                           << "float32";
        QTest::newRow("scale past float32") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": 1e39, "growth_tracker": 0})"
                                            << "float32";
        QTest::newRow("tracker at interval") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": 1.0, "growth_tracker": 3})"
                                             << "growth_tracker is 3";
        QTest::newRow("negative tracker") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": 1.0, "growth_tracker": -1})"
                                          << "growth_tracker is -1";
        QTest::newRow("extra member") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": 1.0, "growth_tracker": 0, "enabled": true})"
                                      << "unexpected member \"enabled\"";
        QTest::newRow("missing member") << R"({"growth_factor": 2.0, "backoff_factor": 0.5, "scale": 1.0, "growth_tracker": 0})"
                                        << "missing member \"growth_interval\"";
        QTest::newRow("not an object") << R"([2.0, 0.5])" << "must be an object";
    }
    void rootRefusesWhatNoGradScalerHas()
    {
        QFETCH(QString, scaler);
        QFETCH(QString, expected);
        const QByteArray text = scaler.toUtf8();
        const QString message = refusal([&] { rootOf(tape::kGradScalerMinor, text.constData()); });
        QVERIFY2(message.contains("grad_scaler") && message.contains(expected), qPrintable(message));
    }

    void transactionRecordsItsStateAndOneUnscale()
    {
        const RootRecord root = rootOf(tape::kGradScalerMinor, kScaler);
        auto transaction = parsed(root, R"({"scale": 512.0, "growth_tracker": 2, "skipped": true})", R"([{"kind": "unscale"},
            {"kind": "clip_grad_value", "clip_value": 1.0, "foreach": true}])");
        QVERIFY(transaction->record.gradScaler.has_value());
        QCOMPARE(transaction->record.gradScaler->state.scale, 512.0f);
        QCOMPARE(transaction->record.gradScaler->state.growthTracker, std::int64_t(2));
        QVERIFY(transaction->record.gradScaler->skipped);
        QCOMPARE(int(transaction->record.gradientTransforms.size()), 2);
        // The unscale takes the transaction's scale.
        QCOMPARE(transaction->record.gradientTransforms[0].kind, GradientTransform::Kind::Unscale);
        QCOMPARE(transaction->record.gradientTransforms[0].scale, 512.0f);
    }

    void writerAndReaderAgree()
    {
        const RootRecord root = rootOf(tape::kGradScalerMinor, kScaler);
        TransactionRecordBuilder builder(0, 0);
        builder.setLoss(DType::F32, ByteSpan(&kLoss, sizeof kLoss));
        builder.setOptimizerValue("lr", kLr);
        builder.setUpdateFingerprints(kZeros, kZeros);
        GradientTransform unscale;
        unscale.kind = GradientTransform::Kind::Unscale;
        unscale.scale = 3.0e38f;
        builder.addGradientTransform(unscale);
        builder.setGradScaler(GradScalerStep{GradScalerState{3.0e38f, 1}, false});
        const std::vector<std::uint8_t> bytes = builder.blob().toBytes();
        const SafetensorsView view = SafetensorsView::parse(ByteSpan(bytes.data(), bytes.size()));
        const TransactionRecord record = TransactionRecord::parse(view, root);
        QVERIFY(record.gradScaler && record.gradScaler->state == (GradScalerState{3.0e38f, 1}));
        QCOMPARE(record.gradientTransforms.at(0).scale, 3.0e38f);
    }

    void transactionRefuses_data()
    {
        QTest::addColumn<bool>("declared");
        QTest::addColumn<QString>("scaler");
        QTest::addColumn<QString>("transforms");
        QTest::addColumn<QString>("expected");
        const QString state = R"({"scale": 1024.0, "growth_tracker": 0, "skipped": false})";
        QTest::newRow("missing metadata") << true << QString() << QString(kUnscale) << "grad_scaler\" is missing";
        QTest::newRow("no unscale") << true << state << QString() << "holds 0 \"unscale\" entries";
        QTest::newRow("two unscales") << true << state << R"([{"kind": "unscale"}, {"kind": "unscale"}])" << "holds 2 \"unscale\" entries";
        QTest::newRow("unscale with a member") << true << state << R"([{"kind": "unscale", "scale": 2.0}])" << "holds only its kind";
        QTest::newRow("skipped not a bool") << true << R"({"scale": 1024.0, "growth_tracker": 0, "skipped": 0})" << QString(kUnscale)
                                            << "\"skipped\" must be true or false";
        QTest::newRow("missing skipped") << true << R"({"scale": 1024.0, "growth_tracker": 0})" << QString(kUnscale) << "missing member \"skipped\"";
        QTest::newRow("tracker past interval") << true << R"({"scale": 1024.0, "growth_tracker": 7, "skipped": false})" << QString(kUnscale)
                                               << "growth_tracker is 7";
        QTest::newRow("infinite scale") << true << R"({"scale": 1e400, "growth_tracker": 0, "skipped": false})" << QString(kUnscale)
                                        << "grad_scaler";
        QTest::newRow("not JSON") << true << "{scale" << QString(kUnscale) << "grad_scaler";
        QTest::newRow("undeclared metadata") << false << state << QString() << "root declares no grad_scaler";
        QTest::newRow("undeclared unscale") << false << QString() << QString(kUnscale) << "root declares no grad_scaler";
    }
    void transactionRefuses()
    {
        QFETCH(bool, declared);
        QFETCH(QString, scaler);
        QFETCH(QString, transforms);
        QFETCH(QString, expected);
        const RootRecord root = rootOf(tape::kGradScalerMinor, declared ? kScaler : nullptr);
        const QString message = refusal([&] { parsed(root, scaler.toStdString(), transforms.toStdString()); });
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    // torch's _amp_update_scale_ (its CPU kernel): the product in double, rounded once to float32.
    void ruleMovesTheScaleAsTorchDoes()
    {
        const GradScalerRule rule{2.0, 0.5, 3};
        GradScalerState state{1024.0f, 0};
        state = nextGradScalerState(state, rule, false);
        QVERIFY(state == (GradScalerState{1024.0f, 1}));
        state = nextGradScalerState(state, rule, false);
        QVERIFY(state == (GradScalerState{1024.0f, 2}));
        state = nextGradScalerState(state, rule, false);  // the third step in a row grows it
        QVERIFY(state == (GradScalerState{2048.0f, 0}));
        state = nextGradScalerState(GradScalerState{2048.0f, 2}, rule, true);  // a skip backs off and resets
        QVERIFY(state == (GradScalerState{1024.0f, 0}));
        // Never grown to infinity.
        const float largest = std::numeric_limits<float>::max();
        QVERIFY(nextGradScalerState(GradScalerState{largest, 2}, rule, false) == (GradScalerState{largest, 0}));
        // A factor that is not a power of two (the end-to-end tests check torch's own update
        // against this with backoff_factor 1e-30): the product is rounded to float32.
        const float backedOff = nextGradScalerState(GradScalerState{3.0e38f, 0}, GradScalerRule{2.0, 1e-30, 5}, true).scale;
        QCOMPARE(backedOff, 3.0e8f);  // 300000000.55 in double, whose nearest float32 is 3e8
    }

    void followerNamesTheDeparture()
    {
        GradScalerDeclaration declaration{GradScalerRule{2.0, 0.5, 2}, GradScalerState{8.0f, 0}};
        GradScalerFollower follower(declaration);
        follower.startAtRoot();
        QCOMPARE(follower.judge(GradScalerState{8.0f, 0}).verdict, Verdict::Exact);
        const TensorComparison wrong = follower.judge(GradScalerState{16.0f, 0});
        QCOMPARE(wrong.verdict, Verdict::Diverged);
        QVERIFY2(QString::fromStdString(wrong.note).contains("gives scale 8.0 and growth_tracker 0 from the root"), wrong.note.c_str());
        follower.advance(GradScalerStep{GradScalerState{8.0f, 0}, false});
        follower.advance(GradScalerStep{GradScalerState{8.0f, 1}, false});
        QVERIFY(follower.expected() == (GradScalerState{16.0f, 0}));
        const TensorComparison late = follower.judge(GradScalerState{8.0f, 0});
        QCOMPARE(late.verdict, Verdict::Diverged);
        QVERIFY2(QString::fromStdString(late.note).contains("after transaction 1"), late.note.c_str());
    }
};

QTEST_APPLESS_MAIN(TestGradScalerFormat)
#include "test_grad_scaler_format.moc"
