// Exported-graph programs (docs/tape-format.md section 4.2): the reader refuses hostile and
// malformed graphs naming the operator or field, a bounded fuzz of reader and interpreter
// finds no crash, and a tape recorded from C++ with such a program replays exact (libtorch 2),
// or is refused naming the libtorch it needs (libtorch 1.13).

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <nlohmann/json.hpp>

#include <QtTest>

#include <chrono>
#include <cmath>
#include <iterator>
#include <random>

#include "caught.h"
#include "dishonest_trainer.h"
#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/graph/exported_graph.h"
#include "zkdv/program/graph_interpreter.h"
#include "zkdv/graph/operator_allow_list.h"
#include "zkdv/graph/random_operation.h"
#include "zkdv/recorder/recorder.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/tape/tape_scanner.h"

using namespace zkdv;
using Json = nlohmann::json;

namespace {

// The MLP of tests/python/conftest.py, exported by zkdv/torch/export_program.py on torch 2.15.
std::string committedGraph()
{
    return test::readText(ZKDV_TEST_DATA_DIR "/programs/mlp-exported-graph.json");
}

ByteSpan bytesOf(const std::string& text) { return ByteSpan(std::string_view(text)); }

std::string refusalOf(const std::string& text)
{
    auto error = test::caught<ExportedGraphError>([&] { ExportedGraph::parse(bytesOf(text)); });
    return error ? error->what() : std::string();
}

std::vector<TensorSpec> mlpParameters()
{
    return {{"model.hidden.weight", {16, 6}, DType::F32},
            {"model.hidden.bias", {16}, DType::F32},
            {"model.out.weight", {3, 16}, DType::F32},
            {"model.out.bias", {3}, DType::F32}};
}

bool runsExportedGraphs() { return exportedGraphRuntimeProblem().empty(); }

ExportedModel mlpModel(const std::string& graph)
{
    at::manual_seed(3);
    ExportedModel model;
    model.program.assign(graph.begin(), graph.end());
    for (const TensorSpec& spec : mlpParameters()) {
        model.parameterNames.push_back(spec.name);
        model.parameters.push_back((at::randn(spec.shape) * 0.3).requires_grad_(true));
    }
    return model;
}

// Records `steps` transactions of the committed MLP graph from C++, with SGD and momentum.
void recordMlp(const std::string& path, int steps)
{
    ExportedModel model = mlpModel(committedGraph());
    optim::ContractOptimizer optimizer("SGD", model.parameters, {{"lr", 0.05}, {"momentum", 0.9}});
    RecorderOptions config;
    config.stateCheckProbability = 0.5;
    config.updateCheckProbability = 0.5;
    config.samplingSeed = 5;
    config.replaySnapshotInterval = 4;
    Recorder recorder(path, config);
    recorder.prepare(std::move(model));
    PreparedOptimizer& prepared = recorder.prepare(optimizer);
    at::manual_seed(9);
    for (int i = 0; i < steps; ++i) {
        Transaction transaction = recorder.transaction({at::randn({16, 6}), at::randint(0, 3, {16}, at::kLong)});
        recorder.backward(recorder.forwardExported().front());
        prepared.step();
        prepared.zeroGrad();
    }
    recorder.seal();
}

ReplaySummary replayAll(const std::string& tape, const std::string& casePath, std::vector<TransactionOutcome>* outcomes = nullptr)
{
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    store.ingestTape(tape);
    ReplayRequest request;
    request.selection = SelectionSpec::parse("all");
    if (outcomes)
        request.onOutcome = [outcomes](const TransactionOutcome& outcome) { outcomes->push_back(outcome); };
    return runReplay(store, request);
}

}  // namespace

class TestExportedGraph : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void readsTheCommittedGraph();
    void hostileGraphsAreRefused_data();
    void hostileGraphsAreRefused();
    void writesThroughAliasesAreRefused_data();
    void writesThroughAliasesAreRefused();
    void honestWritesAreAccepted();
    void resolvedSizesAreBounded_data();
    void resolvedSizesAreBounded();
    void writeTableAgreesWithSchemas();
    void aGraphRunsWhereItIsPut();
    void signatureMustMatchTheLayout();
    void allowListHoldsNoIoOrRandomness();
    void interpreterChecksArgumentsAgainstSchemas_data();
    void interpreterChecksArgumentsAgainstSchemas();
    void boundedFuzzFindsNoCrash();
    void cppRecordedTapeReplaysExact();
    void dishonestEditIsCaught();
    void goldenTapeReplaysOrNamesTheLibtorchItNeeds();

private:
    test::TempDir dir_;
};

void TestExportedGraph::readsTheCommittedGraph()
{
    const ExportedGraph graph = ExportedGraph::parse(bytesOf(committedGraph()));
    QCOMPARE(graph.inputs.size(), std::size_t(6));
    QCOMPARE(graph.batchSize(), std::size_t(2));
    QCOMPARE(graph.nodes.size(), std::size_t(4));
    QCOMPARE(graph.nodes.front().qualifiedName(), std::string("aten::linear"));
    QCOMPARE(graph.nodes.back().qualifiedName(), std::string("aten::cross_entropy_loss"));
    graph.checkLayout(mlpParameters(), {});
}

