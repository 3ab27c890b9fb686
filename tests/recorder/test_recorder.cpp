// The recorder (the seed's zkdv.torch.ZKDV in C++): its refusals, its tapes, its bounds,
// and tapes recorded by real PyTorch through tests/oracle/record.py.

#include <limits>

#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/csrc/autograd/autograd.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/serialization/import.h>

#include <QtTest>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>

#include "temp_dir.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/optim/torch_release.h"
#include "zkdv/program/sealed_program.h"
#include "zkdv/recorder/recorder.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/tape_link.h"
#include "zkdv/tape/resume_link.h"
#include "tape_rewriter.h"
#include "zkdv/tape/tape_scanner.h"

using namespace zkdv;

namespace {

constexpr const char* kLinearStep = R"(
def training_step(self, batch: List[Tensor]) -> Tensor:
    self.seen.add_(1)
    prediction = torch.linear(batch[0], self.weight, self.bias)
    return (prediction - batch[1]).pow(2).mean()
)";

torch::jit::Module linearModel(const char* step = kLinearStep)
{
    torch::jit::Module model("Linear");
    model.register_parameter("weight", at::randn({2, 3}).requires_grad_(true), false);
    model.register_parameter("bias", at::zeros({2}).requires_grad_(true), false);
    model.register_buffer("seen", at::zeros({}, at::kLong));
    model.define(step);
    return model;
}

std::vector<at::Tensor> parametersOf(const torch::jit::Module& model)
{
    std::vector<at::Tensor> result;
    for (const auto& p : model.named_parameters(true))
        result.push_back(p.value);
    return result;
}

template <typename F>
QString errorOf(F&& call)
{
    try {
        call();
    } catch (const std::exception& error) {
        return QString::fromUtf8(error.what());
    }
    return {};
}

void trainSteps(Recorder& recorder, torch::jit::Module& model, PreparedOptimizer& optimizer, int steps)
{
    for (int i = 0; i < steps; ++i) {
        Transaction transaction = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
        recorder.backward(recorder.forward(model));
        optimizer.step();
        optimizer.zeroGrad();
    }
}

// A custom optimizer whose step fails from its second call: the recorder steps the model's own
// tensors, so after that failure the model holds no state the tape describes.
class FailingContract : public optim::OptimizerContract {
public:
    std::string name() const override { return "FailsOnSecondStep"; }
    optim::GroupOptions defaults() const override { return {{"differentiable", false}}; }
    optim::SlotState initialize(const at::Tensor&, const optim::GroupOptions&) const override { return {}; }
    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients, const std::vector<optim::SlotState*>&,
                const optim::GroupOptions&) const override
    {
        if (++calls_ >= 2)
            throw optim::ContractError("FailsOnSecondStep: refused");
        for (std::size_t i = 0; i < parameters.size(); ++i)
            parameters[i].sub_(gradients[i], 0.1);
    }

private:
    mutable int calls_ = 0;
};

bool runPython(const QStringList& arguments, QString* output)
{
    QProcess process;
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start(QStringLiteral(ZKDV_TEST_PYTHON), arguments);
    bool ok = process.waitForFinished(300000) && process.exitStatus() == QProcess::NormalExit && process.exitCode() == 0;
    *output = QString::fromUtf8(process.readAll());
    return ok;
}

// The linear model with `methods` (Python source, class-indented), scripted by the lane's
// Python and loaded back: for what C++ TorchScript source cannot say (torch.jit.fork).
torch::jit::Module scriptedInPython(const std::string& methods, const std::string& path)
{
    const std::string script = path + ".py";
    std::ofstream(script) << "import sys\nimport torch\nfrom typing import List\nfrom torch import Tensor\n\n"
                             "class Linear(torch.nn.Module):\n"
                             "    def __init__(self):\n"
                             "        super().__init__()\n"
                             "        self.weight = torch.nn.Parameter(torch.randn(2, 3))\n"
                             "        self.bias = torch.nn.Parameter(torch.zeros(2))\n"
                             "        self.register_buffer('seen', torch.zeros((), dtype=torch.long))\n\n"
                          << methods << "\n\ntorch.jit.script(Linear()).save(sys.argv[1])\n";
    QString output;
    if (!runPython({QString::fromStdString(script), QString::fromStdString(path)}, &output))
        throw std::runtime_error("could not script the module in Python: " + output.toStdString());
    return torch::jit::load(path);
}

torch::jit::Module modelOf(const QString& step, const std::string& path)
{
    const std::string source = step.toStdString();
    if (source.rfind("python:", 0) == 0)
        return scriptedInPython(source.substr(7), path);
    return linearModel(source.c_str());
}

}  // namespace

class TestRecorder : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void recordsAVerifiableTape();
    void nestedTransactionIsRefused();
    void unpreparedModelIsRefused();
    void transactionBeforePrepareIsRefused();
    void abortedTransactionWritesNothing();
    void randomOperationsAreRefused_data();
    void randomOperationsAreRefused();
    void capturedTensorsAreRefused_data();
    void capturedTensorsAreRefused();
    void writesIntoProtectedStateAreRefused_data();
    void writesIntoProtectedStateAreRefused();
    void honestWritesAreAccepted();
    void optionsChangedAfterSealingAreRefused();
    void unsupportedOptimizersAreRefused();
    void optimizerStepFailingHalfWayEndsTheTape();
    void gradientChangedBeforeTheStepIsRefused_data();
    void gradientChangedBeforeTheStepIsRefused();
    void clippedGradientsAreRecorded();
    void gradScalerStepsAndSkipsAsTheRuleSays();
    void parameterChangedOutsideTheStepEndsTheTape_data();
    void parameterChangedOutsideTheStepEndsTheTape();
    void bufferChangedOutsideTheProgramEndsTheTape();
    void accumulatedGradientsAreRefused();
    void stepWithoutARecordedBackwardIsRefused();
    void transactionThatRanTheProgramMustStep();
    void autocastIsRecorded();
    void existingTapeNeedsExplicitOverwrite();
    void resumedTapeContinuesItsPredecessor();
    void failingDiskWriteIsReportedAndTrainingGoesOn();
    void snapshotPoolStaysWithinItsBound();
    void crashLeavesAReadableTruncatedTape();
    void cnnDemoLearnsAndVerifies();
    void pythonRecordedTapesVerifyAndIngest_data();
    void pythonRecordedTapesVerifyAndIngest();

private:
    test::TempDir dir_;
};

