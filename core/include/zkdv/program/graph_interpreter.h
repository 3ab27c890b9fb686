#pragma once
// Runs an exported-graph program (exported_graph.h) without Python: each node is one boxed call
// through libtorch's operator dispatcher, so autograd records the step as it records eager code
// and the replay's backward and optimizer path is the TorchScript one (training side: exposes
// torch).

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "zkdv/graph/exported_graph.h"

namespace zkdv {

// The libtorch the interpreter needs, checked before a program is resolved: "" when this one
// runs exported graphs, else the reason naming the release needed.
std::string exportedGraphRuntimeProblem();

class GraphInterpreter {
public:
    // Resolves every node's operator in this libtorch and checks its arguments against the
    // operator's schema (count, names, types, no writes into parameters or the batch). Throws
    // ExportedGraphError naming the node; nothing runs.
    explicit GraphInterpreter(ExportedGraph graph);
    ~GraphInterpreter();
    GraphInterpreter(GraphInterpreter&&) noexcept;

    const ExportedGraph& graph() const;

    // Binds the tensors the step trains, in the layout's order: the graph reads and, for
    // buffers, updates these very tensors. Throws ExportedGraphError when they do not fit the
    // graph's signature.
    void bind(const std::vector<TensorSpec>& parameterSpecs, const std::vector<at::Tensor>& parameters,
              const std::vector<TensorSpec>& bufferSpecs, const std::vector<at::Tensor>& buffers);

    // Runs the step on a batch: the loss first, then the graph's further outputs. Throws Error
    // when the batch does not fit the graph's declared batch.
    std::vector<at::Tensor> run(const std::vector<at::Tensor>& batch) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace zkdv