void TestExportedGraph::hostileGraphsAreRefused_data()
{
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("named");  // what the refusal must say
    QTest::newRow("file I/O") << "from_file" << "operator aten::from_file is not on the allow-list";
    QTest::newRow("custom op library") << "custom" << "operator mylib::exfiltrate is not on the allow-list";
    QTest::newRow("host readback") << "item" << "operator aten::_local_scalar_dense is not on the allow-list";
    QTest::newRow("random operation") << "bernoulli" << "attested Torch code contains random operations (aten::bernoulli)";
    QTest::newRow("dropout that draws") << "dropout" << "attested Torch code contains random operations (aten::dropout)";
    QTest::newRow("truncated") << "truncated" << "the program is not an exported graph";
    QTest::newRow("forward reference") << "forward reference" << "node 1 (aten::relu).args[0].node: index 2 out of range";
    QTest::newRow("input out of range") << "bad input" << "node 0 (aten::linear).args[0].input: index 99 out of range";
    QTest::newRow("huge declared tensor") << "huge input" << "inputs[4].shape: declares a tensor of more than 16 GiB";
    QTest::newRow("huge shape argument") << "huge list" << "an integer list whose product passes 2^32";
    QTest::newRow("nodes not an array") << "nodes" << "exported graph: nodes: expected an array";
    QTest::newRow("unknown version") << "version" << "exported graph: version: version 2 is not one this reader knows";
    QTest::newRow("unknown value kind") << "value kind" << "unknown value kind \"pickle\"";
    QTest::newRow("no loss") << "no loss" << "missing member \"loss\"";
    QTest::newRow("batch out of order") << "batch order" << "inputs[4].index: batch inputs are numbered 0, 1, … in order";
    QTest::newRow("duplicate parameter") << "duplicate" << "\"model.hidden.bias\" is declared twice";
    // A tensor the step captured (torch.export's lifted constant): the TorchScript path's words.
    QTest::newRow("captured tensors") << "constant input"
                                      << "attested Torch code captured unprepared tensor state (lifted_tensor_0, scale); register it "
                                         "as a parameter or buffer of the sealed program, or pass it in the batch";
}

void TestExportedGraph::hostileGraphsAreRefused()
{
    QFETCH(QString, edit);
    QFETCH(QString, named);
    const std::string original = committedGraph();
    Json graph = Json::parse(original);
    const std::string what = edit.toStdString();
    std::string text;
    if (what == "from_file")
        graph["nodes"][1] = {{"op", "aten::from_file"}, {"args", {{{"str", "/etc/passwd"}}}}};
    else if (what == "custom")
        graph["nodes"][1]["op"] = "mylib::exfiltrate";
    else if (what == "item")
        graph["nodes"][1]["op"] = "aten::_local_scalar_dense";
    else if (what == "bernoulli")
        graph["nodes"][1]["op"] = "aten::bernoulli";
    else if (what == "dropout")
        graph["nodes"][1] = {{"op", "aten::dropout"}, {"args", {{{"node", 0}}, {{"float", 0.5}}, {{"bool", true}}}}};
    else if (what == "forward reference")
        graph["nodes"][1]["args"][0] = {{"node", 2}};
    else if (what == "bad input")
        graph["nodes"][0]["args"][0] = {{"input", 99}};
    else if (what == "huge input")
        graph["inputs"][4]["shape"] = {1 << 20, 1 << 20, 1 << 10};
    else if (what == "huge list")
        graph["nodes"][1] = {{"op", "aten::view"}, {"args", {{{"node", 0}}, {{"list", {{{"int", 1 << 20}}, {{"int", 1 << 20}}, {{"int", 1 << 10}}}}}}}};
    else if (what == "nodes")
        graph["nodes"] = {{"op", "aten::linear"}};
    else if (what == "version")
        graph["version"] = 2;
    else if (what == "value kind")
        graph["nodes"][0]["args"][2] = {{"pickle", "gASVAAAAAAAAAAB9lC4="}};
    else if (what == "no loss")
        graph.erase("loss");
    else if (what == "batch order")
        graph["inputs"][4]["index"] = 1;
    else if (what == "duplicate")
        graph["inputs"][0]["name"] = "model.hidden.bias";
    else if (what == "constant input") {
        graph["inputs"].push_back({{"kind", "constant"}, {"name", "lifted_tensor_0"}});
        graph["inputs"].push_back({{"kind", "constant"}, {"name", "scale"}});
    }
    text = what == "truncated" ? original.substr(0, original.size() / 2) : graph.dump();
    const std::string refusal = refusalOf(text);
    QVERIFY2(refusal.find(named.toStdString()) != std::string::npos, refusal.c_str());
}