// A run stopped after 4 steps and resumed for 3 more (tape format 1.10, section 3.4): the
// second tape names the first, starts from the state it ended in, and a case links them; a
// resume from another state is refused naming the tensor, and so is an optimizer with state
// but no tape it continues.
void TestRecorder::resumedTapeContinuesItsPredecessor()
{
    const std::string first = dir_.file("first.zkdv"), second = dir_.file("second.zkdv");
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("Adam", parametersOf(model), {{"lr", 0.01}});
    RecorderOptions config;
    config.replaySnapshotInterval = 3;
    std::vector<optim::SlotState> checkpoint;
    {
        Recorder recorder(first, config);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        trainSteps(recorder, model, prepared, 4);
        recorder.seal();
        for (const optim::SlotState& slots : prepared.state())
            checkpoint.push_back(optim::cloneState(slots));
    }
    const std::vector<at::Tensor> parameters = parametersOf(model);
    auto loadCheckpoint = [&](optim::ContractOptimizer& into) {
        for (std::size_t i = 0; i < parameters.size(); ++i)
            into.loadState(parameters[i], checkpoint[i]);
    };

    // Without the tape it continues, loaded state is refused, not left out of the tape.
    optim::ContractOptimizer unlinked("Adam", parameters, {{"lr", 0.01}});
    loadCheckpoint(unlinked);
    const QString refusal = errorOf([&] {
        Recorder recorder(dir_.file("unlinked.zkdv"), config);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(unlinked);
        trainSteps(recorder, model, prepared, 1);
    });
    QVERIFY2(refusal.contains("RecorderOptions.resumeFrom"), qPrintable(refusal));

    // One element of a parameter off: refused, naming it, and nothing is trained.
    RecorderOptions resumed = config;
    resumed.resumeFrom = first;
    {
        optim::ContractOptimizer loaded("Adam", parameters, {{"lr", 0.01}});
        loadCheckpoint(loaded);
        at::Tensor weight = parameters[0].detach();
        const float was = weight[1][2].item<float>();
        weight[1][2].fill_(was + 1.0f);
        const QString tampered = errorOf([&] {
            Recorder recorder(dir_.file("tampered.zkdv"), resumed);
            recorder.prepare(model);
            PreparedOptimizer& prepared = recorder.prepare(loaded);
            trainSteps(recorder, model, prepared, 1);
        });
        weight[1][2].fill_(was);
        QVERIFY2(tampered.contains("param/weight differs from the tape's in 1 of 6 elements"), qPrintable(tampered));
    }

    optim::ContractOptimizer loaded("Adam", parameters, {{"lr", 0.01}});
    loadCheckpoint(loaded);
    {
        Recorder recorder(second, resumed);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(loaded);
        trainSteps(recorder, model, prepared, 3);
        recorder.seal();
    }
    const TapeSummary before = scanTape(first), after = scanTape(second);
    QVERIFY2(after.status == TapeStatus::Sealed, after.problem ? after.problem->describe().c_str() : "");
    QVERIFY(after.root->resumes.has_value());
    QCOMPARE(after.root->resumes->transactionsBefore, std::uint64_t(4));
    QCOMPARE(toHex(after.root->resumes->chainHead), toHex(before.chainHead));
    QCOMPARE(after.root->resumes->size, before.fileSize);
    QCOMPARE(toHex(*after.firstStateDigest), toHex(*before.finalStateDigest));
    // The same code and layout sealed to the same program, though the values differ.
    QCOMPARE(toHex(after.root->programSha256), toHex(before.root->programSha256));
    const TapeEnd end{*before.root, before.chainHead, before.fileSize, before.transactionCount, true, before.finalStateDigest, before.lastScheduleEpoch, before.lastGradScalerStep};
    QCOMPARE(QString::fromStdString(resumeLinkProblem(end, *after.root)), QString());

    // The link rule refuses a renumbered run, another start state, other options.
    RootRecord renumbered = *after.root;
    renumbered.resumes->transactionsBefore = 3;
    QVERIFY(QString::fromStdString(resumeLinkProblem(end, renumbered)).contains("the tapes before it hold 4"));
    RootRecord elsewhere = *after.root;
    elsewhere.resumes->stateDigest = Sha256::of(ByteSpan(std::string_view("another state")));
    QVERIFY(QString::fromStdString(resumeLinkProblem(end, elsewhere)).contains("but the tape it resumes ended in"));
    RootRecord retuned = *after.root;
    retuned.optimizerGroups[0].optionsJson = R"({"lr": 0.02})";
    QVERIFY(QString::fromStdString(resumeLinkProblem(end, retuned)).contains("optimizer group 0 has the options"));
    // A schedule goes on from the epoch the previous tape's last step had, never restarts; a
    // GradScaler from the scale its rule leaves after that step.
    const OptimizerSchedule cosine{{"lr"}, R"({"kind": "CosineAnnealingLR", "arguments": {"T_max": 10, "eta_min": 0.0}, "base": {"lr": [0.01]}})", 0};
    TapeEnd scheduled = end;
    scheduled.root.optimizerSchedule = cosine;
    scheduled.lastScheduleEpoch = 3;
    RootRecord restarted = *after.root;
    restarted.optimizerSchedule = cosine;
    QVERIFY(QString::fromStdString(resumeLinkProblem(scheduled, restarted)).contains("before epoch 3"));
    restarted.optimizerSchedule->epoch = 4;
    QCOMPARE(QString::fromStdString(resumeLinkProblem(scheduled, restarted)), QString());
    TapeEnd scaled = end;
    scaled.root.gradScaler = GradScalerDeclaration{GradScalerRule{2.0, 0.5, 3}, GradScalerState{1024.0f, 0}};
    scaled.lastGradScalerStep = GradScalerStep{GradScalerState{1024.0f, 1}, true};
    RootRecord rescaled = *after.root;
    rescaled.gradScaler = GradScalerDeclaration{GradScalerRule{2.0, 0.5, 3}, GradScalerState{1024.0f, 0}};
    QVERIFY(QString::fromStdString(resumeLinkProblem(scaled, rescaled)).contains("the previous tape's rule leaves scale 512"));
    rescaled.gradScaler->initial.scale = 512.0f;
    QCOMPARE(QString::fromStdString(resumeLinkProblem(scaled, rescaled)), QString());

    // A trainer who starts the second tape elsewhere and says it continues: the reader refuses it.
    const std::string forged = dir_.file("forged.zkdv");
    test::rewriteTape(second, forged, [](std::uint64_t, std::uint32_t type, std::string payload) {
        if (type != static_cast<std::uint32_t>(tape::RecordType::Root))
            return payload;
        nlohmann::json root = nlohmann::json::parse(payload);
        root["resumes"]["state_digest"] = toHex(Sha256::of(ByteSpan(std::string_view("another state"))));
        return root.dump();
    });
    const TapeSummary refused = scanTape(forged);
    QCOMPARE(refused.status, TapeStatus::Corrupt);
    QVERIFY2(QString::fromStdString(refused.problem->message).contains("resumes.state_digest"), refused.problem->message.c_str());

    // A case holding both, ingested last first, reads them as one run.
    CaseStore store(dir_.file("run.zkaudit"), CaseStore::Access::ReadWrite);
    const std::int64_t secondId = store.ingestTape(second).tapeId;
    QCOMPARE(store.tape(secondId)->link.status, TapeLinkStatus::PreviousMissing);
    const std::int64_t firstId = store.ingestTape(first).tapeId;
    const CaseTape linked = *store.tape(secondId);
    QCOMPARE(linked.link.status, TapeLinkStatus::Continues);
    QCOMPARE(linked.link.previousTapeId, firstId);
    QCOMPARE(linked.transactionsBefore, std::uint64_t(4));
    QCOMPARE(runTapes(store.database(), secondId), (std::vector<std::int64_t>{firstId, secondId}));
    QCOMPARE(runTapes(store.database(), firstId), (std::vector<std::int64_t>{firstId, secondId}));
}

