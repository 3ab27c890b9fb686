// Contracts with no bit-for-bit oracle in torch 1.13 (Adafactor, Muon: torch 1.13 lacks
// them) checked on properties and hand-computed steps; the refusals of LBFGS (closure-driven)
// and of dense gradients to SparseAdam.

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include <QtTest>

#include <cfloat>
#include <cmath>
#include <functional>

#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/optim/contract_registry.h"

using namespace zkdv;
using namespace zkdv::optim;

namespace {

const at::TensorOptions kDouble = at::TensorOptions().dtype(at::kDouble);

at::Tensor parameterFrom(std::vector<double> values, std::vector<int64_t> shape)
{
    return at::tensor(values, kDouble).reshape(shape).requires_grad_(true);
}

at::Tensor randomParameter(std::vector<int64_t> shape, uint64_t seed)
{
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randn(shape, generator, kDouble).requires_grad_(true);
}

at::Tensor randomGradient(std::vector<int64_t> shape, uint64_t seed)
{
    auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
    return at::randn(shape, generator, kDouble);
}

// Runs `call` and returns the ContractError's message, or an empty string when none was thrown.
QString contractErrorOf(const std::function<void()>& call)
{
    try {
        call();
    } catch (const ContractError& error) {
        return QString::fromUtf8(error.what());
    }
    return {};
}

double maxAbsDifference(const at::Tensor& a, const at::Tensor& b) { return (a - b).abs().max().item<double>(); }

}  // namespace

class TestNewOptimizers : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();

    void registryResolvesEveryNewContract();

    void adafactorStateShapesFollowTheParameter();
    void adafactorFirstStepMatchesHandComputation_data();
    void adafactorFirstStepMatchesHandComputation();
    void adafactorVectorFirstStepIsSignStep();
    void adafactorRelativeStepFollowsStepCount();
    void adafactorWeightDecayIsDecoupled();
    void adafactorMaximizeNegatesTheGradient();
    void adafactorDefaultEpsilon1IsMachineEpsilon();
    void adafactorRefusesUnsupportedModes();

    void muonFirstMomentumBufferMatchesHandComputation();
    void muonUpdateIsNearlyOrthogonal_data();
    void muonUpdateIsNearlyOrthogonal();
    void muonNesterovChangesTheUpdate();
    void muonWeightDecayIsDecoupled();
    void muonAdjustLrFunctionsScaleTheUpdate();
    void muonRefusesNonMatrixParameters();
    void muonRefusesInvalidOptions();

    void lbfgsIsRefusedAsClosureDriven();
    void sparseAdamRefusesDenseGradients();
    void sparseAdamLeavesUntouchedEntriesAlone();
};

void TestNewOptimizers::initTestCase() { at::set_num_threads(1); }

void TestNewOptimizers::registryResolvesEveryNewContract()
{
    ContractRegistry registry;
    for (const char* name : {"SparseAdam", "LBFGS", "Adafactor", "Muon"}) {
        QVERIFY2(registry.contains(name), name);
        QCOMPARE(QString::fromStdString(registry.resolve(name)->name()), QString::fromLatin1(name));
    }
    // torch's constructor defaults.
    auto adafactor = registry.resolve("Adafactor")->defaults();
    QCOMPARE(adafactor["lr"].get<double>(), 1e-2);
    QCOMPARE(adafactor["beta2_decay"].get<double>(), -0.8);
    QVERIFY(adafactor["eps"][0].is_null());
    QCOMPARE(adafactor["eps"][1].get<double>(), 1e-3);
    QCOMPARE(adafactor["d"].get<double>(), 1.0);
    QCOMPARE(adafactor["weight_decay"].get<double>(), 0.0);
    QCOMPARE(adafactor["maximize"].get<bool>(), false);
    auto muon = registry.resolve("Muon")->defaults();
    QCOMPARE(muon["lr"].get<double>(), 1e-3);
    QCOMPARE(muon["weight_decay"].get<double>(), 0.1);
    QCOMPARE(muon["momentum"].get<double>(), 0.95);
    QCOMPARE(muon["nesterov"].get<bool>(), true);
    QVERIFY(muon["ns_coefficients"] == nlohmann::json({3.4445, -4.7750, 2.0315}));
    QCOMPARE(muon["eps"].get<double>(), 1e-7);
    QCOMPARE(muon["ns_steps"].get<int>(), 5);
    QVERIFY(muon["adjust_lr_fn"].is_null());
    auto sparseAdam = registry.resolve("SparseAdam")->defaults();
    QCOMPARE(sparseAdam["lr"].get<double>(), 1e-3);
    QVERIFY(sparseAdam["betas"] == nlohmann::json({0.9, 0.999}));
    QCOMPARE(sparseAdam["eps"].get<double>(), 1e-8);
    auto lbfgs = registry.resolve("LBFGS")->defaults();
    QCOMPARE(lbfgs["lr"].get<double>(), 1.0);
    QCOMPARE(lbfgs["max_iter"].get<int>(), 20);
    QCOMPARE(lbfgs["history_size"].get<int>(), 100);
}