namespace {

// The committed MLP's inputs: 0-3 the parameters (model.hidden.weight, model.hidden.bias,
// model.out.weight, model.out.bias), 4 and 5 the batch; its nodes 0-3 end in the loss. The
// hand-written attacks append nodes after the loss, which the reader checks all the same.
Json node(const char* op, const char* overload, const std::vector<Json>& args, Json kwargs = nullptr)
{
    Json n = {{"op", op}, {"overload", overload}};
    n["args"] = Json::array();
    for (const Json& a : args)
        n["args"].push_back(a);
    if (!kwargs.is_null())
        n["kwargs"] = std::move(kwargs);
    return n;
}
Json input(int i) { return {{"input", i}}; }
Json ref(int n) { return {{"node", n}}; }
Json item(int n, int k) { return {{"node", n}, {"output", k}}; }
Json number(double x) { return {{"float", x}}; }
Json integer(std::int64_t x) { return {{"int", x}}; }
Json flag(bool b) { return {{"bool", b}}; }
Json ints(std::initializer_list<std::int64_t> values)
{
    Json list = Json::array();
    for (std::int64_t v : values)
        list.push_back(integer(v));
    return {{"list", list}};
}
Json batchNorm(Json x, Json runningMean, Json runningVar)
{
    return node("aten::batch_norm", "", {x, nullptr, nullptr, runningMean, runningVar, flag(true), number(0.1), number(1e-5), flag(false)});
}

}  // namespace

void TestExportedGraph::writesThroughAliasesAreRefused_data()
{
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("named");
    QTest::newRow("parameter in place") << "direct" << "node 4 (aten::add_.Tensor) argument 'self': writes into model.hidden.weight;";
    QTest::newRow("through detach") << "detach" << "node 5 (aten::add_.Tensor) argument 'self': writes into model.hidden.weight, through node 4 (aten::detach)";
    QTest::newRow("through detach by keyword") << "detach kwarg" << "node 5 (aten::relu_) argument 'self': writes into model.out.bias, through node 4 (aten::detach)";
    QTest::newRow("through a chain of views") << "views" << "node 7 (aten::relu_) argument 'self': writes into model.out.weight, through node 6 (aten::slice.Tensor)";
    QTest::newRow("through a split item") << "split" << "node 5 (aten::add_.Tensor) argument 'self': writes into model.hidden.bias, through node 4 (aten::split.Tensor)";
    QTest::newRow("through alias and contiguous") << "alias" << "node 6 (aten::relu_) argument 'self': writes into batch/0, through node 5 (aten::contiguous)";
    QTest::newRow("through einsum of one operand") << "einsum" << "node 5 (aten::add_.Tensor) argument 'self': writes into model.out.weight, through node 4 (aten::einsum)";
    QTest::newRow("through a dropout that returns its input") << "dropout" << "writes into model.hidden.weight, through node 4 (aten::dropout)";
    QTest::newRow("parameter as running_mean") << "running mean" << "node 4 (aten::batch_norm) argument 'running_mean': writes into model.hidden.bias";
    QTest::newRow("parameter alias as running_var") << "running var" << "node 5 (aten::batch_norm) argument 'running_var': writes into model.out.bias, through node 4 (aten::detach)";
    QTest::newRow("batch as running_mean") << "batch stats" << "argument 'running_mean': writes into batch/1";
    QTest::newRow("constant in place") << "constant" << "node 4 (aten::add_.Tensor) argument 'self': writes into a constant";
    QTest::newRow("constant through alias") << "constant alias" << "node 5 (aten::relu_) argument 'self': writes into a constant";
    QTest::newRow("constant as running_var") << "constant stats" << "argument 'running_var': writes into a constant";
}