void TestRecorder::recordsAVerifiableTape()
{
    const std::string path = dir_.file("linear.zkdv");
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}, {"momentum", 0.9}});
    RecorderOptions config;
    config.updateCheckProbability = 0.5;
    config.stateCheckProbability = 0.5;
    config.samplingSeed = 11;
    config.replaySnapshotInterval = 4;
    {
        Recorder recorder(path, config);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        const at::Tensor before = parametersOf(model)[0].detach().clone();
        trainSteps(recorder, model, prepared, 10);
        QVERIFY(!at::equal(before, parametersOf(model)[0].detach()));
        recorder.seal();
        QCOMPARE(recorder.statistics().transactions, std::uint64_t(10));
        QCOMPARE(recorder.statistics().snapshots, std::uint64_t(4));  // before 0, 4 and 8, and the final state after 10
    }
    // The tape ends with the state the model holds after the last step (spec 2.4).
    struct LastSnapshot : TapeVisitor {
        std::uint64_t beforeTransaction = 0;
        std::vector<std::uint8_t> firstParameter;
        void onSnapshot(const SnapshotRecord& snapshot, const RecordLocation&) override
        {
            beforeTransaction = snapshot.beforeTransaction;
            firstParameter.assign(snapshot.parameters.front()->data.begin(), snapshot.parameters.front()->data.end());
        }
    } last;
    TapeSummary summary = scanTape(path, &last);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "");
    QCOMPARE(summary.transactionCount, std::uint64_t(10));
    QCOMPARE(summary.snapshotCount, std::uint64_t(4));
    QCOMPARE(last.beforeTransaction, std::uint64_t(10));
    const at::Tensor trained = parametersOf(model)[0].detach().contiguous();
    QVERIFY(last.firstParameter.size() == static_cast<std::size_t>(trained.nbytes()) &&
            std::memcmp(last.firstParameter.data(), trained.data_ptr(), last.firstParameter.size()) == 0);
    QCOMPARE(summary.root->optimizerContract, std::string("SGD"));
    QCOMPARE(summary.root->buffers.size(), std::size_t(1));
    QCOMPARE(summary.root->programKind, std::string("torchscript"));
    QVERIFY(summary.embeddedProgramSha256 && *summary.embeddedProgramSha256 == summary.root->programSha256);
    QCOMPARE(model.attr("seen").toTensor().item<std::int64_t>(), std::int64_t(10));
}

void TestRecorder::nestedTransactionIsRefused()
{
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    Recorder recorder(dir_.file("nested.zkdv"));
    recorder.prepare(model);
    recorder.prepare(optimizer);
    Transaction outer = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
    QString message = errorOf([&] { recorder.transaction({at::randn({4, 3}), at::randn({4, 2})}); });
    QVERIFY2(message.contains(QStringLiteral("nested ZKDV transactions are unsupported")), qPrintable(message));
}

void TestRecorder::unpreparedModelIsRefused()
{
    torch::jit::Module model = linearModel(), other = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    Recorder recorder(dir_.file("unprepared.zkdv"));
    recorder.prepare(model);
    recorder.prepare(optimizer);
    Transaction transaction = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
    QString message = errorOf([&] { recorder.forward(other); });
    QVERIFY2(message.contains(QStringLiteral("pass it through proof.prepare() first")), qPrintable(message));
}

void TestRecorder::transactionBeforePrepareIsRefused()
{
    Recorder recorder(dir_.file("early.zkdv"));
    QString message = errorOf([&] { recorder.transaction({at::randn({4, 3})}); });
    QVERIFY2(message.contains(QStringLiteral("prepare the model and its optimizer")), qPrintable(message));
    optim::ContractOptimizer optimizer("SGD", {at::zeros({2}).requires_grad_(true)}, {{"lr", 0.1}});
    message = errorOf([&] { recorder.prepare(optimizer); });
    QVERIFY2(message.contains(QStringLiteral("prepare the model before its optimizer")), qPrintable(message));
    // An optimizer over tensors the model does not hold cannot be bound.
    torch::jit::Module model = linearModel();
    recorder.prepare(model);
    message = errorOf([&] { recorder.prepare(optimizer); });
    QVERIFY2(message.contains(QStringLiteral("exactly cover the prepared model")), qPrintable(message));
}

void TestRecorder::abortedTransactionWritesNothing()
{
    const std::string path = dir_.file("aborted.zkdv");
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    {
        Recorder recorder(path);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        trainSteps(recorder, model, prepared, 2);
        {
            // Abandoned before its forward: nothing the tape describes changed, so training goes on.
            Transaction abandoned = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
        }
        trainSteps(recorder, model, prepared, 1);
        recorder.seal();
        QCOMPARE(recorder.statistics().abortedTransactions, std::uint64_t(1));
    }
    TapeSummary summary = scanTape(path);
    QCOMPARE(summary.status, TapeStatus::Sealed);
    QCOMPARE(summary.transactionCount, std::uint64_t(3));
}

void TestRecorder::randomOperationsAreRefused_data()
{
    QTest::addColumn<QString>("step");
    QTest::addColumn<QString>("operation");
    QTest::newRow("dropout in training mode") << R"(
def training_step(self, batch: List[Tensor]) -> Tensor:
    h = torch.dropout(torch.linear(batch[0], self.weight, self.bias), 0.5, True)
    return h.pow(2).mean() + self.seen.float() * 0
)" << "dropout";
    QTest::newRow("randn") << R"(
def training_step(self, batch: List[Tensor]) -> Tensor:
    noise = torch.randn([4, 3])
    return torch.linear(batch[0] + noise, self.weight, self.bias).pow(2).mean() + self.seen.float() * 0
)" << "randn";
    QTest::newRow("bernoulli") << R"(
def training_step(self, batch: List[Tensor]) -> Tensor:
    mask = torch.bernoulli(batch[0])
    return torch.linear(batch[0] * mask, self.weight, self.bias).pow(2).mean() + self.seen.float() * 0
)" << "bernoulli";
    // No name marker: the schema's Generator argument says it draws.
    QTest::newRow("poisson") << R"(