// ----------------------------------------------------------------------------- Adafactor

void TestNewOptimizers::adafactorStateShapesFollowTheParameter()
{
    at::Tensor matrix = randomParameter({3, 4}, 1), vector = randomParameter({5}, 2), cube = randomParameter({2, 3, 2}, 3),
               scalar = randomParameter({}, 4);
    ContractOptimizer optimizer("Adafactor", {matrix, vector, cube, scalar}, {{"lr", 0.01}, {"eps", {1e-30, 1e-3}}});
    QVERIFY(optimizer.state(matrix).empty());  // lazy, as in torch
    for (int step = 1; step <= 3; ++step) {
        uint64_t seed = 10 * step;
        for (at::Tensor* p : {&matrix, &vector, &cube, &scalar})
            p->mutable_grad() = randomGradient(p->sizes().vec(), ++seed);
        optimizer.step();
    }
    const SlotState& m = optimizer.state(matrix);
    QCOMPARE(m.size(), std::size_t(3));
    QVERIFY(m.at("row_var").sizes() == at::IntArrayRef({3, 1}));
    QVERIFY(m.at("col_var").sizes() == at::IntArrayRef({1, 4}));
    QVERIFY(!m.count("variance"));
    const SlotState& c = optimizer.state(cube);
    QVERIFY(c.at("row_var").sizes() == at::IntArrayRef({2, 3, 1}));
    QVERIFY(c.at("col_var").sizes() == at::IntArrayRef({2, 1, 2}));
    for (const at::Tensor* p : {&vector, &scalar}) {
        const SlotState& v = optimizer.state(*p);
        QCOMPARE(v.size(), std::size_t(2));
        QVERIFY(v.at("variance").sizes() == p->sizes());
        QVERIFY(!v.count("row_var") && !v.count("col_var"));
    }
    for (const at::Tensor* p : {&matrix, &vector, &cube, &scalar}) {
        const at::Tensor& step = optimizer.state(*p).at("step");
        QCOMPARE(step.dim(), int64_t(0));
        QVERIFY(step.scalar_type() == at::kFloat);  // torch's scalar dtype under a float32 default
        QCOMPARE(step.item<double>(), 3.0);
    }
    // The factors are running means of squared gradients: never negative.
    QVERIFY(m.at("row_var").min().item<double>() >= 0 && m.at("col_var").min().item<double>() >= 0);
}

void TestNewOptimizers::adafactorFirstStepMatchesHandComputation_data()
{
    QTest::addColumn<double>("d");
    QTest::newRow("clipped (d=1)") << 1.0;
    QTest::newRow("unclipped (d=100)") << 100.0;
}