void TestExportedGraph::writesThroughAliasesAreRefused()
{
    QFETCH(QString, edit);
    QFETCH(QString, named);
    Json graph = Json::parse(committedGraph());
    Json& nodes = graph["nodes"];
    const std::string what = edit.toStdString();
    if (what == "direct") {
        nodes.push_back(node("aten::add_", "Tensor", {input(0), number(0.01)}));
    } else if (what == "detach") {
        nodes.push_back(node("aten::detach", "", {input(0)}));
        nodes.push_back(node("aten::add_", "Tensor", {ref(4), number(0.01)}));
    } else if (what == "detach kwarg") {
        nodes.push_back(node("aten::detach", "", {}, Json::object({{"self", input(3)}})));
        nodes.push_back(node("aten::relu_", "", {ref(4)}));
    } else if (what == "views") {
        nodes.push_back(node("aten::t", "", {input(2)}));
        nodes.push_back(node("aten::reshape", "", {ref(4), ints({-1})}));
        nodes.push_back(node("aten::slice", "Tensor", {ref(5), integer(0), integer(0), integer(8), integer(1)}));
        nodes.push_back(node("aten::relu_", "", {ref(6)}));
    } else if (what == "split") {
        nodes.push_back(node("aten::split", "Tensor", {input(1), integer(4)}));
        nodes.push_back(node("aten::add_", "Tensor", {item(4, 2), number(1.0)}));
    } else if (what == "alias") {
        nodes.push_back(node("aten::alias", "", {input(4)}));
        nodes.push_back(node("aten::contiguous", "", {ref(4)}));
        nodes.push_back(node("aten::relu_", "", {ref(5)}));
    } else if (what == "einsum") {
        nodes.push_back(node("aten::einsum", "", {Json{{"str", "ij->ji"}}, Json{{"list", Json::array({input(2)})}}}));
        nodes.push_back(node("aten::add_", "Tensor", {ref(4), number(0.01)}));
    } else if (what == "dropout") {
        nodes.push_back(node("aten::dropout", "", {input(0), number(0.0), flag(true)}));
        nodes.push_back(node("aten::add_", "Tensor", {ref(4), number(0.01)}));
    } else if (what == "running mean") {
        nodes.push_back(batchNorm(ref(0), input(1), nullptr));
    } else if (what == "running var") {
        nodes.push_back(node("aten::detach", "", {input(3)}));
        nodes.push_back(batchNorm(ref(2), nullptr, ref(4)));
    } else if (what == "batch stats") {
        nodes.push_back(batchNorm(ref(0), input(5), nullptr));
    } else if (what == "constant") {
        nodes.push_back(node("aten::add_", "Tensor", {number(0.0), ref(3)}));
    } else if (what == "constant alias") {
        nodes.push_back(node("aten::alias", "", {integer(0)}));
        nodes.push_back(node("aten::relu_", "", {ref(4)}));
    } else if (what == "constant stats") {
        nodes.push_back(batchNorm(ref(0), nullptr, number(1.0)));
    }
    const std::string refusal = refusalOf(graph.dump());
    QVERIFY2(refusal.find(named.toStdString()) != std::string::npos, refusal.c_str());
    QVERIFY2(refusal.find("a program writes only into buffers and its own values") != std::string::npos, refusal.c_str());
}

void TestExportedGraph::honestWritesAreAccepted()
{
    // What torch.export's training IR makes of a BatchNorm CNN: batch_norm updates the running
    // statistics (buffers) it is given, num_batches_tracked += 1 in place, an in-place ReLU of
    // a fresh value and of a view of one.
    Json graph = {{"format", "zkdv-exported-graph"},
                  {"version", 1},
                  {"inputs",
                   {{{"kind", "parameter"}, {"name", "conv.weight"}, {"dtype", "F32"}, {"shape", {4, 1, 3, 3}}},
                    {{"kind", "parameter"}, {"name", "conv.bias"}, {"dtype", "F32"}, {"shape", {4}}},
                    {{"kind", "parameter"}, {"name", "norm.weight"}, {"dtype", "F32"}, {"shape", {4}}},
                    {{"kind", "parameter"}, {"name", "norm.bias"}, {"dtype", "F32"}, {"shape", {4}}},
                    {{"kind", "buffer"}, {"name", "norm.running_mean"}, {"dtype", "F32"}, {"shape", {4}}},
                    {{"kind", "buffer"}, {"name", "norm.running_var"}, {"dtype", "F32"}, {"shape", {4}}},
                    {{"kind", "buffer"}, {"name", "norm.num_batches_tracked"}, {"dtype", "I64"}, {"shape", Json::array()}},
                    {{"kind", "batch"}, {"index", 0}, {"dtype", "F32"}, {"shape", {8, 1, 6, 6}}},
                    {{"kind", "batch"}, {"index", 1}, {"dtype", "I64"}, {"shape", {8}}}}},
                  {"nodes",
                   {node("aten::conv2d", "", {input(7), input(0), input(1)}),
                    node("aten::add_", "Tensor", {input(6), integer(1)}),
                    node("aten::batch_norm", "", {ref(0), input(2), input(3), input(4), input(5), flag(true), number(0.1), number(1e-5), flag(true)}),
                    node("aten::relu_", "", {ref(2)}),
                    node("aten::view", "", {ref(3), ints({8, -1})}),
                    node("aten::relu_", "", {ref(4)}),
                    node("aten::mean", "dim", {ref(4), ints({1}), flag(true)}),
                    node("aten::expand", "", {ref(6), ints({-1, 3})}),
                    node("aten::cross_entropy_loss", "", {ref(7), input(8)})}},
                  {"loss", ref(8)},
                  {"outputs", Json::array({ref(7)})},
                  {"buffer_updates", Json::array()}};
    const ExportedGraph parsed = ExportedGraph::parse(bytesOf(graph.dump()));
    QCOMPARE(parsed.nodes.size(), std::size_t(9));
    parsed.checkLayout({{"conv.weight", {4, 1, 3, 3}, DType::F32}, {"conv.bias", {4}, DType::F32}, {"norm.weight", {4}, DType::F32}, {"norm.bias", {4}, DType::F32}},
                       {{"norm.running_mean", {4}, DType::F32}, {"norm.running_var", {4}, DType::F32}, {"norm.num_batches_tracked", {}, DType::I64}});
    ExportedGraph::parse(bytesOf(committedGraph()));
}

