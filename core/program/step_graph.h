#pragma once
// training_step as the sealed-program checks read it (sealed_program.cpp): its graph with every
// call inlined, the inlined subgraphs of torch.jit.fork (and of awaitables) bound to the values
// they capture, and the values the sealed module fixes.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <torch/csrc/jit/api/module.h>
#include <torch/csrc/jit/ir/ir.h>

namespace zkdv {

class StepGraph {
public:
    // Throws ProgramError when a call cannot be inlined (an interface method, a function value):
    // what it runs would be unknown to every check.
    explicit StepGraph(const torch::jit::Module& module);

    torch::jit::Graph& graph() const { return *graphs_.front(); }
    const c10::intrusive_ptr<c10::ivalue::Object>& module() const { return module_; }

    // Visits every node of the step in program order, entering blocks and, at a fork, its
    // subgraph; `liveOnly` skips the branch of a prim::If whose condition the module fixes
    // against it (a branch that never runs, such as an in-place dropout switched off).
    void forEachNode(const std::function<void(torch::jit::Node*)>& visit, bool liveOnly = false) const;
    // The blocks of `node` that can run.
    std::vector<torch::jit::Block*> liveBlocks(torch::jit::Node* node) const;
    // The inlined subgraph a fork or awaitable node runs, or null.
    torch::jit::Graph* subgraphOf(torch::jit::Node* node) const;

    // The value the sealed module fixes `value` to: constants, attributes of the sealed module
    // the step never assigns, `not` of a fixed bool, and a prim::If whose condition is fixed or
    // whose branches agree. `training` is never fixed: the replay runs the program after
    // module.train(), whatever mode it was sealed in.
    std::optional<c10::IValue> fixed(torch::jit::Value* value, int depth = 0) const;

    // (class, attribute) pairs the step assigns with prim::SetAttr.
    const std::set<std::pair<const c10::ClassType*, std::string>>& assigned() const { return assigned_; }

private:
    void visit(torch::jit::Block* block, const std::function<void(torch::jit::Node*)>& f, bool liveOnly) const;

    std::vector<std::shared_ptr<torch::jit::Graph>> graphs_;  // the step's, then the subgraphs'
    std::map<torch::jit::Node*, torch::jit::Graph*> subgraphs_;
    std::map<torch::jit::Value*, torch::jit::Value*> captured_;  // a subgraph's input -> the forking graph's value
    c10::intrusive_ptr<c10::ivalue::Object> module_;
    std::set<std::pair<const c10::ClassType*, std::string>> assigned_;
};

// The held-state and write checks of checkSealedProgram; each throws ProgramError naming the
// attribute, operator or value.
void checkHeldState(const torch::jit::Module& module);
void checkStepWrites(const torch::jit::Module& module, const StepGraph& step);

}  // namespace zkdv