def training_step(self, batch: List[Tensor]) -> Tensor:
    counts = torch.poisson(torch.relu(batch[0]))
    return torch.linear(batch[0] + counts, self.weight, self.bias).pow(2).mean() + self.seen.float() * 0
)" << "aten::poisson";
    // Forked code runs in a subgraph of its own (scripted by Python: C++ source has no fork).
    QTest::newRow("inside torch.jit.fork") << R"(python:
    def noisy(self, x: Tensor) -> Tensor:
        return x + torch.randn_like(x)

    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        x = torch.jit.wait(torch.jit.fork(self.noisy, batch[0]))
        return torch.nn.functional.linear(x, self.weight, self.bias).pow(2).mean()
)" << "aten::randn_like";
}

void TestRecorder::randomOperationsAreRefused()
{
    QFETCH(QString, step);
    QFETCH(QString, operation);
    const std::string source = step.toStdString();
    torch::jit::Module model = modelOf(step, dir_.file("random-" + operation.toStdString() + ".pt"));
    Recorder recorder(dir_.file("random-" + operation.toStdString() + ".zkdv"));
    QString message = errorOf([&] { recorder.prepare(model); });
    QVERIFY2(message.contains(QStringLiteral("contains random operations")) && message.contains(operation), qPrintable(message));
    QVERIFY2(message.contains(QStringLiteral("include it in the prepared transaction batch")), qPrintable(message));
    // Dropout with train=False draws nothing and is accepted.
    if (operation == QLatin1String("dropout")) {
        std::string inference = source;
        inference.replace(inference.find("0.5, True"), 9, "0.5, False");
        torch::jit::Module deterministic = linearModel(inference.c_str());
        checkSealedProgram(deterministic);
    }
}

void TestRecorder::capturedTensorsAreRefused_data()
{
    // Where the tensor hides, and what the refusal names. Each step adds the hidden tensor into
    // the weight it trains with, so a replay agrees with whatever the tensor holds.
    QTest::addColumn<QString>("where");
    QTest::addColumn<QString>("named");
    QTest::newRow("tensor attribute") << "tensor" << "(scale)";
    QTest::newRow("list attribute") << "list" << "(cache[0])";
    QTest::newRow("dict attribute") << "dict" << "(table[\"shift\"])";
    QTest::newRow("tuple attribute") << "tuple" << "(pair[1])";
    QTest::newRow("nested submodule's list") << "nested" << "(inner.cache[0])";
}

void TestRecorder::capturedTensorsAreRefused()
{
    QFETCH(QString, where);
    QFETCH(QString, named);
    const std::string kind = where.toStdString();
    const at::Tensor hidden = at::full({2, 3}, 0.01);
    std::string use;
    torch::jit::Module model("Linear");
    model.register_parameter("weight", at::randn({2, 3}).requires_grad_(true), false);
    model.register_parameter("bias", at::zeros({2}).requires_grad_(true), false);
    model.register_buffer("seen", at::zeros({}, at::kLong));
    if (kind == "tensor") {
        model.register_attribute("scale", c10::TensorType::get(), hidden);
        use = "self.scale";
    } else if (kind == "list") {
        model.register_attribute("cache", c10::ListType::ofTensors(), c10::IValue(c10::List<at::Tensor>({hidden})));
        use = "self.cache[0]";
    } else if (kind == "dict") {
        c10::Dict<std::string, at::Tensor> table;
        table.insert("shift", hidden);
        model.register_attribute("table", c10::DictType::create(c10::StringType::get(), c10::TensorType::get()), c10::IValue(table));
        use = "self.table[\"shift\"]";
    } else if (kind == "tuple") {
        model.register_attribute("pair", c10::TupleType::create({c10::IntType::get(), c10::TensorType::get()}),
                                 c10::IValue(c10::ivalue::Tuple::create({c10::IValue(std::int64_t(1)), c10::IValue(hidden)})));
        use = "self.pair[1]";
    } else {
        torch::jit::Module inner("Inner");
        inner.register_attribute("cache", c10::ListType::ofTensors(), c10::IValue(c10::List<at::Tensor>({hidden})));
        inner.define("def forward(self, w: Tensor) -> Tensor:\n    return w + self.cache[0]\n");
        model.register_module("inner", inner);
        use = "self.inner.forward(self.weight) - self.weight";
    }
    model.define("def training_step(self, batch: List[Tensor]) -> Tensor:\n"
                 "    return torch.linear(batch[0], self.weight + " + use + ", self.bias).pow(2).mean() + self.seen.float() * 0\n");
    Recorder recorder(dir_.file("captured-" + kind + ".zkdv"));
    QString message = errorOf([&] { recorder.prepare(model); });
    QVERIFY2(message.contains(QStringLiteral("captured unprepared tensor state ") + named), qPrintable(message));
}

void TestRecorder::writesIntoProtectedStateAreRefused_data()
{
    // Steps an independent writer would seal: each moves a parameter outside the optimizer
    // step, alters the batch, or keeps state from one step to the next, and every replay
    // would agree with it.
    QTest::addColumn<QString>("step");
    QTest::addColumn<QString>("named");
    const char* tail = "\n    return torch.linear(batch[0], self.weight, self.bias).pow(2).mean() + self.seen.float() * 0\n";
    auto step = [&](const char* body) { return QString::fromLatin1("def training_step(self, batch: List[Tensor]) -> Tensor:\n    ") + body + tail; };
    QTest::newRow("parameter in place") << step("self.weight.add_(0.01)") << "writes into the parameter weight in place";
    QTest::newRow("through detach") << step("self.weight.detach().add_(0.01)") << "writes into the parameter weight in place";
    QTest::newRow("through .data") << step("self.weight.data.add_(0.01)") << "writes into the parameter weight in place";
    QTest::newRow("through a view") << step("self.weight.view([-1])[0:3].mul_(1.01)") << "writes into the parameter weight in place";
    QTest::newRow("through a list") << step("ws = [self.bias]\n    ws[0].sub_(0.01)") << "writes into the parameter bias in place";
    QTest::newRow("as running statistics")
        << step("h = torch.batch_norm(torch.linear(batch[0], self.weight, None), None, None, self.bias, None, True, 0.1, 1e-5, False)")
        << "writes into the parameter bias in place, through its argument 'running_mean'";
    QTest::newRow("batch input") << step("batch[1].mul_(0.5)") << "writes into the batch in place";
    QTest::newRow("batch through a view") << step("batch[0].t().relu_()") << "writes into the batch in place";
    QTest::newRow("assigns a parameter") << step("self.bias = self.bias * 1.0") << "assigns the parameter bias";
    QTest::newRow("fork writes a parameter") << QString::fromLatin1(R"(python:
    def nudge(self, w: Tensor) -> Tensor:
        return w.add_(0.01)

    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        torch.jit.wait(torch.jit.fork(self.nudge, self.weight))
        return torch.nn.functional.linear(batch[0], self.weight, self.bias).pow(2).mean()
)") << "writes into the parameter weight in place";
}