void TestExportedGraph::resolvedSizesAreBounded_data()
{
    // Every list's own product stays within 2^32 (the reader's first bound); resolved against
    // the input's shape, each declares far more. batch/0 is given the shape [65536, 1].
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("named");
    QTest::newRow("expand with -1") << "expand" << "node 4 (aten::expand): its sizes, resolved against its input's shape [65536, 1], declare a tensor of more than 2^32 elements";
    QTest::newRow("expand with -1 by keyword") << "expand kwarg" << "node 4 (aten::expand): its sizes, resolved";
    QTest::newRow("repeat") << "repeat" << "node 4 (aten::repeat): its sizes, resolved against its input's shape [65536, 1]";
    QTest::newRow("constant_pad_nd") << "pad" << "node 4 (aten::constant_pad_nd): its sizes, resolved against its input's shape [65536, 1]";
    QTest::newRow("one_hot sized by the data") << "one_hot" << "node 4 (aten::one_hot): one_hot's num_classes must be fixed";
    QTest::newRow("expand -1 in a new dimension") << "expand lead" << "expand's size -1 in a dimension its input does not have";
    QTest::newRow("arange past 2^32") << "arange" << "node 4 (aten::arange): arange's end declares a tensor of more than 2^32 elements";
    QTest::newRow("arange to infinity") << "arange inf" << "node 4 (aten::arange): arange's end declares a tensor of more than 2^32";
    QTest::newRow("arange to a tensor") << "arange tensor" << "node 4 (aten::arange): arange's end must be a number the program fixes";
}

void TestExportedGraph::resolvedSizesAreBounded()
{
    QFETCH(QString, edit);
    QFETCH(QString, named);
    Json graph = Json::parse(committedGraph());
    graph["inputs"][4]["shape"] = {65536, 1};
    Json& nodes = graph["nodes"];
    const std::string what = edit.toStdString();
    if (what == "expand")
        nodes.push_back(node("aten::expand", "", {input(4), ints({65536, -1, 65536})}));
    else if (what == "expand kwarg")
        nodes.push_back(node("aten::expand", "", {input(4)}, Json::object({{"size", ints({65536, -1, 65536})}})));
    else if (what == "repeat")
        nodes.push_back(node("aten::repeat", "", {input(4), ints({65536, 2})}));
    else if (what == "pad")
        nodes.push_back(node("aten::constant_pad_nd", "", {input(4), ints({0, 1 << 20})}));
    else if (what == "one_hot")
        nodes.push_back(node("aten::one_hot", "", {input(5), integer(-1)}));
    else if (what == "expand lead")
        nodes.push_back(node("aten::expand", "", {input(4), ints({-1, 65536, 1})}));
    else if (what == "arange")
        nodes.push_back(node("aten::arange", "", {integer((std::int64_t(1) << 32) + 1)}));
    else if (what == "arange inf")
        nodes.push_back(node("aten::arange", "", {Json{{"float", "inf"}}}));
    else if (what == "arange tensor")
        nodes.push_back(node("aten::arange", "", {input(4)}));
    const std::string refusal = refusalOf(graph.dump());
    QVERIFY2(refusal.find(named.toStdString()) != std::string::npos, refusal.c_str());

    // On an intermediate value the interpreter resolves the same sizes against the tensor it
    // runs; the reader's function is the one it calls.
    if (what == "expand") {
        GraphNode call;
        call.op = "aten::expand";
        call.args.resize(2);
        call.args[0].kind = GraphValue::Kind::Node;
        call.args[1].kind = GraphValue::Kind::List;
        for (std::int64_t extent : {65536, -1, 65536}) {
            GraphValue v;
            v.kind = GraphValue::Kind::Int;
            v.integer = extent;
            call.args[1].items.push_back(v);
        }
        const std::vector<std::int64_t> small = {65536, 1}, fits = {1, 1};
        auto error = test::caught<ExportedGraphError>([&] { checkDeclaredSize(call, &small, "node 9 (aten::expand)"); });
        QVERIFY(error && std::string(error->what()).find("node 9 (aten::expand): its sizes, resolved") != std::string::npos);
        checkDeclaredSize(call, &fits, "node 9 (aten::expand)");  // 2^32 elements: the bound itself
        checkDeclaredSize(call, nullptr, "node 9 (aten::expand)");  // unknown input: left to the interpreter
    }
}

