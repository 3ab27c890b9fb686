// training_step writes in place only into buffers and its own values: a write into a parameter
// moves it outside the optimizer step, into the batch changes what was recorded, into a constant
// or a container the module keeps carries state from one step to the next that no snapshot
// holds. What every value may alias is followed through every node: by the operator's schema
// (`Tensor(a)` returns, `Tensor(a!)` writes, `*` wildcards), and conservatively (the result
// may alias every input) where a node has no schema, where a container is returned, and for the
// operators known to return an input unannotated.

#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include <torch/csrc/jit/runtime/operator.h>

#include "step_graph.h"
#include "zkdv/graph/operator_allow_list.h"
#include "zkdv/program/sealed_program.h"

namespace zkdv {

namespace {

constexpr int kMaxPasses = 100;

// What a value may be, view or contain.
struct Roots {
    std::set<const c10::TensorImpl*> held;  // the module's parameters and buffers
    std::set<std::string> state;            // attributes of the module holding containers or objects
    bool batch = false;
    bool constant = false;

    bool add(const Roots& other)
    {
        const std::size_t before = held.size() + state.size() + batch + constant;
        held.insert(other.held.begin(), other.held.end());
        state.insert(other.state.begin(), other.state.end());
        batch = batch || other.batch;
        constant = constant || other.constant;
        return held.size() + state.size() + batch + constant != before;
    }
};

bool mayHoldTensors(const c10::TypePtr& type)
{
    switch (type->kind()) {
    case c10::TypeKind::TensorType:
    case c10::TypeKind::ClassType:
    case c10::TypeKind::InterfaceType:
    case c10::TypeKind::AnyType:
    case c10::TypeKind::FutureType:
        return true;
    default:
        for (const c10::TypePtr& contained : type->containedTypes())
            if (mayHoldTensors(contained))
                return true;
        return false;
    }
}

bool isTensorArgument(const c10::TypePtr& type)
{
    if (type->kind() == c10::TypeKind::OptionalType)
        return isTensorArgument(type->castRaw<c10::OptionalType>()->getElementType());
    return type->kind() == c10::TypeKind::TensorType;
}

// The alias sets an annotation names, its contained types' included; `wildcard` when one is `*`.
void setsOf(const c10::AliasInfo& info, std::set<c10::Symbol>& sets, bool& wildcard)
{
    for (const c10::Symbol& s : info.beforeSets()) {
        if (s == c10::AliasInfo::wildcardSet())
            wildcard = true;
        sets.insert(s);
    }
    for (const c10::Symbol& s : info.afterSets())
        if (s == c10::AliasInfo::wildcardSet())
            wildcard = true;
    for (const c10::AliasInfo& contained : info.containedTypes())
        setsOf(contained, sets, wildcard);
}

bool containedWrite(const c10::AliasInfo& info)
{
    for (const c10::AliasInfo& contained : info.containedTypes())
        if (contained.isWrite() || containedWrite(contained))
            return true;
    return false;
}

class WriteCheck {
public:
    WriteCheck(const torch::jit::Module& module, const StepGraph& step) : step_(step)
    {
        for (const auto& p : module.named_parameters(true))
            parameters_.emplace(p.value.unsafeGetTensorImpl(), p.name);
        for (const auto& b : module.named_buffers(true))
            buffers_.emplace(b.value.unsafeGetTensorImpl(), b.name);
    }

    void run()
    {
        roots_[step_.graph().inputs()[1]].batch = true;
        for (int pass = 0;; ++pass) {
            if (pass == kMaxPasses)
                throw ProgramError("training_step is too intricate for the write check (its aliases do not settle in " +
                                   std::to_string(kMaxPasses) + " passes)");
            changed_ = false;
            step_.forEachNode([&](torch::jit::Node* node) { flow(node); }, true);
            if (!changed_)
                break;
        }
        step_.forEachNode([&](torch::jit::Node* node) { check(node); }, true);
    }

private:
    void merge(torch::jit::Value* into, const Roots& from)
    {
        if (roots_[into].add(from))
            changed_ = true;
    }
    Roots rootsOf(torch::jit::Value* value) const
    {
        auto it = roots_.find(value);
        return it == roots_.end() ? Roots{} : it->second;
    }
    void aliasAllInputs(torch::jit::Node* node, torch::jit::Value* output)
    {
        for (torch::jit::Value* input : node->inputs())
            merge(output, rootsOf(input));
    }

