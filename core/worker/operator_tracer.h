#pragma once
// Records every operator a replayed step calls, with its outputs, for zkdv-audit explain
// (docs/replay.md, "Explain (where a divergence starts)"): libtorch's RecordFunction
// observers see each call through the operator dispatcher (the forward's ATen operators,
// whether TorchScript's interpreter or the exported-graph interpreter calls them, the
// autograd nodes of the backward and the operators inside them, the optimizer contract's
// arithmetic), so the same trace comes from both kinds of program.

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "zkdv/audit/operator_trace.h"

namespace zkdv {

class OperatorTracer {
public:
    OperatorTracer();  // observes this thread (and the autograd threads it starts) from now on
    ~OperatorTracer();
    OperatorTracer(const OperatorTracer&) = delete;
    OperatorTracer& operator=(const OperatorTracer&) = delete;

    // Operators are recorded only inside a phase: the replay's own bookkeeping between the
    // step's parts (comparisons with the tape, norms) is not the program's and stays out.
    class Phase {
    public:
        Phase(OperatorTracer* tracer, const char* name);  // tracer may be null: nothing
        ~Phase();
        Phase(const Phase&) = delete;
        Phase& operator=(const Phase&) = delete;

    private:
        OperatorTracer* tracer_;
    };

    // A value the replay takes between the step's parts ("loss", "gradient fc.weight").
    void stage(const std::string& name, const at::Tensor& value);

    // The trace, in call order; `omitted` says what did not fit the bounds.
    std::vector<TracedOperator> finish(std::string& omitted);

    struct State;  // shared with the observers

private:
    std::unique_ptr<State> state_;
};

}  // namespace zkdv