void TestNewOptimizers::adafactorFirstStepMatchesHandComputation()
{
    QFETCH(double, d);
    const double p[2][2] = {{0.5, -1.0}, {2.0, 0.25}};
    const double g[2][2] = {{0.4, -0.01}, {0.02, 0.05}};  // poorly fit by the factors: RMS(U) about 3.7
    const double lr = 0.05, eps1 = 1e-30, eps2 = 1e-3;
    at::Tensor parameter = parameterFrom({p[0][0], p[0][1], p[1][0], p[1][1]}, {2, 2});
    ContractOptimizer optimizer("Adafactor", {parameter}, {{"lr", lr}, {"eps", {eps1, eps2}}, {"d", d}});
    parameter.mutable_grad() = at::tensor({g[0][0], g[0][1], g[1][0], g[1][1]}, kDouble).reshape({2, 2});
    optimizer.step();

    // By hand: at t=1, 1 - beta2_t = 1^-0.8 = 1, so the factors are this step's means of G².
    const double r[2] = {(g[0][0] * g[0][0] + g[0][1] * g[0][1]) / 2, (g[1][0] * g[1][0] + g[1][1] * g[1][1]) / 2};
    const double c[2] = {(g[0][0] * g[0][0] + g[1][0] * g[1][0]) / 2, (g[0][1] * g[0][1] + g[1][1] * g[1][1]) / 2};
    const double rowMean = std::max((r[0] + r[1]) / 2, eps1);
    double u[2][2], sumU2 = 0, sumP2 = 0;
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            const double v = r[i] * c[j] / rowMean;
            u[i][j] = g[i][j] / std::sqrt(std::max(v, eps1 * eps1));
            sumU2 += u[i][j] * u[i][j];
            sumP2 += p[i][j] * p[i][j];
        }
    const double rho = std::min(lr, 1.0);
    const double alpha = std::max(eps2, std::sqrt(sumP2) / 2) * rho;
    const double denominator = std::max(1.0, std::sqrt(sumU2) / (2 * d));
    const SlotState& state = optimizer.state(parameter);
    for (int i = 0; i < 2; ++i) {
        QVERIFY(std::abs(state.at("row_var")[i][0].item<double>() - r[i]) < 1e-12);
        QVERIFY(std::abs(state.at("col_var")[0][i].item<double>() - c[i]) < 1e-12);
        for (int j = 0; j < 2; ++j) {
            const double expected = p[i][j] - alpha / denominator * u[i][j];
            const double actual = parameter[i][j].item<double>();
            QVERIFY2(std::abs(actual - expected) < 1e-12,
                     qPrintable(QStringLiteral("[%1][%2]: expected %3, found %4").arg(i).arg(j).arg(expected, 0, 'g', 17).arg(actual, 0, 'g', 17)));
        }
    }
    QCOMPARE(state.at("step").item<double>(), 1.0);
    if (d == 1.0)
        QVERIFY2(denominator > 1, "the d=1 row is meant to exercise update clipping");
    else
        QCOMPARE(denominator, 1.0);
}

void TestNewOptimizers::adafactorVectorFirstStepIsSignStep()
{
    // For a vector at t=1, V = G², so U = G/|G| and RMS(U) = 1: the step is alpha * sign(G).
    at::Tensor parameter = parameterFrom({1.0, -2.0, 3.0, 0.5}, {4});
    const at::Tensor before = parameter.detach().clone();
    ContractOptimizer optimizer("Adafactor", {parameter}, {{"lr", 0.02}, {"eps", {1e-30, 1e-3}}});
    parameter.mutable_grad() = at::tensor({0.3, -0.1, 2.0, -4.0}, kDouble);
    optimizer.step();
    const double alpha = std::sqrt((1.0 + 4.0 + 9.0 + 0.25) / 4) * 0.02;
    const at::Tensor expected = before - alpha * at::tensor({1.0, -1.0, 1.0, -1.0}, kDouble);
    QVERIFY(maxAbsDifference(parameter.detach(), expected) < 1e-12);
    QVERIFY(maxAbsDifference(optimizer.state(parameter).at("variance"), at::tensor({0.09, 0.01, 4.0, 16.0}, kDouble)) < 1e-12);
}

void TestNewOptimizers::adafactorRelativeStepFollowsStepCount()
{
    // With lr = 1, rho_t = min(1, 1/sqrt(t)); a vector's step is alpha_t * sign-like U_t whose
    // size is bounded by the clipping: |delta| <= max(eps2, RMS(theta)) / sqrt(t) * d * sqrt(n).
    at::Tensor parameter = randomParameter({6}, 7);
    ContractOptimizer optimizer("Adafactor", {parameter}, {{"lr", 1.0}, {"eps", {1e-30, 1e-3}}});
    for (int t = 1; t <= 9; ++t) {
        const at::Tensor before = parameter.detach().clone();
        const double rms = before.norm().item<double>() / std::sqrt(6.0);
        parameter.mutable_grad() = randomGradient({6}, 100 + t);
        optimizer.step();
        const double deltaRms = (parameter.detach() - before).norm().item<double>() / std::sqrt(6.0);
        // The clipped update has RMS at most d = 1, so the step's RMS is at most alpha_t.
        QVERIFY2(deltaRms <= std::max(1e-3, rms) / std::sqrt(double(t)) * (1 + 1e-12),
                 qPrintable(QStringLiteral("step %1: RMS of the step %2 exceeds alpha_t").arg(t).arg(deltaRms)));
        QCOMPARE(optimizer.state(parameter).at("step").item<double>(), double(t));
    }
}