    Roots rootsOfHeld(const c10::IValue& value, const std::string& path, int depth = 0)
    {
        Roots roots;
        if (depth > 64)
            return roots;
        if (value.isTensor()) {
            const at::Tensor& tensor = value.toTensor();
            if (tensor.defined())
                roots.held.insert(tensor.unsafeGetTensorImpl());
        } else if (value.isObject()) {
            const c10::ivalue::Object* object = &value.toObjectRef();
            if (auto cached = objects_.find(object); cached != objects_.end())
                return cached->second;
            objects_[object];  // a cycle ends here
            const auto type = object->type();
            if (!type->is_module())
                roots.state.insert(path);
            for (std::size_t slot = 0; slot < type->numAttributes(); ++slot)
                roots.add(rootsOfHeld(object->getSlot(slot), path + "." + type->getAttributeName(slot), depth + 1));
            objects_[object] = roots;
        } else if (value.isList() || value.isGenericDict() || value.isTuple()) {
            if (!value.isTuple())
                roots.state.insert(path);
            if (value.isList())
                for (const c10::IValue& item : value.toListRef())
                    roots.add(rootsOfHeld(item, path, depth + 1));
            else if (value.isTuple())
                for (const c10::IValue& item : value.toTupleRef().elements())
                    roots.add(rootsOfHeld(item, path, depth + 1));
            else
                for (const auto& entry : value.toGenericDict()) {
                    roots.add(rootsOfHeld(entry.key(), path, depth + 1));
                    roots.add(rootsOfHeld(entry.value(), path, depth + 1));
                }
        }
        return roots;
    }

    void flow(torch::jit::Node* node)
    {
        const c10::Symbol kind = node->kind();
        if (kind == c10::prim::Constant) {
            const c10::TypeKind type = node->output()->type()->kind();
            if (type == c10::TypeKind::ListType || type == c10::TypeKind::DictType || type == c10::TypeKind::TensorType) {
                Roots constant;
                constant.constant = true;
                merge(node->output(), constant);
            }
            return;
        }
        if (kind == c10::prim::GetAttr) {
            if (auto value = step_.fixed(node->output()))
                merge(node->output(), rootsOfHeld(*value, node->s(c10::attr::name)));
            else
                aliasAllInputs(node, node->output());
            return;
        }
        if (kind == c10::prim::If) {
            for (torch::jit::Block* block : step_.liveBlocks(node))
                for (std::size_t i = 0; i < node->outputs().size(); ++i)
                    merge(node->outputs()[i], rootsOf(block->outputs()[i]));
            return;
        }
        if (kind == c10::prim::Loop) {
            torch::jit::Block* body = node->blocks()[0];
            for (std::size_t i = 0; i < node->outputs().size(); ++i) {
                const Roots carried = rootsOf(node->inputs()[2 + i]);
                merge(body->inputs()[1 + i], carried);
                merge(body->inputs()[1 + i], rootsOf(body->outputs()[1 + i]));
                merge(node->outputs()[i], carried);
                merge(node->outputs()[i], rootsOf(body->outputs()[1 + i]));
            }
            return;
        }
        if (torch::jit::Graph* sub = step_.subgraphOf(node)) {
            for (std::size_t i = 0; i < sub->inputs().size() && i < node->inputs().size(); ++i)
                merge(sub->inputs()[i], rootsOf(node->inputs()[i]));
            for (torch::jit::Value* output : node->outputs())
                for (torch::jit::Value* result : sub->outputs())
                    merge(output, rootsOf(result));
            return;
        }
        const c10::FunctionSchema* schema = node->maybeSchema();
        if (!schema || conservative(node)) {
            for (torch::jit::Value* output : node->outputs())
                aliasAllInputs(node, output);
            if (schema)  // every input may be written: containers gain what the others hold
                for (torch::jit::Value* input : node->inputs())
                    aliasAllInputs(node, input);
            return;
        }
        const auto& arguments = schema->arguments();
        const bool unannotated = mayReturnAnArgumentUnannotated(node->kind().toQualString());
        for (std::size_t j = 0; j < node->outputs().size(); ++j) {
            torch::jit::Value* output = node->outputs()[j];
            const c10::AliasInfo* info = j < schema->returns().size() ? schema->returns()[j].alias_info() : nullptr;
            std::set<c10::Symbol> sets;
            bool wildcard = false;
            if (info)
                setsOf(*info, sets, wildcard);
            if (wildcard || unannotated || (sets.empty() && mayHoldTensors(output->type()) && output->type()->kind() != c10::TypeKind::TensorType)) {
                aliasAllInputs(node, output);
                continue;
            }
            for (std::size_t i = 0; i < arguments.size() && i < node->inputs().size(); ++i) {
                if (!arguments[i].alias_info())
                    continue;
                std::set<c10::Symbol> inputSets;
                bool inputWildcard = false;
                setsOf(*arguments[i].alias_info(), inputSets, inputWildcard);
                for (const c10::Symbol& s : inputSets)
                    if (sets.count(s)) {
                        merge(output, rootsOf(node->inputs()[i]));
                        break;
                    }
            }
        }
        // A container an operator writes (append, _set_item) holds what it is given.
        for (std::size_t i = 0; i < arguments.size() && i < node->inputs().size(); ++i)
            if (arguments[i].alias_info() && arguments[i].alias_info()->isWrite() && !isTensorArgument(arguments[i].type()))
                aliasAllInputs(node, node->inputs()[i]);
    }

