// The bridge's semantics (the seed's OptimizerBridge), the registry, state packing and the
// refusals every contract shares.

#include <ATen/ATen.h>

#include <QtTest>

#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/optim/contract_registry.h"
#include "zkdv/optim/torch_release.h"
#include "zkdv/optim/optimizer_bridge.h"
#include "zkdv/tensor/torch_tensors.h"

using namespace zkdv;
using namespace zkdv::optim;

namespace {

std::vector<at::Tensor> makeParameters()
{
    at::manual_seed(3);
    return {at::randn({3, 4}), at::randn({5}), at::randn({3, 4}), at::randn({2})};
}

std::vector<at::Tensor> makeGradients(const std::vector<at::Tensor>& parameters)
{
    std::vector<at::Tensor> gradients;
    for (const at::Tensor& p : parameters)
        gradients.push_back(at::randn_like(p));
    return gradients;
}

OptimizerBridge sgdBridge(double lr = 0.1)
{
    ContractRegistry registry;
    return OptimizerBridge(registry.resolve("SGD"),
                           {BoundGroup{{0, 2}, {{"lr", lr}, {"momentum", 0.9}}}, BoundGroup{{3, 1}, {{"lr", lr / 2}, {"momentum", 0.5}}}}, 4);
}

template <typename F>
QString contractErrorOf(F&& call)
{
    try {
        call();
    } catch (const ContractError& error) {
        return QString::fromUtf8(error.what());
    }
    return {};
}

// A contract for a custom optimizer, as a user would register one.
class HalvingContract : public OptimizerContract {
public:
    std::string name() const override { return "Halving"; }
    GroupOptions defaults() const override { return {{"differentiable", false}}; }
    SlotState initialize(const at::Tensor&, const GroupOptions&) const override { return {}; }
    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>&, const std::vector<SlotState*>&,
                const GroupOptions&) const override
    {
        for (const at::Tensor& p : parameters)
            p.mul_(0.5);
    }
};

}  // namespace

class TestOptimizerBridge : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void transitionLeavesInputsUntouched();
    void transitionMatchesTheOrdinaryOptimizer();
    void parameterWithoutGradientIsUnchangedButBound();
    void stepInPlaceMatchesTransitionBitForBit_data();
    void stepInPlaceMatchesTransitionBitForBit();
    void groupsMustCoverTheModelExactly_data();
    void groupsMustCoverTheModelExactly();
    void bindByIdentityRefusesForeignTensors();
    void optionsChangedAfterSealingAreRefused();
    void scheduledOptionsAreTakenOthersRefused();
    void sharedRefusals_data();
    void sharedRefusals();
    void statePackingSharesContiguousBuffers();
    void registryResolvesByExactNameAndKeepsCustomContractsLocal();
};

void TestOptimizerBridge::transitionLeavesInputsUntouched()
{
    OptimizerBridge bridge = sgdBridge();
    std::vector<at::Tensor> parameters = makeParameters();
    std::vector<SlotState> state = bridge.initialState(parameters);
    auto first = bridge.transition(parameters, state, makeGradients(parameters));  // creates momentum buffers
    state = first.state;
    std::vector<at::Tensor> parameterCopies, stateCopies;
    for (const at::Tensor& p : parameters)
        parameterCopies.push_back(p.clone());
    for (const SlotState& s : state)
        for (const auto& entry : s)
            stateCopies.push_back(entry.second.clone());
    QVERIFY(!stateCopies.empty());

    auto next = bridge.transition(parameters, state, makeGradients(parameters));
    for (std::size_t i = 0; i < parameters.size(); ++i)
        QVERIFY(bitwiseEqual(parameters[i], parameterCopies[i]));
    std::size_t k = 0;
    for (const SlotState& s : state)
        for (const auto& entry : s)
            QVERIFY(bitwiseEqual(entry.second, stateCopies[k++]));
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        QVERIFY(next.deltas[i].abs().max().item<double>() > 0);
        QVERIFY(!bitwiseEqual(next.state[i].at("momentum_buffer"), state[i].at("momentum_buffer")));
    }
}

