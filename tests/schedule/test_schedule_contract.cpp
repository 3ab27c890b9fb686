// The schedule contracts' own properties: every refusal names the member at fault, the steps
// fall where torch's do (a StepLR decays exactly at multiples of step_size, a repeated
// MultiStepLR milestone decays once per listing, warm restarts come at T_0, T_0 + T_0 * T_mult),
// a step torch cannot take has no value, and any epoch costs no more than a few operations.
// Their bits against torch's are the Python oracle's (tests/python/test_schedule_oracle.py).

#include <QElapsedTimer>
#include <QtTest/QtTest>

#include <cmath>
#include <memory>
#include <string>

#include "zkdv/schedule/schedule_contract.h"

using namespace zkdv::schedule;

namespace {

std::unique_ptr<ScheduleContract> contract(const std::string& kind, const nlohmann::json& arguments, std::vector<double> base = {0.1, 0.02},
                                           int major = 2, int minor = 15)
{
    const std::size_t groups = base.size();
    return makeScheduleContract({{"kind", kind}, {"arguments", arguments}, {"base", {{"lr", base}}}}, groups, major, minor);
}

// The rates after steps 0 .. last, each from the one before, as the auditor chains them.
std::vector<ScheduledValues> chain(const ScheduleContract& c, std::uint64_t last)
{
    std::vector<ScheduledValues> values;
    ScheduledValues current = c.base();
    for (std::uint64_t e = 0; e <= last; ++e)
        values.push_back(current = c.step(e, current));
    return values;
}

std::string refusal(const nlohmann::json& description, std::size_t groups = 1, int major = 2, int minor = 15)
{
    try {
        makeScheduleContract(description, groups, major, minor);
    } catch (const ScheduleError& error) {
        return error.what();
    }
    return "(accepted)";
}

nlohmann::json described(const std::string& kind, const nlohmann::json& arguments)
{
    return {{"kind", kind}, {"arguments", arguments}, {"base", {{"lr", {0.1}}}}};
}

}  // namespace