    bool conservative(torch::jit::Node* node) const
    {
        const torch::jit::Operator* op = node->maybeOperator();
        return op && op->aliasAnalysisKind() == c10::AliasAnalysisKind::CONSERVATIVE;
    }

    [[noreturn]] void refuse(torch::jit::Node* node, const std::string& what) const
    {
        throw ProgramError(std::string("training_step ") + what + " (" + node->kind().toQualString() +
                           "); a program writes only into its buffers and its own values: parameters change only in the optimizer step, "
                           "the batch is what was recorded, and state a step keeps must be a registered buffer");
    }

    std::string protectedTensor(const Roots& roots) const
    {
        for (const c10::TensorImpl* impl : roots.held)
            if (auto it = parameters_.find(impl); it != parameters_.end())
                return "the parameter " + it->second;
        if (roots.batch)
            return "the batch";
        if (roots.constant)
            return "a constant";
        return {};
    }

    void check(torch::jit::Node* node)
    {
        const c10::Symbol kind = node->kind();
        if (kind == c10::prim::SetAttr || kind == c10::prim::GetAttr) {
            auto type = node->input(0)->type()->cast<c10::ClassType>();
            const std::string name = node->s(c10::attr::name);
            if (!type)
                return;
            const auto slot = type->findAttributeSlot(name);
            const bool module = type->is_module() && slot;
            if (kind == c10::prim::SetAttr && module && type->is_parameter(*slot))
                refuse(node, "assigns the parameter " + name);
            if (kind == c10::prim::GetAttr && name != "training" && step_.assigned().count({type.get(), name}) &&
                !(module && (type->is_buffer(*slot) || type->is_parameter(*slot))))  // a parameter's assignment is refused as such
                refuse(node, "reads back the attribute " + name +
                                 " that it assigns, state carried from one step to the next outside the tape; register it as a buffer");
            return;
        }
        const c10::FunctionSchema* schema = node->maybeSchema();
        if (!schema)
            return;
        const auto& arguments = schema->arguments();
        const bool anyWrite = conservative(node);
        for (std::size_t i = 0; i < arguments.size() && i < node->inputs().size(); ++i) {
            const c10::Argument& argument = arguments[i];
            const c10::AliasInfo* info = argument.alias_info();
            // Norms update the running statistics they are given although their schemas do not say so.
            const bool runningStatistic = argument.name() == "running_mean" || argument.name() == "running_var";
            const bool written = anyWrite || runningStatistic || (info && info->isWrite());
            const bool elementsWritten = anyWrite || (info && containedWrite(*info));
            if (!written && !elementsWritten)
                continue;
            const Roots roots = rootsOf(node->inputs()[i]);
            if (isTensorArgument(argument.type()) || elementsWritten) {
                const std::string target = protectedTensor(roots);
                if (!target.empty())
                    refuse(node, "writes into " + target + " in place, through its argument '" + argument.name() + "' (value %" +
                                     node->inputs()[i]->debugName() + ")");
            } else if (!roots.state.empty() || roots.constant) {
                // A list the step made may hold batch tensors; changing the list changes no tensor.
                refuse(node, "changes " + (!roots.state.empty() ? "the attribute " + *roots.state.begin() : std::string("a constant")) +
                                 " in place, through its argument '" + argument.name() + "'");
            }
        }
    }

    const StepGraph& step_;
    std::map<const c10::TensorImpl*, std::string> parameters_, buffers_;
    std::unordered_map<torch::jit::Value*, Roots> roots_;
    std::map<const c10::ivalue::Object*, Roots> objects_;
    bool changed_ = false;
};

}  // namespace

void checkStepWrites(const torch::jit::Module& module, const StepGraph& step)
{
    WriteCheck(module, step).run();
}

}  // namespace zkdv