void TestNewOptimizers::adafactorWeightDecayIsDecoupled()
{
    // A zero gradient gives a zero update, so only the decay theta *= 1 - lr * lambda remains.
    at::Tensor parameter = randomParameter({3, 2}, 11);
    const at::Tensor before = parameter.detach().clone();
    ContractOptimizer optimizer("Adafactor", {parameter}, {{"lr", 0.1}, {"weight_decay", 0.5}, {"eps", {1e-30, 1e-3}}});
    parameter.mutable_grad() = at::zeros({3, 2}, kDouble);
    optimizer.step();
    QVERIFY(at::equal(parameter.detach(), before * (1 - 0.1 * 0.5)));
}

void TestNewOptimizers::adafactorMaximizeNegatesTheGradient()
{
    at::Tensor up = randomParameter({3, 4}, 21), down = up.detach().clone().requires_grad_(true);
    ContractOptimizer maximizing("Adafactor", {up}, {{"lr", 0.05}, {"maximize", true}, {"weight_decay", 0.01}, {"eps", {1e-30, 1e-3}}});
    ContractOptimizer minimizing("Adafactor", {down}, {{"lr", 0.05}, {"weight_decay", 0.01}, {"eps", {1e-30, 1e-3}}});
    for (int step = 0; step < 4; ++step) {
        at::Tensor gradient = randomGradient({3, 4}, 200 + step);
        up.mutable_grad() = gradient;
        down.mutable_grad() = gradient.neg();
        maximizing.step();
        minimizing.step();
        QVERIFY(at::equal(up.detach(), down.detach()));
    }
    // And maximizing moves against the descent direction: along the gradient.
    at::Tensor parameter = at::zeros({4}, kDouble).add_(1).requires_grad_(true);
    ContractOptimizer ascent("Adafactor", {parameter}, {{"maximize", true}, {"eps", {1e-30, 1e-3}}});
    parameter.mutable_grad() = at::ones({4}, kDouble);
    ascent.step();
    QVERIFY(parameter.detach().min().item<double>() > 1.0);
}

void TestNewOptimizers::adafactorDefaultEpsilon1IsMachineEpsilon()
{
    // eps=(None, 1e-3): torch uses finfo(param.dtype).eps as epsilon1. Through the contract
    // directly, the default equals an explicit DBL_EPSILON bit for bit.
    auto contract = ContractRegistry().resolve("Adafactor");
    const GroupOptions byDefault = contract->normalize({{"lr", 0.03}});
    const GroupOptions explicitEps = contract->normalize({{"lr", 0.03}, {"eps", {DBL_EPSILON, 1e-3}}});
    at::Tensor a = randomParameter({2, 3}, 31).detach(), b = a.clone();
    SlotState stateA = contract->initialize(a, byDefault), stateB = contract->initialize(b, explicitEps);
    for (int step = 0; step < 3; ++step) {
        at::Tensor gradient = randomGradient({2, 3}, 300 + step);
        contract->update({a}, {gradient}, {&stateA}, byDefault);
        contract->update({b}, {gradient}, {&stateB}, explicitEps);
    }
    QVERIFY(at::equal(a, b));

    // torch's default eps has a null element; the generic option check accepts it, and so
    // does an optimizer built with every default.
    const QString refusal = contractErrorOf([&] { contract->validate({byDefault}); });
    QVERIFY2(refusal.isEmpty(), qPrintable(refusal));
    at::Tensor parameter = randomParameter({2, 3}, 32);
    ContractOptimizer optimizer("Adafactor", {parameter});
    parameter.mutable_grad() = randomGradient({2, 3}, 33);
    optimizer.step();
    QCOMPARE(optimizer.state(parameter).at("step").item<double>(), 1.0);
}