void TestRecorder::writesIntoProtectedStateAreRefused()
{
    QFETCH(QString, step);
    QFETCH(QString, named);
    static int row = 0;
    ++row;
    torch::jit::Module model = modelOf(step, dir_.file("writes-" + std::to_string(row) + ".pt"));
    Recorder recorder(dir_.file("writes-" + std::to_string(row) + ".zkdv"));
    QString message = errorOf([&] { recorder.prepare(model); });
    QVERIFY2(message.contains(named) && message.contains(QStringLiteral("a program writes only into its buffers")), qPrintable(message));
    // The same check runs at replay load.
    QString again = errorOf([&] { checkSealedProgram(model); });
    QCOMPARE(again, message);
}

void TestRecorder::honestWritesAreAccepted()
{
    // In-place writes into buffers (the recorder's own step counts in `seen`), into values the
    // step made, and a model output kept for the frontend are what honest steps do.
    torch::jit::Module model = linearModel(R"(
def training_step(self, batch: List[Tensor]) -> Tensor:
    self.seen.add_(1)
    h = torch.linear(batch[0], self.weight, self.bias)
    h.relu_()
    h.view([-1]).mul_(2.0)
    outs: List[Tensor] = []
    outs.append(h)
    return (outs[0] - batch[1]).pow(2).mean()
)");
    checkSealedProgram(model);
}

void TestRecorder::optionsChangedAfterSealingAreRefused()
{
    torch::jit::Module model = linearModel();
    std::vector<optim::ParameterGroup> groups = {{parametersOf(model), {{"lr", 0.1}}}};
    auto registry = optim::ContractRegistry();
    optim::ContractOptimizer optimizer(registry.resolve("SGD"), groups);
    Recorder recorder(dir_.file("schedule.zkdv"));
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    trainSteps(recorder, model, prepared, 1);
    // A learning-rate schedule changes the options: refused, as in the seed.
    optimizer.groups()[0].options["lr"] = 0.01;
    Transaction transaction = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
    recorder.backward(recorder.forward(model));
    QString message = errorOf([&] { prepared.step(); });
    QVERIFY2(message.contains(QStringLiteral("create a new proof for the new optimizer schedule")), qPrintable(message));
}

void TestRecorder::unsupportedOptimizersAreRefused()
{
    torch::jit::Module model = linearModel();
    QString message = errorOf([&] { optim::ContractOptimizer("LBFGS", parametersOf(model), {{"lr", 1.0}}); });
    QVERIFY2(message.contains(QStringLiteral("closure")), qPrintable(message));
    message = errorOf([&] { optim::ContractOptimizer("Lion", parametersOf(model), {{"lr", 1.0}}); });
    QVERIFY2(message.contains(QStringLiteral("no functional optimizer contract for \"Lion\"")), qPrintable(message));
}

void TestRecorder::optimizerStepFailingHalfWayEndsTheTape()
{
    torch::jit::Module model = linearModel();
    auto contract = std::make_shared<FailingContract>();
    optim::ContractOptimizer optimizer(contract, {{parametersOf(model), optim::GroupOptions::object()}});
    const std::string path = dir_.file("failed-step.zkdv");
    {
        Recorder recorder(path);
        recorder.registerFunctionalOptimizer(contract);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        trainSteps(recorder, model, prepared, 1);
        QString message = errorOf([&] { trainSteps(recorder, model, prepared, 1); });
        QVERIFY2(message.startsWith(QStringLiteral("FailsOnSecondStep: refused; the optimizer step may have updated")), qPrintable(message));
        message = errorOf([&] { Transaction next = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})}); });
        QCOMPARE(message, QStringLiteral("an optimizer step of this recorder failed half-way (FailsOnSecondStep: refused); create a new proof"));
        // The model may hold a half-stepped state, which no final snapshot may claim (spec
        // 2.4): the tape is not sealed.
        message = errorOf([&] { recorder.seal(); });
        QVERIFY2(message.contains(QStringLiteral("failed half-way")) && message.contains(QStringLiteral("the tape stays unsealed")),
                 qPrintable(message));
        QCOMPARE(recorder.statistics().transactions, std::uint64_t(1));
    }
    // What was recorded before the failure stays a readable tape of one transaction.
    const TapeSummary summary = scanTape(path);
    QCOMPARE(summary.status, TapeStatus::Unsealed);
    QCOMPARE(summary.transactionCount, std::uint64_t(1));
}

// One transaction up to its backward, for the tests of what may change before the step.
struct OpenStep {
    OpenStep(Recorder& recorder, torch::jit::Module& model)
        : transaction(recorder.transaction({at::randn({4, 3}), at::randn({4, 2})}))
    {
        recorder.backward(recorder.forward(model));
    }
    Transaction transaction;
};

void TestRecorder::gradientChangedBeforeTheStepIsRefused_data()
{
    QTest::addColumn<int>("change");
    QTest::newRow("clipped in place") << 0;
    QTest::newRow("changed through data()") << 1;
    QTest::newRow("replaced") << 2;
    QTest::newRow("removed") << 3;
}

void TestRecorder::gradientChangedBeforeTheStepIsRefused()
{
    QFETCH(int, change);
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    const std::string path = dir_.file("gradient-" + std::to_string(change) + ".zkdv");
    Recorder recorder(path);
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    trainSteps(recorder, model, prepared, 1);
    const at::Tensor before = parametersOf(model)[0].detach().clone();
    {
        OpenStep open(recorder, model);
        at::Tensor weight = parametersOf(model)[0];
        at::NoGradGuard noGrad;
        if (change == 0)
            weight.mutable_grad().clamp_(-1e-3, 1e-3);
        else if (change == 1)
            weight.mutable_grad().data().mul_(0.5);
        else if (change == 2)
            weight.mutable_grad() = weight.grad() * 0.5;
        else
            weight.mutable_grad() = at::Tensor();
        const QString message = errorOf([&] { prepared.step(); });
        QVERIFY2(message.startsWith(QStringLiteral("the gradient of parameter weight ")) &&
                     message.contains(QStringLiteral(" between proof.backward() and optimizer.step() in transaction 1 (gradient clipping")),
                 qPrintable(message));
    }
    // Refused before the update. The refused transaction's forward moved the buffer `seen` all the
    // same, so the tape ends at the transaction before it; the model no longer holds the state
    // after it, which a sealed tape's final snapshot must be (spec 2.4), so it stays unsealed.
    QVERIFY(at::equal(before, parametersOf(model)[0].detach()));
    QVERIFY(errorOf([&] { recorder.seal(); }).contains(QStringLiteral("the tape stays unsealed")));
    QCOMPARE(recorder.statistics().transactions, std::uint64_t(1));
    const TapeSummary summary = scanTape(path);
    QCOMPARE(summary.status, TapeStatus::Unsealed);
    QCOMPARE(summary.transactionCount, std::uint64_t(1));
}

