#include "step_graph.h"

#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/passes/inliner.h>

#include "zkdv/program/sealed_program.h"

namespace zkdv {

namespace {

bool sameScalar(const c10::IValue& a, const c10::IValue& b)
{
    if (a.isDouble() && b.isDouble())
        return a.toDouble() == b.toDouble();
    if (a.isBool() && b.isBool())
        return a.toBool() == b.toBool();
    return false;
}

const c10::ClassType* classOf(torch::jit::Value* object)
{
    auto type = object->type()->cast<c10::ClassType>();
    return type ? type.get() : nullptr;
}

}  // namespace

StepGraph::StepGraph(const torch::jit::Module& module) : module_(module._ivalue())
{
    auto step = module.get_method("training_step").graph()->copy();
    torch::jit::Inline(*step);
    graphs_.push_back(step);
    // Subgraphs are inlined as found; the list grows while it is walked.
    for (std::size_t g = 0; g < graphs_.size(); ++g) {
        std::vector<torch::jit::Block*> blocks{graphs_[g]->block()};
        while (!blocks.empty()) {
            torch::jit::Block* block = blocks.back();
            blocks.pop_back();
            for (torch::jit::Node* node : block->nodes()) {
                for (torch::jit::Block* inner : node->blocks())
                    blocks.push_back(inner);
                if (node->kind() == c10::prim::CallMethod || node->kind() == c10::prim::CallFunction)
                    throw ProgramError(std::string("training_step makes a call ZKDV cannot resolve before it runs (") + node->kind().toQualString() +
                                       (node->kind() == c10::prim::CallMethod ? " " + node->s(c10::attr::name) : std::string()) +
                                       " on an interface or a function value); call modules and functions directly");
                if (node->kind() == c10::prim::SetAttr)
                    if (const c10::ClassType* type = classOf(node->input(0)))
                        assigned_.emplace(type, node->s(c10::attr::name));
                if (node->hasAttribute(c10::attr::Subgraph) && node->kindOf(c10::attr::Subgraph) == torch::jit::AttributeKind::g) {
                    auto sub = node->g(c10::attr::Subgraph)->copy();
                    torch::jit::Inline(*sub);
                    for (std::size_t i = 0; i < sub->inputs().size() && i < node->inputs().size(); ++i)
                        captured_[sub->inputs()[i]] = node->inputs()[i];
                    subgraphs_[node] = sub.get();
                    graphs_.push_back(sub);
                }
            }
        }
    }
}

void StepGraph::visit(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& f, bool liveOnly) const
{
    for (torch::jit::Node* node : block->nodes()) {
        f(node);
        for (torch::jit::Block* inner : liveOnly ? liveBlocks(node) : node->blocks().vec())
            visit(inner, f, liveOnly);
        if (torch::jit::Graph* sub = subgraphOf(node))
            visit(sub->block(), f, liveOnly);
    }
}

void StepGraph::forEachNode(const std::function<void(torch::jit::Node*)>& f, bool liveOnly) const
{
    visit(graphs_.front()->block(), f, liveOnly);
}

std::vector<torch::jit::Block*> StepGraph::liveBlocks(torch::jit::Node* node) const
{
    if (node->kind() == c10::prim::If) {
        auto condition = fixed(node->input(0));
        if (condition && condition->isBool())
            return {node->blocks()[condition->toBool() ? 0 : 1]};
    }
    return node->blocks().vec();
}

torch::jit::Graph* StepGraph::subgraphOf(torch::jit::Node* node) const
{
    auto it = subgraphs_.find(node);
    return it == subgraphs_.end() ? nullptr : it->second;
}

std::optional<c10::IValue> StepGraph::fixed(torch::jit::Value* value, int depth) const
{
    if (depth > 64)
        return std::nullopt;
    if (value == graphs_.front()->inputs()[0])
        return c10::IValue(module_);
    if (auto it = captured_.find(value); it != captured_.end())
        return fixed(it->second, depth + 1);
    torch::jit::Node* node = value->node();
    if (node->kind() == c10::prim::Constant)
        return torch::jit::toIValue(value);
    if (node->kind() == c10::prim::GetAttr) {
        const std::string name = node->s(c10::attr::name);
        const c10::ClassType* type = classOf(node->input(0));
        if (name == "training" || !type || assigned_.count({type, name}))
            return std::nullopt;
        auto object = fixed(node->input(0), depth + 1);
        if (!object || !object->isObject() || !object->toObjectRef().type()->hasAttribute(name))
            return std::nullopt;
        return object->toObjectRef().getAttr(name);
    }
    if (std::string(node->kind().toQualString()) == "aten::__not__") {
        auto operand = fixed(node->input(0), depth + 1);
        if (!operand || !operand->isBool())
            return std::nullopt;
        return c10::IValue(!operand->toBool());
    }
    if (node->kind() == c10::prim::If) {
        const std::size_t output = value->offset();
        auto condition = fixed(node->input(0), depth + 1);
        if (condition && condition->isBool())
            return fixed(node->blocks()[condition->toBool() ? 0 : 1]->outputs()[output], depth + 1);
        auto taken = fixed(node->blocks()[0]->outputs()[output], depth + 1);
        auto other = fixed(node->blocks()[1]->outputs()[output], depth + 1);
        if (taken && other && sameScalar(*taken, *other))
            return taken;
    }
    return std::nullopt;
}

}  // namespace zkdv
