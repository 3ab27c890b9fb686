#include "zkdv/program/sealed_program.h"

#include <optional>
#include <set>
#include <sstream>

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/passes/inliner.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/serialization/import.h>

namespace zkdv {

namespace {

// Substrings of operator names that draw random numbers (the seed's `lower` list, and
// attention, whose dropout_p draws).
constexpr const char* kRandomMarkers[] = {"bernoulli", "dropout",  "exponential", "multinomial",      "normal",
                                          "rand",      "uniform", "rrelu",       "scaled_dot_product"};

bool isRandom(const std::string& op)
{
    for (const char* marker : kRandomMarkers)
        if (op.find(marker) != std::string::npos)
            return true;
    return false;
}

// The values in training_step's inlined graph that the sealed program fixes: constants,
// attributes of the sealed module that the step never assigns, `not` of a fixed bool, and a
// prim::If whose condition is fixed or whose branches agree. `training` is never fixed: the
// replay runs the program after module.train(), whatever mode it was sealed in.
class FixedValues {
public:
    FixedValues(const torch::jit::Module& module, torch::jit::Graph& graph) : self_(graph.inputs()[0]), module_(module._ivalue())
    {
        collectAssigned(graph.block());
    }

    std::optional<c10::IValue> of(torch::jit::Value* value, int depth = 0) const
    {
        if (depth > 64)
            return std::nullopt;
        if (value == self_)
            return c10::IValue(module_);
        torch::jit::Node* node = value->node();
        if (node->kind() == c10::prim::Constant)
            return torch::jit::toIValue(value);
        if (node->kind() == c10::prim::GetAttr) {
            const std::string name = node->s(c10::attr::name);
            if (name == "training" || assigned_.count(name))
                return std::nullopt;
            auto object = of(node->input(0), depth + 1);
            if (!object || !object->isObject() || !object->toObjectRef().type()->hasAttribute(name))
                return std::nullopt;
            return object->toObjectRef().getAttr(name);
        }
        if (std::string(node->kind().toQualString()) == "aten::__not__") {
            auto operand = of(node->input(0), depth + 1);
            if (!operand || !operand->isBool())
                return std::nullopt;
            return c10::IValue(!operand->toBool());
        }
        if (node->kind() == c10::prim::If) {
            const std::size_t output = value->offset();
            auto condition = of(node->input(0), depth + 1);
            if (condition && condition->isBool())
                return of(node->blocks()[condition->toBool() ? 0 : 1]->outputs()[output], depth + 1);
            auto taken = of(node->blocks()[0]->outputs()[output], depth + 1);
            auto other = of(node->blocks()[1]->outputs()[output], depth + 1);
            if (taken && other && sameScalar(*taken, *other))
                return taken;
        }
        return std::nullopt;
    }

private:
    static bool sameScalar(const c10::IValue& a, const c10::IValue& b)
    {
        if (a.isDouble() && b.isDouble())
            return a.toDouble() == b.toDouble();
        if (a.isBool() && b.isBool())
            return a.toBool() == b.toBool();
        return false;
    }

    void collectAssigned(torch::jit::Block* block)
    {
        for (torch::jit::Node* node : block->nodes()) {
            if (node->kind() == c10::prim::SetAttr)
                assigned_.insert(node->s(c10::attr::name));
            for (torch::jit::Block* inner : node->blocks())
                collectAssigned(inner);
        }
    }