void TestRecorder::clippedGradientsAreRecorded()
{
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    const std::string path = dir_.file("clipped.zkdv");
    std::vector<double> totals;
    {
        Recorder recorder(path);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        QVERIFY(errorOf([&] { recorder.clipGradNorm(1.0); }).contains(QStringLiteral("inside a transaction")));
        for (int i = 0; i < 3; ++i) {
            OpenStep open(recorder, model);
            const at::Tensor total = recorder.clipGradNorm(1e-3, 2.0);
            totals.push_back(total.item<double>());
            // Scaled by max_norm / (total + 1e-6): to 1e-3, up to float32 rounding, for a larger norm.
            std::vector<at::Tensor> clipped;
            for (const at::Tensor& p : parametersOf(model))
                clipped.push_back(p.grad().flatten());
            const double after = at::cat(clipped).norm().item<double>();
            QVERIFY2(totals.back() > 1e-3 && std::abs(after - 1e-3) < 1e-8, qPrintable(QString::number(after, 'g', 17)));
            recorder.clipGradValue(1e-4);
            QVERIFY(errorOf([&] { recorder.clipGradNorm(1.0, -1.0); }).contains(QStringLiteral("norm_type must be a positive number")));
            prepared.step();
            optimizer.zeroGrad();
        }
        recorder.seal();
    }
    struct Transforms : TapeVisitor {
        std::vector<std::vector<GradientTransform>> recorded;
        std::vector<double> totals;
        void onTransaction(const TransactionRecord& record, const RecordLocation&) override
        {
            recorded.push_back(record.gradientTransforms);
            float total = 0;
            std::memcpy(&total, record.totalNorms.at(0)->data.data, sizeof total);
            totals.push_back(total);
        }
    } seen;
    const TapeSummary summary = scanTape(path, &seen);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "");
    QCOMPARE(seen.recorded.size(), std::size_t(3));
    for (std::size_t i = 0; i < 3; ++i) {
        QCOMPARE(seen.recorded[i].size(), std::size_t(2));
        QVERIFY(seen.recorded[i][0].kind == GradientTransform::Kind::ClipNorm && seen.recorded[i][0].maxNorm == 1e-3);
        QVERIFY(seen.recorded[i][1].kind == GradientTransform::Kind::ClipValue && seen.recorded[i][1].clipValue == 1e-4);
        // torch 2.x resolves foreach to its CPU kernels; 1.13 has no foreach argument.
        QCOMPARE(seen.recorded[i][0].foreach.has_value(), optim::TorchRelease::ofThisLibtorch().major >= 2);
        QCOMPARE(seen.totals[i], totals[i]);
    }
}

// The C++ API's GradScaler (tape format 1.8, section 5.6): the recorder keeps the scale. A start
// past float32's range over the loss overflows the first backward: that step is skipped (no
// update, recorded as such), the scale backs off, and the next steps are taken and grow it.
void TestRecorder::gradScalerStepsAndSkipsAsTheRuleSays()
{
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    const std::string path = dir_.file("scaled.zkdv");
    const float huge = std::numeric_limits<float>::max();
    std::vector<bool> skipped;
    {
        Recorder recorder(path);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        QVERIFY(errorOf([&] { recorder.declareGradScaler({{2.0, 1.5, 2}, {huge, 0}}); }).contains(QStringLiteral("backoff_factor")));
        recorder.declareGradScaler({{2.0, 1e-30, 2}, {huge, 0}});
        QVERIFY(errorOf([&] { recorder.declareGradScaler({{2.0, 1e-30, 2}, {huge, 0}}); }).contains(QStringLiteral("already declared")));
        for (int i = 0; i < 4; ++i) {
            const std::vector<at::Tensor> before = [&] {
                std::vector<at::Tensor> copies;
                for (const at::Tensor& p : parametersOf(model))
                    copies.push_back(p.detach().clone());
                return copies;
            }();
            {
                Transaction transaction = recorder.transaction({at::randn({4, 3}) * 10, at::randn({4, 2}) * 10});
                // A loss the scaler did not scale is refused (the function form says whether it did).
                const at::Tensor loss = recorder.forward(model);
                QVERIFY(errorOf([&] { recorder.backward([] {}, LossScale{}, false); }).contains(QStringLiteral("the GradScaler did not scale")));
                recorder.backward(loss);
                if (i == 1)
                    QVERIFY(!recorder.unscaleGradients());  // explicitly, then clipped: the step does not unscale again
                if (i == 1)
                    QVERIFY(errorOf([&] { recorder.unscaleGradients(); }).contains(QStringLiteral("already been called")));
                prepared.step();
                skipped.push_back(recorder.stepSkipped());
                optimizer.zeroGrad();
            }
            const std::vector<at::Tensor> after = parametersOf(model);
            bool unchanged = true;
            for (std::size_t p = 0; p < after.size(); ++p)
                unchanged = unchanged && after[p].equal(before[p]);
            QCOMPARE(unchanged, bool(skipped.back()));
        }
        recorder.seal();
    }
    QCOMPARE(skipped, (std::vector<bool>{true, false, false, false}));
    struct States : TapeVisitor {
        std::vector<GradScalerStep> steps;
        void onTransaction(const TransactionRecord& record, const RecordLocation&) override { steps.push_back(*record.gradScaler); }
    } seen;
    const TapeSummary summary = scanTape(path, &seen);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "");
    QVERIFY(summary.root && summary.root->gradScaler && summary.root->gradScaler->initial.scale == huge);
    const float backedOff = static_cast<float>(static_cast<double>(huge) * 1e-30);
    QCOMPARE(seen.steps.size(), std::size_t(4));
    QVERIFY(seen.steps[0].state == (GradScalerState{huge, 0}) && seen.steps[0].skipped);
    QVERIFY(seen.steps[1].state == (GradScalerState{backedOff, 0}) && !seen.steps[1].skipped);
    QVERIFY(seen.steps[2].state == (GradScalerState{backedOff, 1}));
    QVERIFY(seen.steps[3].state == (GradScalerState{backedOff * 2, 0}));  // grown after 2 steps without a skip
}

void TestRecorder::parameterChangedOutsideTheStepEndsTheTape_data()
{
    QTest::addColumn<bool>("throughData");
    QTest::newRow("in place under NoGradGuard") << false;
    QTest::newRow("through data(), unseen by the version counter") << true;
}