void TestExportedGraph::writeTableAgreesWithSchemas()
{
    // The reader's write check rests on the allow-list's table of what each operator writes
    // and aliases; every schema this libtorch has for a listed operator must say no more.
    std::size_t compared = 0;
    for (const std::string& name : allowedOperators()) {
        const std::size_t dot = name.find('.');
        auto handle = c10::Dispatcher::singleton().findSchema(
            c10::OperatorName(name.substr(0, dot), dot == std::string::npos ? "" : name.substr(dot + 1)));
        if (!handle)
            continue;  // an operator of a later libtorch
        ++compared;
        const std::optional<OperatorEffect> effect = allowedOperatorEffect(name);
        QVERIFY(effect);
        const auto& arguments = handle->schema().arguments();
        for (std::size_t a = 0; a < arguments.size(); ++a) {
            if (!arguments[a].alias_info() || !arguments[a].alias_info()->isWrite())
                continue;
            bool recorded = false;
            for (const OperatorEffect::Write& write : effect->writes)
                recorded = recorded || (write.position == a && arguments[a].name() == write.name);
            QVERIFY2(recorded, qPrintable(QString::fromStdString(name + " writes " + arguments[a].name())));
        }
        for (const OperatorEffect::Write& write : effect->writes)
            QVERIFY2(write.position < arguments.size() && arguments[write.position].name() == write.name, name.c_str());
        if (effect->result == OperatorEffect::Result::New)
            for (const c10::Argument& r : handle->schema().returns())
                QVERIFY2(!r.alias_info(), qPrintable(QString::fromStdString(name + " returns an alias")));
    }
    QVERIFY2(compared > 150, qPrintable(QString::number(compared)));
}

void TestExportedGraph::aGraphRunsWhereItIsPut()
{
    // The loss moved to "meta" (a device without data) and asserted to be there: were the
    // device a graph names its own, the loss would hold no number, and a graph captured on one
    // device would run elsewhere on another. The interpreter runs both on the program's device.
    Json graph = Json::parse(committedGraph());
    Json& nodes = graph["nodes"];
    const int last = static_cast<int>(nodes.size()) - 1;
    const Json meta = {{"device", "meta"}};
    nodes.push_back(node("aten::to", "device", {ref(last), meta, Json{{"dtype", "F32"}}}));
    nodes.push_back(node("aten::_assert_tensor_metadata", "", {ref(last + 1)}, Json::object({{"device", meta}})));
    graph["loss"] = ref(last + 1);
    const std::string text = graph.dump();
    const ExportedGraph parsed = ExportedGraph::parse(bytesOf(text));  // on the allow-list, on every libtorch
    QCOMPARE(parsed.nodes.back().qualifiedName(), std::string("aten::_assert_tensor_metadata"));
    if (!runsExportedGraphs()) {
        auto error = test::caught<ExportedGraphError>([&] { GraphInterpreter interpreter(parsed); });
        QVERIFY(error && std::string(error->what()).find("needs libtorch 2.x") != std::string::npos);
        return;
    }
    GraphInterpreter interpreter(parsed);
    ExportedModel model = mlpModel(text);
    interpreter.bind(mlpParameters(), model.parameters, {}, {});
    at::manual_seed(5);
    const std::vector<at::Tensor> results = interpreter.run({at::randn({16, 6}), at::randint(0, 3, {16}, at::kLong)});
    QCOMPARE(results.front().device().type(), c10::DeviceType::CPU);
    QVERIFY(std::isfinite(results.front().item<float>()));
}

void TestExportedGraph::signatureMustMatchTheLayout()
{
    const ExportedGraph graph = ExportedGraph::parse(bytesOf(committedGraph()));
    std::vector<TensorSpec> layout = mlpParameters();
    layout[2].shape = {4, 16};
    auto error = test::caught<ExportedGraphError>([&] { graph.checkLayout(layout, {}); });
    QVERIFY(error);
    QVERIFY2(std::string(error->what()).find("parameter 'model.out.weight' is F32 [3,16], the layout's F32 [4,16]") != std::string::npos,
             error->what());
    layout = mlpParameters();
    layout.pop_back();
    error = test::caught<ExportedGraphError>([&] { graph.checkLayout(layout, {}); });
    QVERIFY(error && std::string(error->what()).find("takes a parameter the tape's layout does not list: 'model.out.bias'") != std::string::npos);
    layout = mlpParameters();
    layout.push_back({"model.extra", {2}, DType::F32});
    error = test::caught<ExportedGraphError>([&] { graph.checkLayout(layout, {}); });
    QVERIFY(error && std::string(error->what()).find("has no parameter input 'model.extra'") != std::string::npos);
    error = test::caught<ExportedGraphError>([&] { graph.checkLayout(mlpParameters(), {{"model.norm.running_mean", {4}, DType::F32}}); });
    QVERIFY(error && std::string(error->what()).find("has no buffer input 'model.norm.running_mean'") != std::string::npos);
}