void TestNewOptimizers::adafactorRefusesUnsupportedModes()
{
    auto contract = ContractRegistry().resolve("Adafactor");
    auto refusal = [&](GroupOptions options) {
        options["eps"] = {1e-30, 1e-3};
        return contractErrorOf([&] { contract->validate({options}); });
    };
    QVERIFY(refusal({{"foreach", true}}).isEmpty());  // torch's multi-tensor path, replayed op for op
    QVERIFY(refusal({{"foreach", false}}).isEmpty());
    QVERIFY(refusal({{"capturable", true}}).contains("not an option"));  // Adafactor has none
    QVERIFY(refusal({{"d", 0.5}}).contains("clipping threshold"));
    QVERIFY(refusal({{"beta2_decay", 0.1}}).contains("beta2_decay"));
    QVERIFY(refusal({{"lr", -1.0}}).contains("learning rate"));
    QVERIFY(refusal({{"weight_decay", -0.1}}).contains("weight_decay"));
    QVERIFY(refusal({{"differentiable", false}}).contains("not an option"));

    at::Tensor parameter = randomParameter({4}, 41);
    ContractOptimizer optimizer("Adafactor", {parameter}, {{"eps", {1e-30, 1e-3}}});
    parameter.mutable_grad() = at::ones({4}, kDouble).to_sparse();
    QVERIFY(contractErrorOf([&] { optimizer.step(); }).contains("sparse"));
}

// ---------------------------------------------------------------------------------- Muon

void TestNewOptimizers::muonFirstMomentumBufferMatchesHandComputation()
{
    // B_1 = lerp(0, g, 1 - momentum) = (1 - momentum) g.
    at::Tensor parameter = randomParameter({3, 4}, 51);
    ContractOptimizer optimizer("Muon", {parameter}, {{"lr", 0.02}, {"momentum", 0.9}});
    QVERIFY(optimizer.state(parameter).empty());
    const double g[12] = {0.5, -1.0, 0.25, 2.0, -0.75, 1.5, 0.0, 3.0, -2.5, 0.125, 1.0, -0.5};
    parameter.mutable_grad() = at::tensor(std::vector<double>(g, g + 12), kDouble).reshape({3, 4});
    optimizer.step();
    const SlotState& state = optimizer.state(parameter);
    QCOMPARE(state.size(), std::size_t(1));
    const at::Tensor buffer = state.at("momentum_buffer");
    QVERIFY(buffer.sizes() == at::IntArrayRef({3, 4}));
    for (int k = 0; k < 12; ++k)
        QVERIFY2(std::abs(buffer.view({-1})[k].item<double>() - 0.1 * g[k]) < 1e-12, qPrintable(QString::number(k)));

    // Second step: B_2 = 0.9 B_1 + 0.1 g_2.
    const at::Tensor first = buffer.clone();
    const at::Tensor g2 = randomGradient({3, 4}, 52);
    parameter.mutable_grad() = g2;
    optimizer.step();
    QVERIFY(maxAbsDifference(optimizer.state(parameter).at("momentum_buffer"), 0.9 * first + 0.1 * g2) < 1e-12);
}

void TestNewOptimizers::muonUpdateIsNearlyOrthogonal_data()
{
    QTest::addColumn<int>("rows");
    QTest::addColumn<int>("columns");
    QTest::newRow("square 6x6") << 6 << 6;
    QTest::newRow("wide 4x7") << 4 << 7;
    QTest::newRow("tall 8x3") << 8 << 3;
}

void TestNewOptimizers::muonUpdateIsNearlyOrthogonal()
{
    QFETCH(int, rows);
    QFETCH(int, columns);
    // momentum 0 and no weight decay: the step is -adjusted_lr * NS(g).
    const double lr = 0.01;
    at::Tensor parameter = randomParameter({rows, columns}, 61);
    const at::Tensor before = parameter.detach().clone();
    ContractOptimizer optimizer("Muon", {parameter}, {{"lr", lr}, {"momentum", 0.0}, {"weight_decay", 0.0}});
    parameter.mutable_grad() = randomGradient({rows, columns}, 62);
    optimizer.step();
    const double adjusted = lr * std::sqrt(std::max(1.0, double(rows) / columns));
    const at::Tensor update = (before - parameter.detach()) / adjusted;
    const at::Tensor singular = at::linalg_svdvals(update);
    QCOMPARE(singular.size(0), int64_t(std::min(rows, columns)));
    // The quintic iteration (Keller Jordan's coefficients, 5 steps, bfloat16) maps every
    // singular value into roughly [0.5, 1.5] around 1 rather than exactly onto 1.
    const double smallest = singular.min().item<double>(), largest = singular.max().item<double>();
    QVERIFY2(smallest > 0.5 && largest < 1.5, qPrintable(QStringLiteral("singular values in [%1, %2]").arg(smallest).arg(largest)));
    QVERIFY2(std::abs(singular.mean().item<double>() - 1.0) < 0.25, qPrintable(QString::number(singular.mean().item<double>())));
    // The raw gradient's singular values are spread much wider; orthogonalization narrows them.
    const at::Tensor raw = at::linalg_svdvals(parameter.grad());
    QVERIFY(raw.max().item<double>() / raw.min().item<double>() > largest / smallest);
}