void TestRecorder::parameterChangedOutsideTheStepEndsTheTape()
{
    QFETCH(bool, throughData);
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    const std::string path = dir_.file(std::string("parameter-") + (throughData ? "data" : "inplace") + ".zkdv");
    Recorder recorder(path);
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    trainSteps(recorder, model, prepared, 2);
    {
        OpenStep open(recorder, model);
        at::NoGradGuard noGrad;
        if (throughData)
            parametersOf(model)[1].data().add_(0.25);
        else
            parametersOf(model)[1].add_(0.25);
        const QString message = errorOf([&] { prepared.step(); });
        QVERIFY2(message.startsWith(QStringLiteral("parameter bias ")) &&
                     message.contains(QStringLiteral("between the optimizer step of transaction 1 and the optimizer step of transaction 2, outside "
                                                     "the prepared optimizer")) &&
                     message.endsWith(QStringLiteral("; this tape ends at transaction 1: create a new proof")),
                 qPrintable(message));
    }
    const QString message = errorOf([&] { trainSteps(recorder, model, prepared, 1); });
    QVERIFY2(message.startsWith(QStringLiteral("parameter bias ")) && message.endsWith(QStringLiteral("create a new proof")), qPrintable(message));
    // The model no longer holds the state after transaction 1, which a sealed tape would end
    // with (spec 2.4): the tape stays unsealed, readable up to that transaction.
    QVERIFY(errorOf([&] { recorder.seal(); }).contains(QStringLiteral("the tape stays unsealed")));
    const TapeSummary summary = scanTape(path);
    QCOMPARE(summary.status, TapeStatus::Unsealed);
    QCOMPARE(summary.transactionCount, std::uint64_t(2));
}

void TestRecorder::bufferChangedOutsideTheProgramEndsTheTape()
{
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    Recorder recorder(dir_.file("buffer.zkdv"));
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    trainSteps(recorder, model, prepared, 1);
    model.attr("seen").toTensor().data().fill_(7);  // through data(): no version counter sees it
    const QString message = errorOf([&] { trainSteps(recorder, model, prepared, 1); });
    QVERIFY2(message.startsWith(QStringLiteral("buffer seen had its values changed unseen by its version counter")) &&
                 message.contains(QStringLiteral("between the optimizer step of transaction 0 and the forward of transaction 1, outside the sealed "
                                                 "program")) &&
                 message.endsWith(QStringLiteral("; this tape ends at transaction 0: create a new proof")),
             qPrintable(message));
}

void TestRecorder::accumulatedGradientsAreRefused()
{
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    Recorder recorder(dir_.file("accumulated.zkdv"));
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    {
        Transaction first = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
        recorder.backward(recorder.forward(model));
        prepared.step();  // no zeroGrad() after it
    }
    Transaction second = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
    at::Tensor loss = recorder.forward(model);
    const QString message = errorOf([&] { recorder.backward(loss); });
    QVERIFY2(message.startsWith(QStringLiteral("the gradient of parameter weight is not zero before proof.backward() in transaction 1 "
                                               "(gradients accumulated over earlier transactions?)")),
             qPrintable(message));
}

void TestRecorder::stepWithoutARecordedBackwardIsRefused()
{
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    Recorder recorder(dir_.file("no-backward.zkdv"));
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    Transaction transaction = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
    torch::autograd::backward({recorder.forward(model)});
    const QString message = errorOf([&] { prepared.step(); });
    QVERIFY2(message.startsWith(QStringLiteral("no recorded backward in transaction 0: differentiate the loss with proof.backward(loss)")),
             qPrintable(message));
}

void TestRecorder::transactionThatRanTheProgramMustStep()
{
    torch::jit::Module model = linearModel();  // its step adds 1 to the buffer `seen`
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    const std::string path = dir_.file("no-step.zkdv");
    Recorder recorder(path);
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    trainSteps(recorder, model, prepared, 1);
    Transaction transaction = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
    recorder.backward(recorder.forward(model));
    QString message = errorOf([&] { transaction.close(); });
    QVERIFY2(message.startsWith(QStringLiteral("buffer seen was changed in place in transaction 1, which ended without a step of the prepared "
                                               "optimizer")) &&
                 message.endsWith(QStringLiteral("; this tape ends at transaction 0: create a new proof")),
             qPrintable(message));
    message = errorOf([&] { trainSteps(recorder, model, prepared, 1); });
    QVERIFY2(message.startsWith(QStringLiteral("buffer seen was changed in place in transaction 1")), qPrintable(message));
    // The model no longer holds the state after transaction 0 (the refused forward moved `seen`),
    // which a sealed tape's final snapshot must be (spec 2.4): the tape stays unsealed.
    QVERIFY(errorOf([&] { recorder.seal(); }).contains(QStringLiteral("the tape stays unsealed")));
    const TapeSummary summary = scanTape(path);
    QCOMPARE(summary.status, TapeStatus::Unsealed);
    QCOMPARE(summary.transactionCount, std::uint64_t(1));
}

void TestRecorder::autocastIsRecorded()
{
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    const std::string path = dir_.file("autocast.zkdv");
    {
        Recorder recorder(path);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        {
            Transaction transaction = recorder.transaction({at::randn({4, 3}), at::randn({4, 2})});
            // As torch.autocast("cpu") does (its default dtype, bfloat16).
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastCPU, false);
            const at::Tensor loss = recorder.forward(model);
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastCPU, true);
            recorder.backward(loss);
            prepared.step();
        }
        optimizer.zeroGrad();
        {
            Transaction transaction = recorder.transaction({{at::randn({4, 3}), at::randn({4, 2})}, {at::randn({4, 3}), at::randn({4, 2})}});
            // A device type the replay does not apply autocast on is refused before anything runs.
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastXPU, false);
            const QString xpu = errorOf([&] { recorder.forward(model); });
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastXPU, true);
            QVERIFY2(xpu.startsWith(QStringLiteral("autocast on \"xpu\" is not recorded")), qPrintable(xpu));
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastCPU, false);
            recorder.backward(recorder.forward(model), LossScale{LossScale::Op::Divide, 2, true});
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastCPU, true);
            // One autocast for all of a transaction's forwards.
            const QString message = errorOf([&] { recorder.forward(model); });
            QVERIFY2(message.startsWith(QStringLiteral("micro-batch 1 of transaction 1 runs its forward without autocast, micro-batch 0 under "
                                                       "torch.autocast(\"cpu\", dtype=torch.bfloat16)")),
                     qPrintable(message));
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastCPU, false);
            recorder.backward(recorder.forward(model), LossScale{LossScale::Op::Divide, 2, true});
            c10::impl::tls_set_dispatch_key_excluded(c10::DispatchKey::AutocastCPU, true);
            prepared.step();
        }
        QCOMPARE(recorder.statistics().transactions, std::uint64_t(2));
        recorder.seal();
    }
    struct Autocasts : TapeVisitor {
        std::vector<AutocastSetting> seen;
        void onTransaction(const TransactionRecord& record, const RecordLocation&) override { seen.push_back(record.autocast); }
    } autocasts;
    const TapeSummary summary = scanTape(path, &autocasts);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "");
    QCOMPARE(autocasts.seen.size(), std::size_t(2));
    for (const AutocastSetting& setting : autocasts.seen)
        QVERIFY(setting == (AutocastSetting{{"cpu", DType::BF16}}));
}