class TestScheduleContract : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void everyRefusalNamesTheMember_data()
    {
        QTest::addColumn<QString>("description");
        QTest::addColumn<int>("minor");
        QTest::addColumn<QString>("member");
        auto row = [](const char* name, const nlohmann::json& description, const char* member, int minor = 15) {
            QTest::newRow(name) << QString::fromStdString(description.dump()) << minor << QString::fromUtf8(member);
        };
        row("not an object", nlohmann::json::array(), "kind");
        row("an unknown top-level member", {{"kind", "StepLR"}, {"arguments", {{"step_size", 2}, {"gamma", 0.1}}}, {"base", {{"lr", {0.1}}}}, {"epoch", 3}},
            "member epoch");
        row("a kind that is no string", {{"kind", 7}}, "kind");
        row("an unknown kind", described("WarmupLR", nlohmann::json::object()), "kind WarmupLR");
        row("no arguments", {{"kind", "ExponentialLR"}, {"base", {{"lr", {0.1}}}}}, "arguments");
        row("a missing argument", described("StepLR", {{"step_size", 3}}), "arguments.gamma");
        row("a misspelt argument", described("StepLR", {{"step_size", 3}, {"gamma", 0.1}, {"gama", 0.1}}), "arguments.gama");
        row("verbose is not an argument", described("ExponentialLR", {{"gamma", 0.9}, {"verbose", false}}), "arguments.verbose");
        row("last_epoch is not an argument", described("ExponentialLR", {{"gamma", 0.9}, {"last_epoch", -1}}), "arguments.last_epoch");
        row("a string gamma", described("ExponentialLR", {{"gamma", "0.9"}}), "arguments.gamma");
        row("a boolean gamma", described("ExponentialLR", {{"gamma", true}}), "arguments.gamma");
        row("a null gamma", described("ExponentialLR", {{"gamma", nullptr}}), "arguments.gamma");
        row("a huge integer", described("StepLR", {{"step_size", 9007199254740993LL}, {"gamma", 0.1}}), "arguments.step_size");
        row("a huge unsigned integer", described("StepLR", {{"step_size", 18446744073709551615ULL}, {"gamma", 0.1}}), "arguments.step_size");
        row("step_size 0", described("StepLR", {{"step_size", 0}, {"gamma", 0.1}}), "arguments.step_size");
        row("step_size 0.0", described("StepLR", {{"step_size", 0.0}, {"gamma", 0.1}}), "arguments.step_size");
        row("milestones not an array", described("MultiStepLR", {{"milestones", 3}, {"gamma", 0.1}}), "arguments.milestones");
        row("a milestone not a number", described("MultiStepLR", {{"milestones", {3, nullptr}}, {"gamma", 0.1}}), "arguments.milestones");
        row("factor above 1", described("ConstantLR", {{"factor", 1.01}, {"total_iters", 5}}), "arguments.factor");
        row("factor below 0", described("ConstantLR", {{"factor", -0.5}, {"total_iters", 5}}), "arguments.factor");
        row("a string total_iters", described("ConstantLR", {{"factor", 0.5}, {"total_iters", "5"}}), "arguments.total_iters");
        row("start_factor 0 on torch 2", described("LinearLR", {{"start_factor", 0.0}, {"end_factor", 1.0}, {"total_iters", 5}}), "arguments.start_factor");
        row("start_factor above 1", described("LinearLR", {{"start_factor", 1.5}, {"end_factor", 1.0}, {"total_iters", 5}}), "arguments.start_factor");
        row("start_factor below 0 on torch 1.13", described("LinearLR", {{"start_factor", -0.1}, {"end_factor", 1.0}, {"total_iters", 5}}),
            "arguments.start_factor", 13);
        row("end_factor above 1", described("LinearLR", {{"start_factor", 0.5}, {"end_factor", 2}, {"total_iters", 5}}), "arguments.end_factor");
        row("a missing power", described("PolynomialLR", {{"total_iters", 5}}), "arguments.power");
        row("T_max 0", described("CosineAnnealingLR", {{"T_max", 0}, {"eta_min", 0}}), "arguments.T_max");
        row("an infinite eta_min", described("CosineAnnealingLR", {{"T_max", 10}, {"eta_min", INFINITY}}), "arguments.eta_min");
        row("T_0 a float", described("CosineAnnealingWarmRestarts", {{"T_0", 10.0}, {"T_mult", 1}, {"eta_min", 0}}), "arguments.T_0");
        row("T_0 0", described("CosineAnnealingWarmRestarts", {{"T_0", 0}, {"T_mult", 1}, {"eta_min", 0}}), "arguments.T_0");
        row("T_mult 0", described("CosineAnnealingWarmRestarts", {{"T_0", 10}, {"T_mult", 0}, {"eta_min", 0}}), "arguments.T_mult");
        row("T_mult a float", described("CosineAnnealingWarmRestarts", {{"T_0", 10}, {"T_mult", 2.0}, {"eta_min", 0}}), "arguments.T_mult");
        row("no base", {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.9}}}}, "base.lr");
        row("base.lr not an array", {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.9}}}, {"base", {{"lr", 0.1}}}}, "base.lr");
        row("base.lr of two groups", {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.9}}}, {"base", {{"lr", {0.1, 0.2}}}}}, "base.lr");
        row("a non-finite base", {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.9}}}, {"base", {{"lr", {NAN}}}}}, "base.lr[0]");
        row("a base of another option", {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.9}}}, {"base", {{"lr", {0.1}}, {"momentum", {0.9}}}}},
            "base.momentum");
        row("torch 1.12", described("ExponentialLR", {{"gamma", 0.9}}), "torch 1.12", 12);
        const nlohmann::json cycle = {{"max_lr", {0.25}}, {"min_lr", {1e-6}}, {"total_steps", 100}, {"phase_ends", {29.0, 99}},
                                      {"anneal_strategy", "cos"}, {"cycle_momentum", false}};
        auto with = [](nlohmann::json arguments, const char* name, const nlohmann::json& value) {
            arguments[name] = value;
            return arguments;
        };
        // cycle_momentum is false or what the constructor derived for the momentum it cycles.
        row("OneCycleLR cycle_momentum true", described("OneCycleLR", with(cycle, "cycle_momentum", true)), "arguments.cycle_momentum");
        row("OneCycleLR cycling another option", described("OneCycleLR", with(cycle, "cycle_momentum", {{"option", "betas[1]"}, {"max_momentum", {0.95}},
                                                                                                      {"base_momentum", {0.85}}})),
            "arguments.cycle_momentum");
        row("OneCycleLR momenta of two groups", described("OneCycleLR", with(cycle, "cycle_momentum", {{"option", "momentum"}, {"max_momentum", {0.95, 0.9}},
                                                                                                       {"base_momentum", {0.85}}})),
            "arguments.cycle_momentum");
        row("OneCycleLR a member too many", described("OneCycleLR", with(cycle, "cycle_momentum", {{"option", "momentum"}, {"max_momentum", {0.95}},
                                                                                                   {"base_momentum", {0.85}}, {"use_beta1", false}})),
            "arguments.cycle_momentum");
        row("OneCycleLR total_steps 0", described("OneCycleLR", with(cycle, "total_steps", 0)), "arguments.total_steps");
        row("OneCycleLR another strategy", described("OneCycleLR", with(cycle, "anneal_strategy", "cosine")), "arguments.anneal_strategy");
        row("OneCycleLR max_lr per group", described("OneCycleLR", with(cycle, "max_lr", {0.25, 0.5})), "arguments.max_lr");
        row("OneCycleLR four phases", described("OneCycleLR", with(cycle, "phase_ends", {9.0, 19.0, 29.0, 99})), "arguments.phase_ends");
        row("OneCycleLR ending elsewhere", described("OneCycleLR", with(cycle, "phase_ends", {29.0, 98})), "arguments.phase_ends");
        row("OneCycleLR without min_lr", described("OneCycleLR", [&] { nlohmann::json a = cycle; a.erase("min_lr"); return a; }()), "arguments.min_lr");
        const nlohmann::json warmup = {{"kind", "LinearLR"}, {"arguments", {{"start_factor", 0.1}, {"end_factor", 1.0}, {"total_iters", 5}}}};
        const nlohmann::json decay = {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.9}}}};
        row("schedulers not an array", described("SequentialLR", {{"schedulers", warmup}, {"milestones", {5}}}), "arguments.schedulers");
        row("no schedulers", described("ChainedScheduler", {{"schedulers", nlohmann::json::array()}}), "arguments.schedulers");
        row("seventeen schedulers", described("ChainedScheduler", {{"schedulers", std::vector<nlohmann::json>(17, decay)}}), "arguments.schedulers");
        row("a milestone too few", described("SequentialLR", {{"schedulers", {warmup, decay}}, {"milestones", nlohmann::json::array()}}),
            "arguments.milestones");
        row("milestone 0", described("SequentialLR", {{"schedulers", {warmup, decay}}, {"milestones", {0}}}), "arguments.milestones");
        row("a float milestone", described("SequentialLR", {{"schedulers", {warmup, decay}}, {"milestones", {5.0}}}), "arguments.milestones");
        row("milestones out of order", described("SequentialLR", {{"schedulers", {warmup, decay, decay}}, {"milestones", {9, 5}}}),
            "arguments.milestones");
        row("a child of an unknown kind", described("ChainedScheduler", {{"schedulers", {decay, {{"kind", "LambdaLR"}, {"arguments", {}}}}}}),
            "arguments.schedulers[1]: kind LambdaLR");
        row("a composite child", described("ChainedScheduler", {{"schedulers", {described("ChainedScheduler", {{"schedulers", {decay}}})}}}),
            "arguments.schedulers[0]");
        row("a child with its own base", described("SequentialLR", {{"schedulers", {described("ExponentialLR", {{"gamma", 0.9}})}}, {"milestones", nlohmann::json::array()}}),
            "arguments.schedulers[0]: member base");
        const nlohmann::json plateau = {{"mode", "min"}, {"factor", 0.5}, {"patience", 2}, {"threshold", 1e-4}, {"threshold_mode", "rel"},
                                        {"cooldown", 0}, {"min_lr", {0.0}}, {"eps", 1e-8}};
        const nlohmann::json fresh = {{"best", nullptr}, {"num_bad_epochs", 0}, {"cooldown_counter", 0}};
        auto plateauWith = [&](const char* name, const nlohmann::json& value) {
            nlohmann::json d = described("ReduceLROnPlateau", plateau);
            d["arguments"][name] = value;
            d["state"] = fresh;
            return d;
        };
        row("a plateau without its state", described("ReduceLROnPlateau", plateau), "needs its state");
        row("a state where none is kept", [&] { nlohmann::json d = described("StepLR", {{"step_size", 2}, {"gamma", 0.5}}); d["state"] = fresh; return d; }(),
            "StepLR keeps no state");
        row("a plateau's unknown mode", plateauWith("mode", "lowest"), "arguments.mode");
        row("a plateau's factor of 1", plateauWith("factor", 1.0), "arguments.factor");
        row("a plateau's float patience", plateauWith("patience", 2.5), "arguments.patience");
        row("a plateau's min_lr per group", plateauWith("min_lr", {0.0, 0.0}), "arguments.min_lr");
        row("a plateau's unknown threshold mode", plateauWith("threshold_mode", "log"), "arguments.threshold_mode");
        row("a plateau's state of other members", [&] { nlohmann::json d = plateauWith("factor", 0.5); d["state"] = {{"best", 1.0}}; return d; }(),
            "the description's state must be");
        row("a plateau in a composite", described("SequentialLR", {{"schedulers", {{{"kind", "ReduceLROnPlateau"}, {"arguments", plateau}}}}, {"milestones", nlohmann::json::array()}}),
            "arguments.schedulers[0]: kind ReduceLROnPlateau");
        row("a child's bad argument", described("SequentialLR", {{"schedulers", {warmup, {{"kind", "StepLR"}, {"arguments", {{"step_size", 0}, {"gamma", 0.5}}}}}}, {"milestones", {5}}}),
            "SequentialLR: arguments.schedulers[1]: StepLR: arguments.step_size");
    }

    void everyRefusalNamesTheMember()
    {
        QFETCH(QString, description);
        QFETCH(int, minor);
        QFETCH(QString, member);
        const int major = minor == 15 ? 2 : 1;
        const QString message = QString::fromStdString(refusal(nlohmann::json::parse(description.toStdString()), 1, major, minor));
        QVERIFY2(message != QLatin1String("(accepted)"), qPrintable(description));
        QVERIFY2(message.contains(member), qPrintable(message));
    }

    void anUnknownKindListsTheKnownOnes()
    {
        const std::string message = refusal(described("WarmupLR", nlohmann::json::object()));
        for (const std::string& kind : scheduleKinds())
            QVERIFY2(message.find(kind) != std::string::npos, message.c_str());
        QCOMPARE(scheduleKinds().size(), std::size_t(13));
    }

    void aPlateauReadsItsMetricAndKeepsItsState()
    {
        nlohmann::json d = described("ReduceLROnPlateau", {{"mode", "max"}, {"factor", 0.1}, {"patience", 0}, {"threshold", 0.5},
                                                           {"threshold_mode", "abs"}, {"cooldown", 2}, {"min_lr", {0.0}}, {"eps", 1e-8}});
        d["base"] = {{"lr", {0.1}}};
        d["state"] = {{"best", 3.0}, {"num_bad_epochs", 0}, {"cooldown_counter", 0}};
        const auto c = makeScheduleContract(d, 1, 2, 15);
        QVERIFY(c->readsMetric());
        QCOMPARE(c->initialState(), (SchedulerState{3.0, 0, 0}));
        QVERIFY_THROWS_EXCEPTION(ScheduleError, c->step(1, ScheduledValues{{0.1}}));
        SchedulerState state = c->initialState();
        // 3.4 is not better than 3 by the absolute 0.5: one bad step, more than patience 0.
        ScheduledValues lr = c->stepWithMetric(1, {{0.1}}, 3.4, state);
        QCOMPARE(lr, (ScheduledValues{{0.1 * 0.1}}));
        QCOMPARE(state, (SchedulerState{3.0, 0, 2}));
        // In cooldown a bad step counts for nothing; 3.6 is better and becomes the best.
        lr = c->stepWithMetric(2, lr, 1.0, state);
        QCOMPARE(state, (SchedulerState{3.0, 0, 1}));
        lr = c->stepWithMetric(3, lr, 3.6, state);
        QCOMPARE(state, (SchedulerState{3.6, 0, 0}));
        QCOMPARE(lr, (ScheduledValues{{0.1 * 0.1}}));
        QVERIFY(c->describeState(state).find("best 3.6000000000000001, num_bad_epochs 0, cooldown_counter 0") != std::string::npos);
        // A state the tape gave that is not the scheduler's is no step.
        SchedulerState broken{1.0, 0.5, 0};
        QVERIFY_THROWS_EXCEPTION(ScheduleError, c->stepWithMetric(4, lr, 1.0, broken));
        // The other kinds read no metric.
        QVERIFY(!contract("ExponentialLR", {{"gamma", 0.5}})->readsMetric());
    }

    void sequentialLrHandsOverAtItsMilestonesFromTheBase()
    {
        // ExponentialLR for epochs 0-3, then CosineAnnealingLR restarted at its closed form
        // (eta_min + (base - eta_min)), then StepLR from 8 on with its own epochs counted from 0.
        const nlohmann::json exponential = {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.5}}}};
        const nlohmann::json cosine = {{"kind", "CosineAnnealingLR"}, {"arguments", {{"T_max", 10}, {"eta_min", 0.003}}}};
        const nlohmann::json step = {{"kind", "StepLR"}, {"arguments", {{"step_size", 2}, {"gamma", 0.1}}}};
        const auto c = contract("SequentialLR", {{"schedulers", {exponential, cosine, step}}, {"milestones", {4, 8}}});
        QVERIFY(c->usesMathLibrary());
        const std::vector<ScheduledValues> v = chain(*c, 12);
        QCOMPARE(v[0][0][0], 0.1);
        QCOMPARE(v[3][0][0], 0.1 * 0.5 * 0.5 * 0.5);
        QCOMPARE(v[4][0][0], 0.003 + (0.1 - 0.003) * (1 + std::cos(0.0)) / 2);
        QCOMPARE(v[4][0][1], 0.003 + (0.02 - 0.003) * (1 + std::cos(0.0)) / 2);
        QVERIFY(v[5][0][0] < v[4][0][0]);
        QCOMPARE(v[8][0][0], 0.1);  // StepLR's closed form at 0 is the base
        QCOMPARE(v[9][0][0], 0.1);
        QCOMPARE(v[10][0][0], 0.1 * 0.1);
        QCOMPARE(v[11][0][0], v[10][0][0]);
        QCOMPARE(v[12][0][0], 0.1 * 0.1 * 0.1);
    }

    void oneCycleLrHasNoStepPastItsTotal()
    {
        const auto c = contract("OneCycleLR", {{"max_lr", {0.25, 0.05}}, {"min_lr", {0.01 / 1e4, 0.002 / 1e4}}, {"total_steps", 10},
                                               {"phase_ends", {2.0, 9}}, {"anneal_strategy", "linear"}, {"cycle_momentum", false}},
                              {0.01, 0.002});
        QVERIFY(!c->usesMathLibrary());
        const std::vector<ScheduledValues> v = chain(*c, 10);
        QCOMPARE(v[0][0][0], 0.01);
        QCOMPARE(v[2][0][0], 0.25);  // the peak, at the first phase's end
        QCOMPARE(v[2][0][1], 0.05);
        QVERIFY(v[9][0][0] < v[3][0][0]);
        QVERIFY_THROWS_EXCEPTION(ScheduleError, c->step(11, v[10]));
    }

    // With cycle_momentum the momentum moves against the rate: down to base_momentum at the
    // peak, back to max_momentum at the end; it starts from max_momentum, the constructor's.
    void oneCycleLrCyclesTheMomentumAgainstTheRate()
    {
        const nlohmann::json momentum = {{"option", "betas[0]"}, {"max_momentum", {0.95, 0.9}}, {"base_momentum", {0.85, 0.8}}};
        const auto c = contract("OneCycleLR", {{"max_lr", {0.25, 0.05}}, {"min_lr", {0.01 / 1e4, 0.002 / 1e4}}, {"total_steps", 10},
                                               {"phase_ends", {2.0, 9}}, {"anneal_strategy", "linear"}, {"cycle_momentum", momentum}},
                                {0.01, 0.002});
        QCOMPARE(c->options(), (std::vector<std::string>{"lr", "betas[0]"}));
        QCOMPARE(c->base(), (ScheduledValues{{0.01, 0.002}, {0.95, 0.9}}));
        const std::vector<ScheduledValues> v = chain(*c, 9);
        QCOMPARE(v[0][1][0], 0.95);
        // (end - start) * pct + start, in Python's order: within a unit or two of the ends.
        QVERIFY(std::fabs(v[2][1][0] - 0.85) < 1e-15);  // at the peak of the rate
        QVERIFY(std::fabs(v[2][1][1] - 0.8) < 1e-15);
        QVERIFY(std::fabs(v[9][1][0] - 0.95) < 1e-15);
        QVERIFY(v[5][1][0] > 0.85 && v[5][1][0] < 0.95);
        QVERIFY_THROWS_EXCEPTION(ScheduleError, c->step(1, ScheduledValues{{0.01, 0.002}}));  // lr alone is not its values
        // A composite's schedulers move lr only.
        const nlohmann::json child = {{"kind", "OneCycleLR"}, {"arguments", {{"max_lr", {0.25, 0.05}}, {"min_lr", {1e-6, 2e-7}}, {"total_steps", 10},
                                                                            {"phase_ends", {2.0, 9}}, {"anneal_strategy", "linear"},
                                                                            {"cycle_momentum", momentum}}}};
        try {
            contract("SequentialLR", {{"schedulers", {child}}, {"milestones", nlohmann::json::array()}}, {0.01, 0.002});
            QFAIL("a composite took a scheduler that cycles the momentum");
        } catch (const ScheduleError& error) {
            QVERIFY2(QString(error.what()).contains("move lr only"), error.what());
        }
    }

    // CyclicLR climbs from the base to max_lr over step_ratio of each cycle and back;
    // triangular2 halves the height every cycle.
    void cyclicLrClimbsAndFallsByItsCycle()
    {
        const auto c = contract("CyclicLR", {{"max_lr", {0.1, 0.05}}, {"total_size", 4.0}, {"step_ratio", 0.5}, {"mode", "triangular2"},
                                             {"gamma", 1.0}, {"cycle_momentum", false}},
                                {0.02, 0.01});
        QVERIFY(c->usesMathLibrary());
        const std::vector<ScheduledValues> v = chain(*c, 8);
        QCOMPARE(v[0][0][0], 0.02);
        QCOMPARE(v[2][0][0], 0.02 + (0.1 - 0.02) * 1.0);  // the first peak
        QCOMPARE(v[4][0][0], 0.02);
        QCOMPARE(v[6][0][0], 0.02 + (0.1 - 0.02) * 1.0 * 0.5);  // the second, half as high
        const auto momentum = contract("CyclicLR", {{"max_lr", {0.1, 0.05}}, {"total_size", 4.0}, {"step_ratio", 0.5}, {"mode", "triangular"},
                                                    {"gamma", 1.0}, {"cycle_momentum", {{"option", "momentum"}, {"max_momentum", {0.9, 0.9}},
                                                                                         {"base_momentum", {0.8, 0.7}}}}},
                                       {0.02, 0.01});
        QCOMPARE(momentum->options(), (std::vector<std::string>{"lr", "momentum"}));
        const std::vector<ScheduledValues> m = chain(*momentum, 4);
        QCOMPARE(m[0][1][0], 0.9);
        QCOMPARE(m[2][1][1], 0.9 - (0.9 - 0.7) * 1.0 * 1.0);  // at the rate's peak
        QVERIFY_THROWS_EXCEPTION(ScheduleError, contract("CyclicLR", {{"max_lr", {0.1, 0.05}}, {"total_size", 4.0}, {"step_ratio", 0.5},
                                                                      {"mode", "triangular"}, {"gamma", 2}, {"cycle_momentum", false}},
                                                         {0.02, 0.01}));
    }

    void chainedSchedulerStepsEachInTurn()
    {
        const nlohmann::json constant = {{"kind", "ConstantLR"}, {"arguments", {{"factor", 0.5}, {"total_iters", 3}}}};
        const nlohmann::json exponential = {{"kind", "ExponentialLR"}, {"arguments", {{"gamma", 0.9}}}};
        const auto c = contract("ChainedScheduler", {{"schedulers", {constant, exponential}}});
        QVERIFY(!c->usesMathLibrary());
        const std::vector<ScheduledValues> v = chain(*c, 4);
        QCOMPARE(v[0][0][0], 0.1 * 0.5);
        QCOMPARE(v[1][0][0], 0.1 * 0.5 * 0.9);
        QCOMPARE(v[3][0][0], 0.1 * 0.5 * 0.9 * 0.9 * (1.0 / 0.5) * 0.9);
        QCOMPARE(v[4][0][0], v[3][0][0] * 0.9);
    }

    void everyKindMovesLrAlone()
    {
        const auto c = contract("ExponentialLR", {{"gamma", 0.5}});
        QCOMPARE(c->kind(), std::string("ExponentialLR"));
        QCOMPARE(c->options(), std::vector<std::string>{"lr"});
        QCOMPARE(c->base(), (ScheduledValues{{0.1, 0.02}}));
        QVERIFY_THROWS_EXCEPTION(ScheduleError, c->step(1, ScheduledValues{{0.1}}));
        QVERIFY_THROWS_EXCEPTION(ScheduleError, c->step(1, ScheduledValues{}));
    }

    void stepLrDecaysExactlyAtMultiplesOfStepSize()
    {
        for (const nlohmann::json& stepSize : {nlohmann::json(7), nlohmann::json(-7), nlohmann::json(7.0)}) {
            const auto values = chain(*contract("StepLR", {{"step_size", stepSize}, {"gamma", 0.5}}), 100);
            QCOMPARE(values[0], (ScheduledValues{{0.1, 0.02}}));
            for (std::uint64_t e = 1; e <= 100; ++e) {
                const bool decays = e % 7 == 0;
                QVERIFY2((values[e][0][0] != values[e - 1][0][0]) == decays, qPrintable(QString::number(e)));
                if (decays)
                    QCOMPARE(values[e][0][1], values[e - 1][0][1] * 0.5);
            }
        }
        // A float step_size takes Python's float modulo: 2.5 divides 5, 10, … and no other epoch.
        const auto values = chain(*contract("StepLR", {{"step_size", 2.5}, {"gamma", 0.5}}), 20);
        for (std::uint64_t e = 1; e <= 20; ++e)
            QCOMPARE(values[e][0][0] != values[e - 1][0][0], e % 5 == 0);
    }

    void aRepeatedMilestoneDecaysOncePerListing()
    {
        const auto values = chain(*contract("MultiStepLR", {{"milestones", {8, 3, 3, 5.0, 6.5}}, {"gamma", 0.5}}), 10);
        QCOMPARE(values[2][0][0], 0.1);
        QCOMPARE(values[3][0][0], 0.1 * std::pow(0.5, 2.0));  // listed twice: gamma ** 2, once
        QCOMPARE(values[4][0][0], values[3][0][0]);
        QCOMPARE(values[5][0][0], values[3][0][0] * 0.5);     // 5.0 is the Counter key 5
        QCOMPARE(values[7][0][0], values[5][0][0]);           // 6.5 is no epoch
        QCOMPARE(values[8][0][0], values[5][0][0] * 0.5);
        // 2 and 2.0 are one key; an int gamma's power is Python's exact int power.
        const auto merged = chain(*contract("MultiStepLR", {{"milestones", {2, 2.0, 2}}, {"gamma", 3}}), 2);
        QCOMPARE(merged[2][0][0], 0.1 * 27.0);
        // A milestone at 0 decays the constructor's step.
        QCOMPARE(chain(*contract("MultiStepLR", {{"milestones", {0}}, {"gamma", 0.5}}), 0)[0][0][0], 0.05);
        QVERIFY(contract("MultiStepLR", {{"milestones", {3, 3}}, {"gamma", 0.5}})->usesMathLibrary());
        QVERIFY(!contract("MultiStepLR", {{"milestones", {3, 4}}, {"gamma", 0.5}})->usesMathLibrary());
    }

    void warmRestartsComeAtT0AndT0PlusT0TimesTMult()
    {
        const auto c = contract("CosineAnnealingWarmRestarts", {{"T_0", 5}, {"T_mult", 2}, {"eta_min", 0.001}});
        const auto values = chain(*c, 80);
        for (std::uint64_t e = 0; e <= 80; ++e) {
            const bool restart = e == 0 || e == 5 || e == 15 || e == 35 || e == 75;
            QVERIFY2((values[e][0][0] == 0.1) == restart, qPrintable(QString::number(e)));
            QVERIFY(values[e][0][0] > 0.001 && values[e][0][0] <= 0.1);
        }
        QVERIFY(values[14][0][0] < values[13][0][0]);  // the second cycle is 10 long
        const auto flat = chain(*contract("CosineAnnealingWarmRestarts", {{"T_0", 4}, {"T_mult", 1}, {"eta_min", 0}}), 12);
        for (std::uint64_t e = 0; e <= 12; ++e)
            QCOMPARE(flat[e][0][0], flat[e % 4][0][0]);
    }

    void theConstructorsStepScalesOnlyWhereTorchsDoes()
    {
        auto first = [](const std::string& kind, const nlohmann::json& arguments) { return chain(*contract(kind, arguments), 0)[0][0][0]; };
        QCOMPARE(first("ConstantLR", {{"factor", 0.5}, {"total_iters", 3}}), 0.05);
        QCOMPARE(first("LinearLR", {{"start_factor", 0.25}, {"end_factor", 1.0}, {"total_iters", 3}}), 0.025);
        QCOMPARE(first("ExponentialLR", {{"gamma", 0.5}}), 0.1);
        QCOMPARE(first("PolynomialLR", {{"total_iters", 3}, {"power", 2.0}}), 0.1);
        QCOMPARE(first("CosineAnnealingLR", {{"T_max", 3}, {"eta_min", 0.0}}), 0.1);
        QCOMPARE(first("StepLR", {{"step_size", 1}, {"gamma", 0.5}}), 0.1);
    }

    void constantLrRestoresAtTotalItersOnly()
    {
        const auto values = chain(*contract("ConstantLR", {{"factor", 0.5}, {"total_iters", 4}}), 8);
        for (std::uint64_t e = 1; e <= 8; ++e)
            QCOMPARE(values[e][0][0] != values[e - 1][0][0], e == 4);
        QCOMPARE(values[4][0][0], 0.05 * (1.0 / 0.5));
        // A fractional total_iters is never an epoch: the factor stays.
        const auto kept = chain(*contract("ConstantLR", {{"factor", 0.5}, {"total_iters", 4.5}}), 8);
        QCOMPARE(kept[8][0][0], 0.05);
    }

    void aStepTorchCannotTakeHasNoValue()
    {
        // ConstantLR(factor=0): torch's step at total_iters computes 1.0 / 0.
        const auto constant = contract("ConstantLR", {{"factor", 0.0}, {"total_iters", 3}});
        const auto values = chain(*constant, 2);
        QVERIFY_THROWS_EXCEPTION(ScheduleError, constant->step(3, values[2]));
        // LinearLR(start_factor=0), which torch 1.13 takes: step 1 divides by zero.
        const auto linear = contract("LinearLR", {{"start_factor", 0.0}, {"end_factor", 1.0}, {"total_iters", 3}}, {0.1}, 1, 13);
        const ScheduledValues zero = linear->step(0, linear->base());
        QCOMPARE(zero[0][0], 0.0);
        try {
            linear->step(1, zero);
            QFAIL("a division by zero passed");
        } catch (const ScheduleError& error) {
            QVERIFY2(std::string(error.what()).find("LinearLR at epoch 1") != std::string::npos, error.what());
        }
        // total_iters 0: torch never reaches the division.
        const auto untouched = contract("LinearLR", {{"start_factor", 0.0}, {"end_factor", 1.0}, {"total_iters", 0}}, {0.1}, 1, 13);
        QCOMPARE(chain(*untouched, 5)[5][0][0], 0.0);
        // PolynomialLR with a negative power: 0.0 ** -1 at total_iters.
        const auto polynomial = contract("PolynomialLR", {{"total_iters", 2}, {"power", -1.0}});
        const auto before = chain(*polynomial, 1);
        QVERIFY_THROWS_EXCEPTION(ScheduleError, polynomial->step(2, before[1]));
    }

    void cosineAnnealingTakesTheHalfCycleBranchWherePythonsModuloIsZero()
    {
        // (e - 1 - T_max) % (2 T_max) == 0 at e = T_max + 1, 3 T_max + 1, …: there the rate rises
        // by (base - eta_min)(1 - cos(pi / T_max)) / 2 from eta_min, never dividing by 1 + cos(pi).
        const auto values = chain(*contract("CosineAnnealingLR", {{"T_max", 4}, {"eta_min", 0.0}}, {0.1}), 13);
        for (std::uint64_t e : {5, 13})
            QCOMPARE(values[e][0][0], values[e - 1][0][0] + 0.1 * (1.0 - std::cos(3.141592653589793 / 4.0)) / 2.0);
        for (double v : {values[4][0][0], values[12][0][0]})
            QVERIFY(std::abs(v) < 1e-15);
        QVERIFY(values[8][0][0] > 0.0999);
    }

    void anyEpochReturnsAtOnce()
    {
        const std::vector<std::pair<std::string, nlohmann::json>> kinds = {
            {"StepLR", {{"step_size", 3}, {"gamma", 0.5}}},
            {"StepLR", {{"step_size", 2.5}, {"gamma", 0.5}}},
            {"MultiStepLR", {{"milestones", {1000000000, 1000000000, 5}}, {"gamma", 0.5}}},
            {"ExponentialLR", {{"gamma", 0.5}}},
            {"ConstantLR", {{"factor", 0.5}, {"total_iters", 1000000000}}},
            {"LinearLR", {{"start_factor", 0.5}, {"end_factor", 1.0}, {"total_iters", 2000000000}}},
            {"PolynomialLR", {{"total_iters", 2000000000}, {"power", 2.0}}},
            {"CosineAnnealingLR", {{"T_max", 7}, {"eta_min", 0.0}}},
            {"CosineAnnealingLR", {{"T_max", 7.5}, {"eta_min", 0.0}}},
            {"CosineAnnealingWarmRestarts", {{"T_0", 1}, {"T_mult", 2}, {"eta_min", 0.0}}},
            {"CosineAnnealingWarmRestarts", {{"T_0", 3}, {"T_mult", 1}, {"eta_min", 0.0}}},
        };
        for (const auto& [kind, arguments] : kinds) {
            const auto c = contract(kind, arguments);
            QElapsedTimer timer;
            timer.start();
            for (std::uint64_t epoch : {std::uint64_t(1000000000), std::uint64_t(10000000), std::uint64_t(1) << 62, ~std::uint64_t(0)}) {
                const ScheduledValues next = c->step(epoch, ScheduledValues{{0.05, 0.01}});
                QVERIFY(std::isfinite(next[0][0]) && std::isfinite(next[0][1]));
            }
            // A loop over the epochs would take seconds; a step is a few operations.
            QVERIFY2(timer.elapsed() < 100, kind.c_str());
        }
    }

    void warmRestartsAtAHugeEpochStayInTheCycle()
    {
        // T_i passes 2^64 in the cycle that holds epoch 2^64 - 1 when T_0 = 3, T_mult = 3.
        const auto c = contract("CosineAnnealingWarmRestarts", {{"T_0", 3}, {"T_mult", 3}, {"eta_min", 0.0}}, {0.1});
        const double value = c->step(~std::uint64_t(0), c->base())[0][0];
        QVERIFY(value >= 0.0 && value <= 0.1);
    }

    void theMathLibraryIsNamedWhereAStepCallsIt()
    {
        QVERIFY(contract("CosineAnnealingLR", {{"T_max", 7}, {"eta_min", 0.0}})->usesMathLibrary());
        QVERIFY(contract("CosineAnnealingWarmRestarts", {{"T_0", 7}, {"T_mult", 1}, {"eta_min", 0.0}})->usesMathLibrary());
        QVERIFY(contract("PolynomialLR", {{"total_iters", 7}, {"power", 2}})->usesMathLibrary());
        QVERIFY(!contract("PolynomialLR", {{"total_iters", 7}, {"power", 1.0}})->usesMathLibrary());
        QVERIFY(!contract("StepLR", {{"step_size", 7}, {"gamma", 0.5}})->usesMathLibrary());
        QVERIFY(!contract("LinearLR", {{"start_factor", 0.5}, {"end_factor", 1.0}, {"total_iters", 5}})->usesMathLibrary());
    }
};

QTEST_APPLESS_MAIN(TestScheduleContract)
#include "test_schedule_contract.moc"