void TestNewOptimizers::muonNesterovChangesTheUpdate()
{
    at::Tensor withNesterov = randomParameter({4, 5}, 71), without = withNesterov.detach().clone().requires_grad_(true);
    ContractOptimizer on("Muon", {withNesterov}, {{"lr", 0.02}, {"nesterov", true}});
    ContractOptimizer off("Muon", {without}, {{"lr", 0.02}, {"nesterov", false}});
    for (int step = 0; step < 3; ++step) {
        at::Tensor gradient = randomGradient({4, 5}, 700 + step);
        withNesterov.mutable_grad() = gradient;
        without.mutable_grad() = gradient.clone();
        on.step();
        off.step();
    }
    // The momentum buffers agree (nesterov only changes the direction used) ...
    QVERIFY(at::equal(on.state(withNesterov).at("momentum_buffer"), off.state(without).at("momentum_buffer")));
    // ... the parameters do not.
    QVERIFY2(maxAbsDifference(withNesterov.detach(), without.detach()) > 1e-4,
             qPrintable(QString::number(maxAbsDifference(withNesterov.detach(), without.detach()))));
}

void TestNewOptimizers::muonWeightDecayIsDecoupled()
{
    // A zero gradient orthogonalizes to zero (its norm is clamped to eps), leaving only the
    // decoupled decay theta *= 1 - lr * lambda.
    at::Tensor parameter = randomParameter({3, 3}, 81);
    const at::Tensor before = parameter.detach().clone();
    ContractOptimizer optimizer("Muon", {parameter}, {{"lr", 0.1}, {"weight_decay", 0.2}});
    parameter.mutable_grad() = at::zeros({3, 3}, kDouble);
    optimizer.step();
    QVERIFY(at::equal(parameter.detach(), before * (1 - 0.1 * 0.2)));
}

void TestNewOptimizers::muonAdjustLrFunctionsScaleTheUpdate()
{
    // Same gradient, no decay: steps differ only by the learning-rate adjustment, original
    // sqrt(max(1, A/B)) against match_rms_adamw 0.2 sqrt(max(A, B)).
    const int rows = 6, columns = 2;
    at::Tensor original = randomParameter({rows, columns}, 91), matched = original.detach().clone().requires_grad_(true);
    const at::Tensor before = original.detach().clone();
    ContractOptimizer a("Muon", {original}, {{"lr", 0.01}, {"weight_decay", 0.0}, {"adjust_lr_fn", "original"}});
    ContractOptimizer b("Muon", {matched}, {{"lr", 0.01}, {"weight_decay", 0.0}, {"adjust_lr_fn", "match_rms_adamw"}});
    const at::Tensor gradient = randomGradient({rows, columns}, 92);
    original.mutable_grad() = gradient;
    matched.mutable_grad() = gradient.clone();
    a.step();
    b.step();
    const at::Tensor deltaOriginal = original.detach() - before, deltaMatched = matched.detach() - before;
    const double expectedRatio = 0.2 * std::sqrt(6.0) / std::sqrt(3.0);
    QVERIFY(maxAbsDifference(deltaMatched, deltaOriginal * expectedRatio) < 1e-12);
    QVERIFY(contractErrorOf([&] { ContractOptimizer("Muon", {original}, {{"adjust_lr_fn", "spectral"}}); }).contains("adjust_lr_fn"));
}

void TestNewOptimizers::muonRefusesNonMatrixParameters()
{
    at::Tensor bias = randomParameter({5}, 101);
    ContractOptimizer optimizer("Muon", {bias});
    bias.mutable_grad() = randomGradient({5}, 102);
    const QString refusal = contractErrorOf([&] { optimizer.step(); });
    QVERIFY2(refusal.contains("2-D") && refusal.contains("[5]"), qPrintable(refusal));
    auto contract = ContractRegistry().resolve("Muon");
    QVERIFY(contractErrorOf([&] { contract->initialize(at::zeros({2, 3, 4}, kDouble), contract->defaults()); }).contains("2-D"));
    QVERIFY(contractErrorOf([&] { contract->initialize(at::zeros({2, 3}, kDouble), contract->defaults()); }).isEmpty());
}