void TestRecorder::existingTapeNeedsExplicitOverwrite()
{
    const std::string path = dir_.file("existing.zkdv");
    { std::ofstream(path) << "precious"; }
    QString message = errorOf([&] { Recorder recorder(path); });
    QVERIFY2(message.contains(QStringLiteral("already exists")) && message.contains(QStringLiteral("overwrite")), qPrintable(message));
    std::ifstream in(path);
    std::string text;
    in >> text;
    QCOMPARE(text, std::string("precious"));
    RecorderOptions config;
    config.overwrite = true;
    Recorder replaced(path, config);
}

void TestRecorder::failingDiskWriteIsReportedAndTrainingGoesOn()
{
    // /dev/full refuses every write with ENOSPC, as a full disk does.
    QVERIFY2(QFileInfo::exists(QStringLiteral("/dev/full")), "this test needs /dev/full (Linux)");
    torch::jit::Module model = linearModel();
    // Ballast the snapshots carry: large enough (400 KB) to be written at once rather than
    // buffered, so the first snapshot meets the full disk.
    model.register_buffer("ballast", at::zeros({100000}));
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    RecorderOptions config;
    config.overwrite = true;
    config.maxInFlight = 1;
    config.replaySnapshotInterval = 2;
    Recorder recorder("/dev/full", config);
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    // The writer fails in the background; the next recorder call that queues a record says so.
    // With one record in flight that is the first transaction.
    QString message;
    int completed = 0;
    for (; completed < 20; ++completed) {
        message = errorOf([&] { trainSteps(recorder, model, prepared, 1); });
        if (!message.isEmpty())
            break;
    }
    QCOMPARE(message, QStringLiteral("cannot write tape /dev/full: ") + QString::fromUtf8(std::strerror(ENOSPC)));
    QCOMPARE(completed, 0);
    // The model is still a consistent, finite model the loop can keep training.
    for (const at::Tensor& p : parametersOf(model))
        QVERIFY(at::isfinite(p).all().item<bool>());
}

void TestRecorder::snapshotPoolStaysWithinItsBound()
{
    const std::string path = dir_.file("pool.zkdv");
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("Adam", parametersOf(model), {{"lr", 0.01}});
    RecorderOptions options;
    options.replaySnapshotInterval = 1;  // a snapshot after every transaction
    Recorder recorder(path, options);
    recorder.prepare(model);
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    trainSteps(recorder, model, prepared, 60);
    recorder.seal();
    RecorderStatistics statistics = recorder.statistics();
    QCOMPARE(statistics.snapshots, std::uint64_t(61));
    QCOMPARE(statistics.snapshotPoolSize, std::size_t(2));
    QVERIFY(statistics.snapshotPoolHighWater >= 1);
    QVERIFY(statistics.snapshotPoolHighWater <= statistics.snapshotPoolSize);
    QVERIFY(statistics.pendingHighWater <= 2);
    QCOMPARE(scanTape(path).status, TapeStatus::Sealed);
}

void TestRecorder::crashLeavesAReadableTruncatedTape()
{
    const std::string path = dir_.file("crash.zkdv");
    torch::jit::Module model = linearModel();
    optim::ContractOptimizer optimizer("SGD", parametersOf(model), {{"lr", 0.1}});
    {
        RecorderOptions options;
        options.replaySnapshotInterval = 4;
        Recorder recorder(path, options);
        recorder.prepare(model);
        PreparedOptimizer& prepared = recorder.prepare(optimizer);
        trainSteps(recorder, model, prepared, 9);
    }  // no seal: the process "died" here
    TapeSummary summary = scanTape(path);
    QCOMPARE(summary.status, TapeStatus::Unsealed);
    QCOMPARE(summary.transactionCount, std::uint64_t(9));
    // Cut inside the last record: readable up to the record before.
    QFile::resize(QString::fromStdString(path), static_cast<qint64>(summary.fileSize - 10));
    TapeSummary cut = scanTape(path);
    QCOMPARE(cut.status, TapeStatus::Truncated);
    QCOMPARE(cut.recordCount, summary.recordCount - 1);
}

void TestRecorder::cnnDemoLearnsAndVerifies()
{
    const std::string path = dir_.file("cnn.zkdv");
    CnnDemoOptions options;
    options.steps = 150;
    options.updateCheckProbability = 0.1;
    options.stateCheckProbability = 0.1;
    CnnDemoResult result = runCnnDemo(path, options);
    QCOMPARE(result.transactions, std::uint64_t(150));
    QVERIFY2(result.lastLoss < 0.8 * result.firstLoss, qPrintable(QStringLiteral("loss %1 -> %2").arg(result.firstLoss).arg(result.lastLoss)));
    QVERIFY(result.snapshotPoolHighWater <= 2);
    TapeSummary summary = scanTape(path);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "");
    QCOMPARE(summary.root->buffers.size(), std::size_t(3));  // BatchNorm's running statistics
    CaseStore store(dir_.file("cnn.zkaudit"), CaseStore::Access::ReadWrite);
    QCOMPARE(store.ingestTape(path).summary.transactionCount, std::uint64_t(150));
    // The embedded program loads back and runs a training step.
    QVERIFY(summary.embeddedProgramSha256);
}

void TestRecorder::pythonRecordedTapesVerifyAndIngest_data()
{
    QTest::addColumn<QString>("optimizer");
    for (const char* name : {"SGD", "Adam", "AdamW", "RMSprop", "Adagrad"})
        QTest::newRow(name) << QString::fromLatin1(name);
}

void TestRecorder::pythonRecordedTapesVerifyAndIngest()
{
    QFETCH(QString, optimizer);
    const QString path = QString::fromStdString(dir_.file("python-" + optimizer.toStdString() + ".zkdv"));
    QString output;
    QVERIFY2(runPython({QStringLiteral(ZKDV_TEST_SOURCE_DIR "/oracle/record.py"), path, QStringLiteral("--optimizer"), optimizer,
                        QStringLiteral("--steps"), QStringLiteral("30")},
                       &output),
             qPrintable(output));
    TapeSummary summary = scanTape(path.toStdString());
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "");
    QCOMPARE(summary.transactionCount, std::uint64_t(30));
    QCOMPARE(summary.root->optimizerContract, optimizer.toStdString());
    QCOMPARE(summary.root->producerName, std::string("tests/oracle/record.py"));
    CaseStore store(dir_.file("python.zkaudit"), CaseStore::Access::ReadWrite);
    IngestResult result = store.ingestTape(path.toStdString());
    QVERIFY(!result.alreadyPresent);
    QCOMPARE(result.summary.transactionCount, std::uint64_t(30));
}

QTEST_GUILESS_MAIN(TestRecorder)
#include "test_recorder.moc"
