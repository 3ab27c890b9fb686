// Scheduled options (tape format 1.6, section 3.3): what the root may declare, what every
// transaction must record, and how a replay's schedule check judges the recorded values.

#include <QtTest/QtTest>

#include <cmath>
#include <limits>

#include "zkdv/schedule/schedule_follower.h"
#include "zkdv/tape/recorded_optimizer_options.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/error.h"

using namespace zkdv;

namespace {

RootRecord scheduledRoot(const std::string& scheduler = R"({"kind":"StepLR","arguments":{"step_size":2,"gamma":0.5},"base":{"lr":[0.1,0.2]}})",
                         std::uint64_t epoch = 0)
{
    RootRecord root;
    root.producerName = "test";
    root.producerVersion = "1";
    root.torchVersion = "2.15.0";
    root.parameters = {{"w", {2}, DType::F32}, {"b", {1}, DType::F32}};
    root.optimizerContract = "SGD";
    root.optimizerGroups = {{{"w"}, R"({"lr":0.1,"momentum":0.9})"}, {{"b"}, R"({"lr":0.2,"momentum":0.9})"}};
    root.optimizerSchedule = OptimizerSchedule{{"lr"}, scheduler, epoch};
    return root;
}

RootRecord reparsed(const RootRecord& root)
{
    const std::string json = root.toJson();
    return RootRecord::parse(ByteSpan(std::string_view(json)));
}

QString formatErrorOf(const std::string& json)
{
    try {
        RootRecord::parse(ByteSpan(std::string_view(json)));
    } catch (const FormatError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

// One transaction record's bytes, and the record parsed from them.
struct Transaction {
    std::vector<std::uint8_t> bytes;
    std::unique_ptr<SafetensorsView> view;
    TransactionRecord record;
};

std::unique_ptr<Transaction> transaction(const RootRecord& root, std::uint64_t index, const std::vector<std::pair<std::string, std::vector<double>>>& options,
                                         std::optional<std::uint64_t> epoch, const schedule::SchedulerInputs& inputs = {})
{
    static const float loss = 1.0f;
    static const std::vector<double> zeros(2, 0.0);
    TransactionRecordBuilder builder(index, 0);
    builder.setLoss(DType::F32, ByteSpan(&loss, sizeof loss));
    for (const auto& [option, values] : options)
        builder.setOptimizerValue(option, values);
    builder.setUpdateFingerprints(zeros, zeros);
    if (epoch)
        builder.setScheduleEpoch(*epoch);
    builder.setScheduleInputs(inputs.metrics, inputs.state);
    auto result = std::make_unique<Transaction>();
    result->bytes = builder.blob().toBytes();
    result->view = std::make_unique<SafetensorsView>(SafetensorsView::parse(ByteSpan(result->bytes.data(), result->bytes.size())));
    result->record = TransactionRecord::parse(*result->view, root);
    return result;
}

QString parseErrorOf(const RootRecord& root, const schedule::SchedulerInputs& inputs)
{
    try {
        transaction(root, 0, {{"lr", {0.1, 0.2}}}, root.optimizerSchedule->checked() ? std::optional<std::uint64_t>(1) : std::nullopt, inputs);
    } catch (const FormatError& error) {
        return QString::fromStdString(error.what());
    }
    return {};
}

// ReduceLROnPlateau(factor=0.5, patience=1, cooldown=1) from rates 0.1 and 0.2, fresh.
constexpr const char* kPlateau =
    R"({"kind":"ReduceLROnPlateau","arguments":{"mode":"min","factor":0.5,"patience":1,"threshold":0.0001,"threshold_mode":"rel",)"
    R"("cooldown":1,"min_lr":[0,0.15],"eps":1e-8},"base":{"lr":[0.1,0.2]},"state":{"best":null,"num_bad_epochs":0,"cooldown_counter":0}})";

QString violationOf(RecordedOptimizerOptions& rule, const Transaction& t)
{
    return QString::fromStdString(rule.violation(t.record).value_or(""));
}

}  // namespace

class TestScheduleFormat : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void rootRoundTrips()
    {
        const RootRecord root = reparsed(scheduledRoot("", 0));
        QVERIFY(root.optimizerSchedule);
        QVERIFY(!root.optimizerSchedule->checked());
        QCOMPARE(root.optimizerSchedule->options, std::vector<std::string>{"lr"});
        const RootRecord checked = reparsed(scheduledRoot(R"({"kind":"StepLR","arguments":{},"base":{"lr":[1,2]}})", 7));
        QVERIFY(checked.optimizerSchedule->checked());
        QCOMPARE(checked.optimizerSchedule->epoch, std::uint64_t(7));
        QVERIFY(nlohmann::json::parse(checked.optimizerSchedule->schedulerJson)["kind"] == "StepLR");
    }

    void rootRefusesWhatCannotBeScheduled_data()
    {
        QTest::addColumn<QString>("schedule");
        QTest::addColumn<QString>("expected");
        QTest::newRow("no options") << R"({"options":[],"scheduler":null})" << "optimizer.schedule.options must be a non-empty array";
        QTest::newRow("a bool option") << R"({"options":["nesterov"],"scheduler":null})" << "no numeric option of that name";
        QTest::newRow("an option twice") << R"({"options":["lr","lr"],"scheduler":null})" << "names \"lr\" twice";
        QTest::newRow("a kindless scheduler") << R"({"options":["lr"],"scheduler":{"arguments":{}}})" << "an object with a string kind";
        QTest::newRow("no epoch") << R"({"options":["lr"],"scheduler":{"kind":"StepLR"}})" << "missing member optimizer.schedule.epoch";
        QTest::newRow("a huge epoch") << R"({"options":["lr"],"scheduler":{"kind":"StepLR"},"epoch":18446744073709551615})"
                                      << "it must be an integer from 0 to 1048576";
        QTest::newRow("a negative epoch") << R"({"options":["lr"],"scheduler":{"kind":"StepLR"},"epoch":-1})" << "optimizer.schedule.epoch is -1";
    }
    void rootRefusesWhatCannotBeScheduled()
    {
        QFETCH(QString, schedule);
        QFETCH(QString, expected);
        nlohmann::json root = nlohmann::json::parse(scheduledRoot().toJson());
        root["optimizer"]["groups"][0]["options"]["nesterov"] = false;
        root["optimizer"]["groups"][1]["options"]["nesterov"] = false;
        root["optimizer"]["schedule"] = nlohmann::json::parse(schedule.toStdString());
        const QString message = formatErrorOf(root.dump());
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    void aScheduleInAnOlderRootIsIgnored()
    {
        // Before 1.6 every option is static, whatever member a forger adds.
        nlohmann::json root = nlohmann::json::parse(scheduledRoot().toJson());
        root["format"]["minor"] = 5;
        const std::string json = root.dump();
        const RootRecord parsed = RootRecord::parse(ByteSpan(std::string_view(json)));
        QVERIFY(!parsed.optimizerSchedule);
        RecordedOptimizerOptions rule(parsed);
        auto t = transaction(parsed, 0, {{"lr", {0.05, 0.2}}}, std::nullopt);
        QVERIFY2(violationOf(rule, *t).contains("in the root"), qPrintable(violationOf(rule, *t)));
    }

    void scheduledValuesMayChangeStaticOnesMayNot()
    {
        const RootRecord root = reparsed(scheduledRoot());
        RecordedOptimizerOptions rule(root);
        QCOMPARE(violationOf(rule, *transaction(root, 0, {{"lr", {0.1, 0.2}}}, 0)), QString());
        QCOMPARE(violationOf(rule, *transaction(root, 1, {{"lr", {0.05, 0.1}}}, 1)), QString());
        QString message = violationOf(rule, *transaction(root, 2, {{"lr", {0.05, 0.1}}, {"momentum", {0.9, 0.5}}}, 2));
        QVERIFY2(message.contains("group 1 option momentum is 0.5 in the transaction, but 0.9 in the root"), qPrintable(message));
    }

    // Since 1.8 an element of an array option may be scheduled: OneCycleLR's betas[0].
    void anArrayElementMayBeScheduled()
    {
        nlohmann::json document = nlohmann::json::parse(scheduledRoot("", 0).toJson());
        for (nlohmann::json& group : document["optimizer"]["groups"])
            group["options"]["betas"] = {0.9, 0.999};
        document["optimizer"]["schedule"]["options"] = {"lr", "betas[0]"};
        const std::string text = document.dump();
        const RootRecord root = RootRecord::parse(ByteSpan(std::string_view(text)));
        QCOMPARE(root.optimizerSchedule->options, (std::vector<std::string>{"lr", "betas[0]"}));
        RecordedOptimizerOptions rule(root);
        QCOMPARE(violationOf(rule, *transaction(root, 0, {{"lr", {0.1, 0.2}}, {"betas[0]", {0.85, 0.95}}}, std::nullopt)), QString());
        QString missing = violationOf(rule, *transaction(root, 1, {{"lr", {0.1, 0.2}}}, std::nullopt));
        QVERIFY2(missing.contains("optimizer/betas[0] missing"), qPrintable(missing));

        auto refused = [&](const nlohmann::json& options, int minor) {
            nlohmann::json changed = document;
            changed["optimizer"]["schedule"]["options"] = options;
            changed["format"]["minor"] = minor;
            return formatErrorOf(changed.dump());
        };
        QVERIFY(refused({"lr", "betas[0]"}, 7).contains("not an option name"));  // a 1.7 reader knew no elements
        QVERIFY(refused({"lr", "betas[2]"}, 8).contains("no numeric element of that name"));
        QVERIFY(refused({"lr", "lr[0]"}, 8).contains("no numeric element of that name"));
        for (const char* entry : {"betas[00]", "betas[]", "betas[0", "[0]", "betas[16]", "betas[0][1]", "betas]0["})
            QVERIFY2(refused({"lr", entry}, 8).contains("not an option name"), entry);
    }

    void everyTransactionRecordsTheScheduleAndItsEpoch_data()
    {
        QTest::addColumn<bool>("lr");
        QTest::addColumn<double>("value");
        QTest::addColumn<qint64>("epoch");  // -1: none
        QTest::addColumn<QString>("expected");
        QTest::newRow("lr missing") << false << 0.1 << qint64(1) << "optimizer/lr missing";
        QTest::newRow("lr not finite") << true << std::numeric_limits<double>::infinity() << qint64(1) << "a scheduled value is a finite number";
        QTest::newRow("lr NaN") << true << std::nan("") << qint64(1) << "a scheduled value is a finite number";
        QTest::newRow("epoch missing") << true << 0.1 << qint64(-1) << "schedule_epoch missing";
        QTest::newRow("epoch back") << true << 0.1 << qint64(2) << "schedule_epoch 2 after 3";
        QTest::newRow("epoch jump") << true << 0.1 << qint64(3 + (1 << 20) + 1) << "advances by at most 1048576";
    }
    void everyTransactionRecordsTheScheduleAndItsEpoch()
    {
        QFETCH(bool, lr);
        QFETCH(double, value);
        QFETCH(qint64, epoch);
        QFETCH(QString, expected);
        const RootRecord root = reparsed(scheduledRoot());
        RecordedOptimizerOptions rule(root);
        QCOMPARE(violationOf(rule, *transaction(root, 0, {{"lr", {0.1, 0.2}}}, 3)), QString());
        std::vector<std::pair<std::string, std::vector<double>>> options;
        if (lr)
            options.push_back({"lr", {value, 0.2}});
        const QString message =
            violationOf(rule, *transaction(root, 1, options, epoch < 0 ? std::nullopt : std::optional<std::uint64_t>(static_cast<std::uint64_t>(epoch))));
        QVERIFY2(message.contains(expected), qPrintable(message));
    }

    void anEpochWithoutASchedulerIsRefused()
    {
        const RootRecord root = reparsed(scheduledRoot("", 0));
        RecordedOptimizerOptions rule(root);
        QCOMPARE(violationOf(rule, *transaction(root, 0, {{"lr", {0.3, 0.2}}}, std::nullopt)), QString());
        const QString message = violationOf(rule, *transaction(root, 1, {{"lr", {0.3, 0.2}}}, 4));
        QVERIFY2(message.contains("names no scheduler"), qPrintable(message));
    }

    void asRecordedValuesAreNotCompared()
    {
        const RootRecord root = reparsed(scheduledRoot("", 0));
        schedule::ScheduleFollower follower(root, 2, 15);
        QCOMPARE(follower.kind(), std::string());
        follower.startAtRoot();
        QVERIFY(follower.follow(transaction(root, 0, {{"lr", {7.0, 0.2}}}, std::nullopt)->record).empty());
    }

    void aSchedulerTheAuditorCannotRecomputeIsUnverifiable()
    {
        const RootRecord root = reparsed(scheduledRoot(R"({"kind":"MyOwnLR","arguments":{},"base":{"lr":[0.1,0.2]}})", 0));
        schedule::ScheduleFollower follower(root, 2, 15);
        follower.startAtRoot();
        const auto comparisons = follower.follow(transaction(root, 0, {{"lr", {0.1, 0.2}}}, 0)->record);
        QCOMPARE(comparisons.size(), std::size_t(1));
        QCOMPARE(comparisons[0].verdict, Verdict::Unverifiable);
        QVERIFY2(comparisons[0].note.find("MyOwnLR") != std::string::npos, comparisons[0].note.c_str());
    }

    void aValueOffTheScheduleIsDivergedOnceNamingIt()
    {
        // StepLR(step_size=2, gamma=0.5) from base rates 0.1 and 0.2: epochs 0, 1 keep them,
        // epoch 2 halves them.
        const RootRecord root = reparsed(scheduledRoot());
        schedule::ScheduleFollower follower(root, 2, 15);
        QCOMPARE(follower.kind(), std::string("StepLR"));
        follower.startAtRoot();
        auto judged = [&](std::uint64_t index, std::vector<double> lr, std::uint64_t epoch) {
            const auto comparisons = follower.follow(transaction(root, index, {{"lr", lr}}, epoch)->record);
            return comparisons.at(0);
        };
        QCOMPARE(judged(0, {0.1, 0.2}, 0).verdict, Verdict::Exact);
        QCOMPARE(judged(1, {0.1, 0.2}, 1).verdict, Verdict::Exact);
        const TensorComparison off = judged(2, {0.05, 0.3}, 2);
        QCOMPARE(off.verdict, Verdict::Diverged);
        QVERIFY2(off.note.find("group 1 lr is 0.29999999999999999 in the transaction, but the StepLR schedule gives 0.10000000000000001 at scheduler epoch 2") !=
                     std::string::npos,
                 off.note.c_str());
        QCOMPARE(off.tensor, std::string("optimizer/lr"));
        // The next step goes on from what was recorded: one departure, one divergence.
        QCOMPARE(judged(3, {0.05, 0.3}, 3).verdict, Verdict::Exact);
        // Epochs skipped between transactions are all stepped: 3 -> 5 passes epoch 4, which halves.
        QCOMPARE(judged(4, {0.025, 0.15}, 5).verdict, Verdict::Exact);
    }

    void aValueWhereTorchsStepRaisesIsDiverged()
    {
        // ConstantLR(factor=0) divides by zero at total_iters, where torch raises: no honest
        // run recorded a rate there.
        const RootRecord root = reparsed(scheduledRoot(R"({"kind":"ConstantLR","arguments":{"factor":0.0,"total_iters":2},"base":{"lr":[0.1,0.2]}})"));
        schedule::ScheduleFollower follower(root, 2, 15);
        QCOMPARE(follower.kind(), std::string("ConstantLR"));
        follower.startAtRoot();
        QCOMPARE(follower.follow(transaction(root, 0, {{"lr", {0.0, 0.0}}}, 0)->record).at(0).verdict, Verdict::Exact);
        const TensorComparison raised = follower.follow(transaction(root, 1, {{"lr", {0.1, 0.2}}}, 2)->record).at(0);
        QCOMPARE(raised.verdict, Verdict::Diverged);
        QVERIFY2(raised.note.find("torch's step raises there") != std::string::npos, raised.note.c_str());
    }

    void scheduleInputsAreReadSince19WithASchedulerOnly()
    {
        const RootRecord root = reparsed(scheduledRoot(kPlateau));
        const auto t = transaction(root, 0, {{"lr", {0.1, 0.2}}}, 1, {{2.5}, {2.5, 0, 0}});
        QCOMPARE(t->record.scheduleMetricValues(), std::vector<double>({2.5}));
        QCOMPARE(t->record.scheduleStateValues(), std::vector<double>({2.5, 0, 0}));
        // Without a scheduler, and before 1.9, the tensors are no tensors of the format.
        QVERIFY2(parseErrorOf(reparsed(scheduledRoot("", 0)), {{2.5}, {}}).contains("unexpected tensor \"schedule/metrics\""),
                 qPrintable(parseErrorOf(reparsed(scheduledRoot("", 0)), {{2.5}, {}})));
        RootRecord older = reparsed(scheduledRoot(kPlateau));
        older.formatMinor = 8;
        QVERIFY(parseErrorOf(older, {{}, {1, 0, 0}}).contains("unexpected tensor \"schedule/state\""));
        std::vector<double> tooLong(tape::kMaxSchedulerStateValues + 1, 0.0);
        QVERIFY(parseErrorOf(root, {{}, tooLong}).contains("schedule/state: expected F64 [n], n from 1 to 16"));
    }

    void aPlateauStepsFromTheRecordedMetricsAndState()
    {
        const RootRecord root = reparsed(scheduledRoot(kPlateau));
        schedule::ScheduleFollower follower(root, 2, 15);
        QCOMPARE(follower.kind(), std::string("ReduceLROnPlateau"));
        QVERIFY(follower.readsMetric());
        follower.startAtRoot();
        auto follow = [&](std::uint64_t index, std::vector<double> lr, std::uint64_t epoch, schedule::SchedulerInputs inputs) {
            return follower.follow(transaction(root, index, {{"lr", lr}}, epoch, inputs)->record);
        };
        auto worst = [](const std::vector<TensorComparison>& comparisons) {
            Verdict verdict = Verdict::Exact;
            for (const TensorComparison& c : comparisons)
                verdict = std::max(verdict, c.verdict);
            return verdict;
        };
        // Epoch 0, no step: the root's rates and state.
        QCOMPARE(worst(follow(0, {0.1, 0.2}, 0, {{}, {INFINITY, 0, 0}})), Verdict::Exact);
        // 1.0 is better than inf; 1.0 again is a bad step (1 ≤ patience); a third is one too many:
        // both rates halve, group 1's no lower than its min_lr 0.15, and a cooldown starts.
        QCOMPARE(worst(follow(1, {0.1, 0.2}, 2, {{1.0, 1.0}, {1.0, 1, 0}})), Verdict::Exact);
        QCOMPARE(worst(follow(2, {0.05, 0.15}, 3, {{1.0}, {1.0, 0, 1}})), Verdict::Exact);
        // A step in cooldown counts no bad step.
        QCOMPARE(worst(follow(3, {0.05, 0.15}, 4, {{1.0}, {1.0, 0, 0}})), Verdict::Exact);
        // A state off the rule is diverged, naming both states.
        const auto forged = follow(4, {0.05, 0.15}, 5, {{1.0}, {1.0, 0, 0}});
        QCOMPARE(worst(forged), Verdict::Diverged);
        QCOMPARE(forged.back().tensor, std::string("schedule/state"));
        QVERIFY2(forged.back().note.find("state after scheduler epoch 5 is best 1, num_bad_epochs 1, cooldown_counter 0") != std::string::npos,
                 forged.back().note.c_str());
        // Metrics that do not number the epochs stepped.
        const auto counted = follow(5, {0.05, 0.15}, 7, {{1.0}, {1.0, 0, 0}});
        QCOMPARE(counted.at(0).tensor, std::string("schedule/metrics"));
        QVERIFY2(counted.at(0).note.find("records 1 metrics for the 2 scheduler steps") != std::string::npos, counted.at(0).note.c_str());
        // A scheduler that reads no metric has none to record.
        const RootRecord step = reparsed(scheduledRoot());
        schedule::ScheduleFollower stepLR(step, 2, 15);
        stepLR.startAtRoot();
        const auto extra = stepLR.follow(transaction(step, 0, {{"lr", {0.1, 0.2}}}, 0, {{}, {1.0}})->record);
        QCOMPARE(extra.at(0).verdict, Verdict::Diverged);
        QVERIFY2(extra.at(0).note.find("StepLR reads no metric") != std::string::npos, extra.at(0).note.c_str());
    }

    void aSegmentStartsFromTheTransactionBeforeIt()
    {
        const RootRecord root = reparsed(scheduledRoot());
        schedule::ScheduleFollower follower(root, 2, 15);
        follower.startAfter(transaction(root, 5, {{"lr", {0.025, 0.05}}}, 5)->record);
        QCOMPARE(follower.follow(transaction(root, 6, {{"lr", {0.0125, 0.025}}}, 6)->record).at(0).verdict, Verdict::Exact);
        QCOMPARE(follower.follow(transaction(root, 7, {{"lr", {0.0125, 0.025}}}, 7)->record).at(0).verdict, Verdict::Exact);
        QCOMPARE(follower.follow(transaction(root, 8, {{"lr", {0.0125, 0.025}}}, 8)->record).at(0).verdict, Verdict::Diverged);
    }
};

QTEST_APPLESS_MAIN(TestScheduleFormat)
#include "test_schedule_format.moc"