void TestNewOptimizers::muonRefusesInvalidOptions()
{
    auto contract = ContractRegistry().resolve("Muon");
    auto refusal = [&](const GroupOptions& options) { return contractErrorOf([&] { contract->validate({options}); }); };
    QVERIFY(refusal(GroupOptions::object()).isEmpty());
    QVERIFY(refusal({{"momentum", -0.5}}).contains("momentum"));
    QVERIFY(refusal({{"lr", -1.0}}).contains("learning rate"));
    QVERIFY(refusal({{"ns_steps", 100}}).contains("ns_steps"));
    QVERIFY(refusal({{"ns_coefficients", {1.0, 2.0}}}).contains("ns_coefficients"));
    QVERIFY(refusal({{"foreach", true}}).contains("not an option"));
}

// --------------------------------------------------------------------- LBFGS, SparseAdam

void TestNewOptimizers::lbfgsIsRefusedAsClosureDriven()
{
    at::Tensor parameter = randomParameter({3}, 111);
    const QString refusal = contractErrorOf([&] { ContractOptimizer("LBFGS", {parameter}); });
    QVERIFY2(refusal.contains("closure") && refusal.contains("LBFGS") && refusal.contains("another optimizer"), qPrintable(refusal));
    auto contract = ContractRegistry().resolve("LBFGS");
    QVERIFY(contractErrorOf([&] { contract->validate(std::vector<GroupOptions>{GroupOptions{{"lr", 0.5}, {"history_size", 10}}}); }).contains("closure"));
    QVERIFY(contractErrorOf([&] { contract->initialize(parameter, contract->defaults()); }).contains("closure"));
    SlotState state;
    QVERIFY(contractErrorOf([&] { contract->update({parameter}, {parameter}, {&state}, contract->defaults()); }).contains("closure"));
}

void TestNewOptimizers::sparseAdamRefusesDenseGradients()
{
    at::Tensor parameter = randomParameter({4}, 121);
    const at::Tensor before = parameter.detach().clone();
    ContractOptimizer optimizer("SparseAdam", {parameter}, {{"lr", 0.01}});
    parameter.mutable_grad() = randomGradient({4}, 122);
    const QString refusal = contractErrorOf([&] { optimizer.step(); });
    QVERIFY2(refusal.contains("SparseAdam does not support dense gradients") && refusal.contains("Adam"), qPrintable(refusal));
    QVERIFY(at::equal(parameter.detach(), before));
    QVERIFY(contractErrorOf([&] { ContractOptimizer("SparseAdam", {parameter}, {{"lr", 0.0}}); }).contains("learning rate"));
    QVERIFY(contractErrorOf([&] { ContractOptimizer("SparseAdam", {parameter}, {{"betas", {0.9, 1.0}}}); }).contains("beta"));
}

void TestNewOptimizers::sparseAdamLeavesUntouchedEntriesAlone()
{
    // Lazy Adam: only entries present in the sparse gradient move; at t=1 each moves by
    // about lr against its gradient's sign (Adam's first step).
    at::Tensor parameter = randomParameter({3, 3}, 131);
    const at::Tensor before = parameter.detach().clone();
    ContractOptimizer optimizer("SparseAdam", {parameter}, {{"lr", 0.01}});
    at::Tensor indices = at::tensor({0, 2, 1, 1}, at::kLong).reshape({2, 2});  // entries (0,1) and (2,1)
    parameter.mutable_grad() = at::sparse_coo_tensor(indices, at::tensor({0.5, -2.0}, kDouble), {3, 3}).coalesce();
    optimizer.step();
    const at::Tensor delta = parameter.detach() - before;
    QCOMPARE(delta.ne(0).sum().item<int64_t>(), int64_t(2));
    QVERIFY(std::abs(delta[0][1].item<double>() + 0.01) < 1e-6);
    QVERIFY(std::abs(delta[2][1].item<double>() - 0.01) < 1e-6);
    const SlotState& state = optimizer.state(parameter);
    QVERIFY(state.at("step").scalar_type() == at::kLong);
    QCOMPARE(state.at("step").item<int64_t>(), int64_t(1));
    QCOMPARE(state.at("exp_avg").ne(0).sum().item<int64_t>(), int64_t(2));
}

QTEST_GUILESS_MAIN(TestNewOptimizers)
#include "test_new_optimizers.moc"