void TestExportedGraph::allowListHoldsNoIoOrRandomness()
{
    const std::vector<std::string> list = allowedOperators();
    QVERIFY(list.size() > 100);
    for (const std::string& op : list) {
        QVERIFY2(op.rfind("aten::", 0) == 0, op.c_str());
        for (const char* forbidden : {"file", "save", "load", "item", "_local_scalar", "set_", "resize", "copy_", "rand", "normal", "bernoulli"})
            QVERIFY2(op.find(forbidden) == std::string::npos, op.c_str());
    }
    QVERIFY(isAllowedOperator("aten::linear.default"));
    QVERIFY(isAllowedOperator("aten::add.Tensor"));
    QVERIFY(!isAllowedOperator("aten::add"));  // an overload the list does not name
    QVERIFY(drawsRandomNumbers({"aten::randn_like"}));
    QVERIFY(!drawsRandomNumbers({"aten::linear"}));
    QVERIFY(drawsRandomNumbers({"aten::poisson", true, false}));  // by its Generator argument
    QVERIFY(drawsRandomNumbers({"aten::some_sampler", false, true}));  // by libtorch's seeded tag
}

void TestExportedGraph::interpreterChecksArgumentsAgainstSchemas_data()
{
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("named");
    QTest::newRow("string for a tensor") << "int for tensor" << "node 0 (aten::linear) argument 'weight': expected a tensor";
    QTest::newRow("tensor for an int") << "tensor for int" << "node 1 (aten::flatten.using_ints) argument 'start_dim': a tensor where the schema takes int";
    QTest::newRow("unknown keyword") << "kwarg" << "node 1 (aten::relu): the schema has no argument 'inplace'";
    QTest::newRow("too many arguments") << "arguments" << "node 1 (aten::relu): 2 arguments given, the schema takes 1";
    QTest::newRow("write into a parameter") << "write" << "argument 'self': writes into model.hidden.weight";
    QTest::newRow("operator this libtorch lacks") << "missing op" << "node 1 (aten::mean.no_such_overload): this libtorch";
}

void TestExportedGraph::interpreterChecksArgumentsAgainstSchemas()
{
    QFETCH(QString, edit);
    QFETCH(QString, named);
    Json graph = Json::parse(committedGraph());
    const std::string what = edit.toStdString();
    if (what == "int for tensor")
        graph["nodes"][0]["args"][1] = {{"str", "weight"}};
    else if (what == "tensor for int")
        graph["nodes"][1] = {{"op", "aten::flatten"}, {"overload", "using_ints"}, {"args", {{{"node", 0}}, {{"node", 0}}}}};
    else if (what == "kwarg")
        graph["nodes"][1]["kwargs"] = {{"inplace", {{"bool", true}}}};
    else if (what == "arguments")
        graph["nodes"][1]["args"].push_back({{"int", 1}});
    else if (what == "write")
        graph["nodes"][1] = {{"op", "aten::add_"}, {"overload", "Tensor"}, {"args", {{{"input", 0}}, {{"int", 1}}}}};
    else if (what == "missing op")
        graph["nodes"][1] = {{"op", "aten::mean"}, {"overload", "no_such_overload"}, {"args", {{{"node", 0}}}}};
    const std::string text = graph.dump();
    std::string refusal;
    try {
        GraphInterpreter interpreter(ExportedGraph::parse(bytesOf(text)));
    } catch (const ExportedGraphError& error) {
        refusal = error.what();
    }
    if (what == "write") {
        // The reader's write check refuses it first, on every libtorch.
        QVERIFY2(refusal.find("node 1 (aten::add_.Tensor) " + named.toStdString()) != std::string::npos, refusal.c_str());
        return;
    }
    if (!runsExportedGraphs()) {
        // libtorch 1.13 resolves nothing: every graph is refused naming the libtorch it needs.
        QVERIFY2(refusal.find("needs libtorch 2.x") != std::string::npos || refusal.find("allow-list") != std::string::npos, refusal.c_str());
        return;
    }
    if (what == "missing op") {
        // The allow-list is checked first: an overload it does not name never reaches libtorch.
        QVERIFY2(refusal.find("aten::mean.no_such_overload is not on the allow-list") != std::string::npos, refusal.c_str());
        return;
    }
    QVERIFY2(refusal.find(named.toStdString()) != std::string::npos, refusal.c_str());
}

void TestExportedGraph::boundedFuzzFindsNoCrash()
{
    // Random byte edits, cuts and splices of the committed graph for a bounded time: the reader
    // and, for what it accepts, the interpreter's resolution either accept or refuse with an
    // ExportedGraphError; anything else escaping (or a crash) fails the test.
    const std::string original = committedGraph();
    std::mt19937_64 random(17);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
    const std::string alphabet = "{}[]\",:0123456789-.eE aeilnoprstu\\";
    std::size_t runs = 0, accepted = 0;
    while (std::chrono::steady_clock::now() < until) {
        std::string text = original;
        const int edits = 1 + static_cast<int>(random() % 4);
        for (int e = 0; e < edits && !text.empty(); ++e) {
            const std::size_t at = random() % text.size();
            switch (random() % 4) {
            case 0:
                text[at] = alphabet[random() % alphabet.size()];
                break;
            case 1:
                text.erase(at, 1 + random() % 8);
                break;
            case 2:
                text.insert(at, 1, alphabet[random() % alphabet.size()]);
                break;
            default:
                text.insert(at, text.substr(random() % text.size(), 1 + random() % 32));
            }
        }
        ++runs;
        try {
            GraphInterpreter interpreter(ExportedGraph::parse(bytesOf(text)));
            ++accepted;
        } catch (const ExportedGraphError&) {
        } catch (const std::exception& other) {
            QFAIL(qPrintable(QStringLiteral("not an ExportedGraphError: %1 for %2").arg(other.what(), QString::fromStdString(text))));
        }
    }
    qInfo("%zu mutated graphs, %zu accepted", runs, accepted);
    QVERIFY(runs > 100);
}