void TestOptimizerBridge::transitionMatchesTheOrdinaryOptimizer()
{
    // The same steps through transition() and through ContractOptimizer::step() agree bitwise.
    OptimizerBridge bridge = sgdBridge();
    std::vector<at::Tensor> parameters = makeParameters();
    std::vector<at::Tensor> live;
    for (const at::Tensor& p : parameters)
        live.push_back(p.clone());
    ContractRegistry registry;
    ContractOptimizer optimizer(registry.resolve("SGD"), {ParameterGroup{{live[0], live[2]}, {{"lr", 0.1}, {"momentum", 0.9}}},
                                                          ParameterGroup{{live[3], live[1]}, {{"lr", 0.05}, {"momentum", 0.5}}}});
    std::vector<SlotState> state = bridge.initialState(parameters);
    for (int step = 0; step < 5; ++step) {
        std::vector<at::Tensor> gradients = makeGradients(parameters);
        auto transition = bridge.transition(parameters, state, gradients);
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            parameters[i] = parameters[i] + transition.deltas[i];
            live[i].mutable_grad() = gradients[i];
        }
        state = transition.state;
        optimizer.step();
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            // p + (p' - p) may round differently from p' itself, so compare the states and
            // the parameters to within one rounding of the addition.
            QVERIFY(bitwiseEqual(state[i].at("momentum_buffer"), optimizer.state(live[i]).at("momentum_buffer")));
            QVERIFY(at::allclose(parameters[i], live[i], 0, 1e-6));
        }
    }
}

void TestOptimizerBridge::parameterWithoutGradientIsUnchangedButBound()
{
    OptimizerBridge bridge = sgdBridge();
    std::vector<at::Tensor> parameters = makeParameters();
    std::vector<SlotState> state = bridge.initialState(parameters);
    std::vector<at::Tensor> gradients = makeGradients(parameters);
    gradients[2] = at::Tensor();
    auto transition = bridge.transition(parameters, state, gradients);
    QCOMPARE(transition.deltas.size(), parameters.size());
    QVERIFY(transition.deltas[2].defined());
    QCOMPARE(transition.deltas[2].abs().max().item<double>(), 0.0);
    QVERIFY(transition.state[2].empty());  // no step, so SGD's lazy momentum buffer does not exist yet
    QVERIFY(transition.deltas[0].abs().max().item<double>() > 0);
}

void TestOptimizerBridge::stepInPlaceMatchesTransitionBitForBit_data()
{
    QTest::addColumn<QString>("contract");
    QTest::addColumn<QString>("options");
    QTest::newRow("SGD momentum") << "SGD" << R"({"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01})";
    QTest::newRow("Adam") << "Adam" << R"({"lr": 0.01, "amsgrad": true})";
    QTest::newRow("RMSprop") << "RMSprop" << R"({"lr": 0.01, "momentum": 0.5, "centered": true})";
}

void TestOptimizerBridge::stepInPlaceMatchesTransitionBitForBit()
{
    // The recorder steps the model's own tensors; the replay computes transition() on copies.
    // Both must produce the same bits, or an honest tape would not replay exact.
    QFETCH(QString, contract);
    QFETCH(QString, options);
    ContractRegistry registry;
    const GroupOptions parsed = GroupOptions::parse(options.toStdString());
    OptimizerBridge bridge(registry.resolve(contract.toStdString()), {BoundGroup{{0, 2}, parsed}, BoundGroup{{3, 1}, parsed}}, 4);
    std::vector<at::Tensor> functional = makeParameters(), inPlace;
    for (const at::Tensor& p : functional)
        inPlace.push_back(p.clone());
    std::vector<SlotState> functionalState = bridge.initialState(functional), inPlaceState = bridge.initialState(inPlace);
    const std::vector<void*> storage = {inPlace[0].data_ptr(), inPlace[1].data_ptr()};
    for (int step = 0; step < 4; ++step) {
        std::vector<at::Tensor> gradients = makeGradients(functional);
        if (step == 1)
            gradients[1] = at::Tensor();  // a parameter without a gradient this step
        auto transition = bridge.transition(functional, functionalState, gradients);
        const std::vector<at::Tensor> deltas = bridge.stepInPlace(inPlace, inPlaceState, gradients);
        functional = transition.parameters;
        functionalState = transition.state;
        for (std::size_t i = 0; i < functional.size(); ++i) {
            QVERIFY2(bitwiseEqual(inPlace[i], functional[i]), qPrintable(QStringLiteral("step %1, parameter %2").arg(step).arg(i)));
            QVERIFY2(bitwiseEqual(deltas[i], transition.deltas[i]), qPrintable(QStringLiteral("step %1, delta %2").arg(step).arg(i)));
            QCOMPARE(inPlaceState[i].size(), functionalState[i].size());
            for (const auto& [slot, tensor] : functionalState[i])
                QVERIFY2(bitwiseEqual(inPlaceState[i].at(slot), tensor), slot.c_str());
        }
        QVERIFY(deltas[0].abs().max().item<double>() > 0);
    }
    // In place means in the caller's tensors, not in new ones.
    QCOMPARE(inPlace[0].data_ptr(), storage[0]);
    QCOMPARE(inPlace[1].data_ptr(), storage[1]);
}

