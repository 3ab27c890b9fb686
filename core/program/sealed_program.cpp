#include "zkdv/program/sealed_program.h"

#include <algorithm>
#include <set>
#include <sstream>
#include <unordered_map>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/serialization/import.h>

#include "step_graph.h"
#include "zkdv/graph/random_operation.h"

namespace zkdv {

namespace {

// The random-operation rule (random_operation.h) fed with what the node's schema says.
bool nodeDrawsRandomNumbers(torch::jit::Node* node, const StepGraph& step)
{
    const std::string op = node->kind().toQualString();
    OperatorRandomness traits{op};
    const c10::FunctionSchema* schema = node->maybeSchema();
    if (schema) {
        for (const c10::Argument& argument : schema->arguments()) {
            c10::TypePtr type = argument.type();
            if (type->kind() == c10::TypeKind::OptionalType)
                type = type->castRaw<c10::OptionalType>()->getElementType();
            traits.takesGenerator = traits.takesGenerator || type->kind() == c10::TypeKind::GeneratorType;
        }
        if (auto handle = c10::Dispatcher::singleton().findOp(schema->operator_name()))
            traits.taggedSeeded = handle->hasTag(at::Tag::nondeterministic_seeded);
    }
    if (!drawsRandomNumbers(traits))
        return false;
    return !drawsNothing(op, [&](std::size_t, const char* name) {
        FixedArgument fixed;
        auto index = schema ? schema->argumentIndexWithName(name) : c10::nullopt;
        if (!index || static_cast<std::size_t>(*index) >= node->inputs().size())
            return fixed;
        if (auto value = step.fixed(node->inputs()[*index])) {
            if (value->isDouble())
                fixed.number = value->toDouble();
            else if (value->isInt())
                fixed.number = static_cast<double>(value->toInt());
            else if (value->isBool())
                fixed.flag = value->toBool();
        }
        return fixed;
    });
}

// TorchScript lists a module class's constants in the order Python iterates a set of their
// names (torch.jit._recursive), which changes with each process's string hashing: the same
// code would save to other bytes, and seal to another digest, in every process. Sorted by
// name, one code saves to one program. Code reads constants by value, compiled in, never by
// slot, so their order is only the saved text's.
void sortConstantsByName(const torch::jit::Module& module)
{
    for (const torch::jit::Module& part : module.modules()) {
        const c10::ClassTypePtr type = part.type();
        const std::vector<std::string> names(type->constantNames().begin(), type->constantNames().end());
        if (std::is_sorted(names.begin(), names.end()))
            continue;
        std::vector<std::pair<std::string, c10::IValue>> constants;
        for (const std::string& name : names)
            constants.emplace_back(name, type->getConstant(name));
        std::sort(constants.begin(), constants.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (const std::string& name : names)
            type->unsafeRemoveConstant(name);
        for (const auto& [name, value] : constants)
            type->addConstant(name, value);
    }
}

// The program is the step's code; a replay takes every value from the tape's snapshots. Saved
// with its parameters and buffers as zeros, one code and layout seal to one digest whatever
// the values at sealing, so a resumed run's tape shows it runs its predecessor's program
// (docs/tape-format.md section 4). The module's own tensors are put back after saving; a
// tensor held under two names (tied weights) is one zero tensor under both.
class ZeroedState {
public:
    explicit ZeroedState(const torch::jit::Module& module)
    {
        std::unordered_map<const void*, at::Tensor> zeros;
        for (const torch::jit::Module& part : module.modules()) {
            const c10::ClassTypePtr type = part.type();
            for (std::size_t slot = 0; slot < type->numAttributes(); ++slot) {
                if (!type->is_parameter(slot) && !type->is_buffer(slot))
                    continue;
                const c10::IValue value = part._ivalue()->getSlot(slot);
                if (!value.isTensor() || !value.toTensor().defined())
                    continue;
                const at::Tensor& tensor = value.toTensor();
                auto [zero, added] = zeros.try_emplace(tensor.unsafeGetTensorImpl());
                if (added)
                    zero->second = at::zeros_like(tensor, at::MemoryFormat::Contiguous).requires_grad_(tensor.requires_grad());
                saved_.push_back({part._ivalue(), slot, value});
                part._ivalue()->setSlot(slot, c10::IValue(zero->second));
            }
        }
    }
    ~ZeroedState()
    {
        for (auto& [object, slot, value] : saved_)
            object->setSlot(slot, std::move(value));
    }
    ZeroedState(const ZeroedState&) = delete;
    ZeroedState& operator=(const ZeroedState&) = delete;

private:
    struct Saved {
        c10::intrusive_ptr<c10::ivalue::Object> object;
        std::size_t slot;
        c10::IValue value;
    };
    std::vector<Saved> saved_;
};

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

    // Tensors the program holds, in any attribute, container or submodule, must be exactly its
    // parameters and buffers.
    checkHeldState(module);

    const StepGraph step(module);
    std::set<std::string> random;
    bool tensorConstant = false;
    step.forEachNode([&](torch::jit::Node* node) {
        if (nodeDrawsRandomNumbers(node, step))
            random.insert(node->kind().toQualString());
        if (node->kind() == c10::prim::Constant && node->output()->type()->kind() == c10::TypeKind::TensorType) {
            // A number the code wrote where an operator takes a tensor (torch.jit.trace records
            // BatchNorm's `num_batches_tracked += 1` with a 0-dim constant) is code, not state;
            // a write into any constant is refused below (checkStepWrites).
            const c10::optional<c10::IValue> value = torch::jit::toIValue(node->output());
            if (!value || !value->isTensor() || value->toTensor().dim() != 0)
                tensorConstant = true;
        }
    });
    if (!random.empty())
        throw ProgramError(randomOperationsRefusal(random));
    if (tensorConstant)
        throw ProgramError("training_step holds a tensor constant; register it as a buffer of the sealed program or pass it in the batch");
    checkStepWrites(module, step);
}

SealedProgram sealProgram(const torch::jit::Module& module)
{
    checkSealedProgram(module);
    sortConstantsByName(module);
    std::ostringstream out;
    {
        const ZeroedState zeroed(module);
        module.save(out);
    }
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