void TestExportedGraph::cppRecordedTapeReplaysExact()
{
    const std::string tape = dir_.file("mlp-exported.zkdv");
    if (!runsExportedGraphs()) {
        auto error = test::caught<ExportedGraphError>([&] { recordMlp(tape, 1); });
        QVERIFY(error);
        QVERIFY2(std::string(error->what()).find("needs libtorch 2.x or later") != std::string::npos, error->what());
        return;
    }
    recordMlp(tape, 10);
    const TapeSummary summary = scanTape(tape);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "no problem named");
    QCOMPARE(summary.root->programKind, std::string(kExportedGraphKind));
    QCOMPARE(summary.formatMinor, tape::kMinorVersion);  // the writer's current format
    // The embedded program is the graph's bytes, committed to by the root.
    QVERIFY(summary.embeddedProgramSha256 && *summary.embeddedProgramSha256 == Sha256::of(bytesOf(committedGraph())));
    const ReplaySummary replayed = replayAll(tape, dir_.file("mlp-exported.zkaudit"));
    QVERIFY2(replayed.status == RunStatus::Finished, replayed.problem.c_str());
    QCOMPARE(replayed.replayed, std::uint64_t(10));
    QCOMPARE(replayed.exact, std::uint64_t(10));
}

void TestExportedGraph::dishonestEditIsCaught()
{
    if (!runsExportedGraphs()) {
        QVERIFY(exportedGraphRuntimeProblem().find("needs libtorch 2.x") != std::string::npos);
        return;
    }
    const std::string honest = dir_.file("honest-exported.zkdv"), edited = dir_.file("edited-exported.zkdv");
    recordMlp(honest, 10);
    test::rewriteTape(honest, edited, [](test::RawRecord& record) {
        if (test::isTransaction(record, 6))
            test::scaleElement(record, "loss", 0, 1.001f);
    });
    QVERIFY(scanTape(edited).complete());
    std::vector<TransactionOutcome> outcomes;
    const ReplaySummary replayed = replayAll(edited, dir_.file("edited-exported.zkaudit"), &outcomes);
    QVERIFY(!replayed.passed());
    QCOMPARE(replayed.diverged, std::uint64_t(1));
    for (const TransactionOutcome& outcome : outcomes)
        QVERIFY2((outcome.verdict == Verdict::Diverged) == (outcome.index == 6), outcome.detail.c_str());
}

void TestExportedGraph::goldenTapeReplaysOrNamesTheLibtorchItNeeds()
{
    // Recorded through zkdv.torch on the PyPI lane (tests/data/golden/README.md): libtorch 2.15
    // replays it exact; libtorch 1.13 verifies and ingests it and reports every transaction
    // unverifiable, naming the libtorch it needs.
    const std::string golden = ZKDV_TEST_DATA_DIR "/golden/mlp-exported-torch2.15-1.4.zkdv";
    const std::string copy = dir_.file("golden-exported.zkdv");
    test::writeAll(copy, test::readAll(golden));
    const TapeSummary summary = scanTape(copy);
    QVERIFY(summary.status == TapeStatus::Sealed);
    QCOMPARE(summary.root->programKind, std::string(kExportedGraphKind));
    std::vector<TransactionOutcome> outcomes;
    const ReplaySummary replayed = replayAll(copy, dir_.file("golden-exported.zkaudit"), &outcomes);
    QVERIFY2(replayed.status == RunStatus::Finished, replayed.problem.c_str());
    QCOMPARE(replayed.replayed, summary.transactionCount);
    if (runsExportedGraphs()) {
        // Exact in the recording environment; on another CPU (the tape, of format 1.4, records
        // none) every transaction passes, bit for bit or within the cross-environment envelope.
        if (replayed.regime == "same-environment")
            QCOMPARE(replayed.exact, summary.transactionCount);
        else
            QCOMPARE(replayed.exact + replayed.withinTolerance, summary.transactionCount);
        QCOMPARE(replayed.diverged, std::uint64_t(0));
        return;
    }
    QCOMPARE(replayed.unverifiable, summary.transactionCount);
    for (const TransactionOutcome& outcome : outcomes)
        QVERIFY2(outcome.detail.find("needs libtorch 2.x or later") != std::string::npos && outcome.detail.find("1.13") != std::string::npos,
                 outcome.detail.c_str());
}

QTEST_MAIN(TestExportedGraph)
#include "test_exported_graph.moc"