void TestOptimizerBridge::groupsMustCoverTheModelExactly_data()
{
    QTest::addColumn<std::vector<std::vector<std::size_t>>>("groups");
    QTest::addColumn<QString>("expected");
    using Groups = std::vector<std::vector<std::size_t>>;
    QTest::newRow("missing parameter") << Groups{{0, 1}, {2}} << QStringLiteral("parameter 3 is in no optimizer group");
    QTest::newRow("parameter twice") << Groups{{0, 1}, {1, 2, 3}} << QStringLiteral("parameter 1 is in two groups");
    QTest::newRow("unknown position") << Groups{{0, 1, 2, 3, 7}} << QStringLiteral("parameter 7 does not exist");
}

void TestOptimizerBridge::groupsMustCoverTheModelExactly()
{
    QFETCH(std::vector<std::vector<std::size_t>>, groups);
    QFETCH(QString, expected);
    ContractRegistry registry;
    std::vector<BoundGroup> bound;
    for (const auto& positions : groups)
        bound.push_back(BoundGroup{positions, {{"lr", 0.1}}});
    QString message = contractErrorOf([&] { OptimizerBridge(registry.resolve("SGD"), bound, 4); });
    QVERIFY2(message.contains(QStringLiteral("must exactly cover the prepared model")), qPrintable(message));
    QVERIFY2(message.contains(expected), qPrintable(message));
}

void TestOptimizerBridge::bindByIdentityRefusesForeignTensors()
{
    std::vector<at::Tensor> model = makeParameters();
    QCOMPARE(bindByIdentity({model[2], model[0]}, model), (std::vector<std::size_t>{2, 0}));
    // An equal-valued copy is a different tensor.
    QString message = contractErrorOf([&] { bindByIdentity({model[0].clone()}, model); });
    QVERIFY2(message.contains(QStringLiteral("exactly cover")), qPrintable(message));
}

void TestOptimizerBridge::optionsChangedAfterSealingAreRefused()
{
    OptimizerBridge bridge = sgdBridge(0.1);
    bridge.takeOptions({{{"lr", 0.1}, {"momentum", 0.9}}, {{"lr", 0.05}, {"momentum", 0.5}}});
    // Spelling out a default is no change.
    bridge.takeOptions({{{"lr", 0.1}, {"momentum", 0.9}, {"nesterov", false}}, {{"lr", 0.05}, {"momentum", 0.5}}});
    QString message = contractErrorOf([&] { bridge.takeOptions({{{"lr", 0.01}, {"momentum", 0.9}}, {{"lr", 0.05}, {"momentum", 0.5}}}); });
    QVERIFY2(message.contains(QStringLiteral("(lr 0.1 -> 0.01)")), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("create a new proof for the new optimizer schedule")), qPrintable(message));
}

void TestOptimizerBridge::scheduledOptionsAreTakenOthersRefused()
{
    OptimizerBridge bridge = sgdBridge(0.1);
    bridge.setScheduled({"lr"});
    bridge.takeOptions({{{"lr", 0.025}, {"momentum", 0.9}}, {{"lr", 0.5}, {"momentum", 0.5}}});
    QCOMPARE(bridge.groups()[0].options["lr"].get<double>(), 0.025);
    QCOMPARE(bridge.groups()[1].options["lr"].get<double>(), 0.5);
    // A scheduled lr changes nothing else: momentum is still static.
    QString message = contractErrorOf([&] { bridge.takeOptions({{{"lr", 0.02}, {"momentum", 0.8}}, {{"lr", 0.5}, {"momentum", 0.5}}}); });
    QVERIFY2(message.contains(QStringLiteral("(momentum 0.9 -> 0.8)")), qPrintable(message));
    QCOMPARE(bridge.groups()[0].options["lr"].get<double>(), 0.025);  // a refused change takes nothing
    // The replay's values: a value equal to an integer option keeps the integer.
    bridge.setScheduledValue("lr", {1.0, 0.25});
    QCOMPARE(bridge.groups()[0].options["lr"].get<double>(), 1.0);
    QCOMPARE(bridge.groups()[1].options["lr"].get<double>(), 0.25);
}

void TestOptimizerBridge::sharedRefusals_data()
{
    // The contracts of each proven torch release are built in every lane's build.
    QTest::addColumn<int>("torchMinor");
    QTest::addColumn<QString>("options");
    QTest::addColumn<QString>("expected");
    QTest::newRow("differentiable") << 13 << R"({"lr":0.1,"differentiable":true})"
                                    << "ZKDV does not support differentiable optimizer steps (differentiable=true); register a custom functional optimizer contract";
    QTest::newRow("tensor-valued") << 13 << R"({"lr":{"tensor":[0.1]}})" << "ZKDV requires static optimizer options, but lr are tensors";
    QTest::newRow("unknown option") << 13 << R"({"lr":0.1,"betas":[0.9,0.99]})" << "\"betas\" is not an option of torch.optim.SGD";
    QTest::newRow("nesterov without momentum") << 13 << R"({"lr":0.1,"nesterov":true})" << "Nesterov momentum requires a momentum and zero dampening";
    QTest::newRow("missing lr (1.13 requires it)") << 13 << R"({"momentum":0.9})" << "lr must be a number";
    QTest::newRow("missing lr (2.15 defaults it)") << 15 << R"({"momentum":0.9})" << "";
    QTest::newRow("fused (1.13 has none)") << 13 << R"({"lr":0.1,"fused":true})" << "\"fused\" is not an option of torch.optim.SGD";
    QTest::newRow("fused (2.15)") << 15 << R"({"lr":0.1,"fused":true})" << "optimizer option fused=true is not supported";
}