    torch::jit::Value* self_;
    c10::intrusive_ptr<c10::ivalue::Object> module_;
    std::set<std::string> assigned_;
};

// A dropout (or an attention's dropout) draws nothing when its probability is fixed at 0 or
// its train flag is fixed false: torch returns the input without touching the generator.
bool drawsNothing(torch::jit::Node* node, const FixedValues& fixed)
{
    const std::string op = node->kind().toQualString();
    if (op.find("dropout") == std::string::npos && op.find("scaled_dot_product") == std::string::npos)
        return false;
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (!schema)
        return false;
    for (const char* name : {"p", "dropout_p"})
        if (auto index = schema->argumentIndexWithName(name)) {
            auto p = fixed.of(node->inputs()[*index]);
            if (p && p->isDouble() && p->toDouble() == 0.0)
                return true;
        }
    if (auto index = schema->argumentIndexWithName("train")) {
        auto train = fixed.of(node->inputs()[*index]);
        if (train && train->isBool() && !train->toBool())
            return true;
    }
    return false;
}

void collectRandomOps(torch::jit::Block* block, const FixedValues& fixed, std::set<std::string>& found)
{
    for (torch::jit::Node* node : block->nodes()) {
        const std::string op = node->kind().toQualString();
        if (op.rfind("aten::", 0) == 0 && isRandom(op.substr(6)) && !drawsNothing(node, fixed))
            found.insert(op);
        if (node->kind() == c10::prim::Constant && node->output()->type()->kind() == c10::TypeKind::TensorType)
            found.insert("tensor constant");
        for (torch::jit::Block* inner : node->blocks())
            collectRandomOps(inner, fixed, found);
    }
}

}  // namespace

void checkSealedProgram(const torch::jit::Module& module)
{
    auto method = module.find_method("training_step");
    if (!method)
        throw ProgramError("the sealed program has no training_step method; define training_step(self, batch: List[Tensor]) -> Tensor returning the loss");
    const c10::FunctionSchema& schema = method->function().getSchema();
    if (schema.arguments().size() != 2 || schema.arguments()[1].type()->str() != "Tensor[]" || schema.returns().size() != 1 ||
        schema.returns()[0].type()->kind() != c10::TypeKind::TensorType)
        throw ProgramError("training_step must be declared training_step(self, batch: List[Tensor]) -> Tensor, found " + c10::toString(schema));

    // Tensors the program holds must be exactly its parameters and buffers.
    std::set<std::string> prepared;
    for (const auto& p : module.named_parameters(true))
        prepared.insert(p.name);
    for (const auto& b : module.named_buffers(true))
        prepared.insert(b.name);
    std::string captured;
    for (const auto& attribute : module.named_attributes(true))
        if (attribute.value.isTensor() && !prepared.count(attribute.name))
            captured += (captured.empty() ? "" : ", ") + attribute.name;
    if (!captured.empty())
        throw ProgramError("attested Torch code captured unprepared tensor state (" + captured +
                           "); register it as a parameter or buffer of the sealed program, or pass it in the batch");

    auto graph = method->graph()->copy();
    torch::jit::Inline(*graph);
    const FixedValues fixed(module, *graph);
    std::set<std::string> random;
    collectRandomOps(graph->block(), fixed, random);
    if (random.count("tensor constant")) {
        random.erase("tensor constant");
        if (random.empty())
            throw ProgramError("training_step holds a tensor constant; register it as a buffer of the sealed program or pass it in the batch");
    }
    if (!random.empty()) {
        std::string names;
        for (const std::string& op : random)
            names += (names.empty() ? "" : ", ") + op;
        throw ProgramError("attested Torch code contains random operations (" + names +
                           "); generate randomness outside the transition and include it in the prepared transaction batch");
    }
}

SealedProgram sealProgram(const torch::jit::Module& module)
{
    checkSealedProgram(module);
    std::ostringstream out;
    module.save(out);
    const std::string text = out.str();
    SealedProgram program;
    program.bytes.assign(text.begin(), text.end());
    program.sha256 = Sha256::of(ByteSpan(program.bytes));
    return program;
}

torch::jit::Module loadSealedProgram(const std::vector<std::uint8_t>& bytes, const std::string& device)
{
    std::istringstream in(std::string(bytes.begin(), bytes.end()));
    return torch::jit::load(in, c10::Device(device));
}

namespace {

// The setting is the calling thread's; restore it so the caller's own scripted code keeps its mode.
class GraphExecutorOptimizeOff {
public:
    GraphExecutorOptimizeOff() : previous_(torch::jit::getGraphExecutorOptimize()) { torch::jit::setGraphExecutorOptimize(false); }
    ~GraphExecutorOptimizeOff() { torch::jit::setGraphExecutorOptimize(previous_); }
    GraphExecutorOptimizeOff(const GraphExecutorOptimizeOff&) = delete;
    GraphExecutorOptimizeOff& operator=(const GraphExecutorOptimizeOff&) = delete;

private:
    bool previous_;
};

}  // namespace

at::Tensor runTrainingStep(torch::jit::Module& module, const c10::List<at::Tensor>& batch)
{
    GraphExecutorOptimizeOff unoptimized;
    return module.get_method("training_step")({c10::IValue(batch)}).toTensor();
}

}  // namespace zkdv