void TestOptimizerBridge::sharedRefusals()
{
    QFETCH(int, torchMinor);
    QFETCH(QString, options);
    QFETCH(QString, expected);
    ContractRegistry registry(TorchRelease{torchMinor == 13 ? 1 : 2, torchMinor});
    auto contract = registry.resolve("SGD");
    QString message = contractErrorOf([&] { contract->validate({GroupOptions::parse(options.toStdString())}); });
    std::vector<at::Tensor> parameters = makeParameters();
    const QString constructed =
        contractErrorOf([&] { ContractOptimizer(contract, {ParameterGroup{parameters, GroupOptions::parse(options.toStdString())}}); });
    if (expected.isEmpty()) {  // accepted
        QVERIFY2(message.isEmpty() && constructed.isEmpty(), qPrintable(message + constructed));
        return;
    }
    QVERIFY2(message.contains(expected), qPrintable(message));
    QVERIFY(!constructed.isEmpty());
}

void TestOptimizerBridge::statePackingSharesContiguousBuffers()
{
    std::vector<SlotState> states(4);
    states[0]["exp_avg"] = at::full({3, 4}, 1.0);
    states[1]["exp_avg"] = at::full({5}, 2.0);
    states[2]["exp_avg"] = at::full({3, 4}, 3.0);
    states[3]["exp_avg"] = at::full({3, 4}, 4.0, at::kDouble);
    states[0]["step"] = at::full({}, 7.0);
    states[2]["step"] = at::full({}, 8.0);
    packState(states);
    // Same slot, shape, dtype and device: one buffer, consecutive, values kept.
    QVERIFY(states[0]["exp_avg"].storage().is_alias_of(states[2]["exp_avg"].storage()));
    QCOMPARE(states[2]["exp_avg"].data_ptr<float>() - states[0]["exp_avg"].data_ptr<float>(), std::ptrdiff_t(12));
    QCOMPARE(states[0]["exp_avg"].sum().item<double>(), 12.0);
    QCOMPARE(states[2]["exp_avg"].sum().item<double>(), 36.0);
    QVERIFY(states[0]["step"].storage().is_alias_of(states[2]["step"].storage()));
    QCOMPARE(states[2]["step"].item<double>(), 8.0);
    // Different shape or dtype: left alone.
    QVERIFY(!states[1]["exp_avg"].storage().is_alias_of(states[0]["exp_avg"].storage()));
    QVERIFY(!states[3]["exp_avg"].storage().is_alias_of(states[0]["exp_avg"].storage()));
    // In-place updates through a view land in the shared buffer.
    states[2]["exp_avg"].add_(1);
    QCOMPARE(states[0]["exp_avg"].sum().item<double>(), 12.0);
    QCOMPARE(states[2]["exp_avg"].sum().item<double>(), 48.0);
}

void TestOptimizerBridge::registryResolvesByExactNameAndKeepsCustomContractsLocal()
{
    ContractRegistry registry;
    QVERIFY(registry.contains("SGD"));
    QString message = contractErrorOf([&] { registry.resolve("sgd"); });
    QVERIFY2(message.contains(QStringLiteral("no functional optimizer contract for \"sgd\"")) && message.contains(QStringLiteral("SGD")),
             qPrintable(message));

    ContractRegistry local;
    local.registerContract(std::make_shared<HalvingContract>());
    QVERIFY(local.contains("Halving"));
    QVERIFY(!registry.contains("Halving"));
    QVERIFY(!ContractRegistry().contains("Halving"));

    OptimizerBridge bridge(local.resolve("Halving"), {BoundGroup{{0, 1}, GroupOptions::object()}}, 2);
    std::vector<at::Tensor> parameters = {at::full({2}, 4.0), at::full({1}, -2.0)};
    auto transition = bridge.transition(parameters, bridge.initialState(parameters), {at::ones({2}), at::ones({1})});
    QCOMPARE(transition.deltas[0].sum().item<double>(), -4.0);
    QCOMPARE(transition.deltas[1].sum().item<double>(), 1.0);
}

QTEST_GUILESS_MAIN(TestOptimizerBridge)
#include "test_optimizer_bridge.moc"
