#include "operator_tracer.h"

#include <atomic>
#include <cstring>
#include <mutex>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/record_function.h>

#include "zkdv/tensor/torch_tensors.h"

namespace zkdv {

struct OperatorTracer::State {
    std::mutex mutex;
    std::atomic<const char*> phase{nullptr};
    std::vector<TracedOperator> operators;
    std::uint64_t finished = 0;
    std::uint64_t valueBytes = 0;
    std::uint64_t digestOnly = 0;  // outputs past the value cap
    bool truncated = false;        // calls past kMaxTracedOperators
    at::CallbackHandle handle = 0;
};

namespace {

std::atomic<OperatorTracer::State*> active{nullptr};
thread_local bool inObserver = false;              // copying outputs calls operators too
thread_local std::vector<std::size_t> openCalls;   // the calls this thread is inside, outermost first

struct CallContext : at::ObserverContext {
    std::size_t index = 0;
};

class ObserverScope {
public:
    ObserverScope() : disabled_(false) { inObserver = true; }
    ~ObserverScope() { inObserver = false; }

private:
    at::RecordFunctionGuard disabled_;
};

// Operators whose output holds whatever the allocator handed out (never comparable), and
// in-place ones that only change a tensor's shape or strides (nothing is computed there, so
// no difference starts there: a kernel's as_strided_ of its finished result would otherwise
// be named instead of the kernel).
bool computesNothing(const std::string& name)
{
    for (const char* prefix : {"aten::empty", "aten::new_empty", "aten::_empty", "aten::resize", "aten::set_"})
        if (name.rfind(prefix, 0) == 0)
            return true;
    for (const char* restride : {"aten::as_strided_", "aten::squeeze_", "aten::unsqueeze_", "aten::t_", "aten::transpose_", "aten::swapdims_",
                                 "aten::swapaxes_", "aten::detach_"})
        if (name == restride)
            return true;
    return false;
}

// Which of the call's returns are views of an input (its schema marks them aliases that are
// not written): a view computes nothing, so no difference starts there, and a view taken of
// a buffer still to be filled (a reduction's as_strided output) holds uninitialised memory.
std::vector<bool> viewReturns(const at::RecordFunction& call)
{
    std::vector<bool> views;
    const auto name = call.operator_name();
    if (!name)
        return views;
    const auto handle = c10::Dispatcher::singleton().findSchema(*name);
    if (!handle || !handle->hasSchema())
        return views;
    for (const c10::Argument& value : handle->schema().returns())
        views.push_back(value.alias_info() != nullptr && !value.alias_info()->isWrite());
    return views;
}

void keep(OperatorTracer::State& state, TracedOutput& output, ByteSpan bytes)
{
    output.digest = Sha256::of(bytes);
    if (state.valueBytes + bytes.size <= kMaxTracedValueBytes) {
        output.kind = TracedOutput::Kind::Values;
        output.bytes.assign(bytes.begin(), bytes.end());
        state.valueBytes += bytes.size;
    } else {
        output.kind = TracedOutput::Kind::Digest;
        ++state.digestOnly;
    }
}

void captureTensor(OperatorTracer::State& state, const at::Tensor& tensor, bool uninitialised, std::vector<TracedOutput>& outputs)
{
    if (!tensor.defined())
        return;
    TracedOutput output;
    output.shape = tensor.sizes().vec();
    try {
        output.dtype = dtypeOf(tensor.scalar_type());
    } catch (const std::exception&) {
        output.dtype = DType::U8;  // a dtype a tape cannot hold (complex, quantized): not compared
        outputs.push_back(std::move(output));
        return;
    }
    if (uninitialised || tensor.layout() != at::kStrided) {
        outputs.push_back(std::move(output));
        return;
    }
    const at::Tensor host = tensor.detach().to(at::kCPU).contiguous();
    keep(state, output, tensorBytes(host));
    outputs.push_back(std::move(output));
}

void captureValue(OperatorTracer::State& state, const c10::IValue& value, bool uninitialised, std::vector<TracedOutput>& outputs)
{
    if (value.isTensor()) {
        captureTensor(state, value.toTensor(), uninitialised, outputs);
    } else if (value.isTensorList()) {
        for (const at::Tensor& tensor : value.toTensorVector())
            captureTensor(state, tensor, uninitialised, outputs);
    } else if (value.isDouble() || value.isInt() || value.isBool()) {
        TracedOutput output;
        std::uint8_t bytes[8] = {};
        std::size_t size = 8;
        if (value.isDouble()) {
            output.dtype = DType::F64;
            const double v = value.toDouble();
            std::memcpy(bytes, &v, 8);
        } else if (value.isInt()) {
            output.dtype = DType::I64;
            const std::int64_t v = value.toInt();
            std::memcpy(bytes, &v, 8);
        } else {
            output.dtype = DType::Bool;
            bytes[0] = value.toBool() ? 1 : 0;
            size = 1;
        }
        keep(state, output, ByteSpan(bytes, size));
        outputs.push_back(std::move(output));
    }
}

std::unique_ptr<at::ObserverContext> onStart(const at::RecordFunction& call)
{
    OperatorTracer::State* state = active.load();
    if (!state || inObserver)
        return nullptr;
    const char* phase = state->phase.load();
    if (!phase)
        return nullptr;
    std::lock_guard<std::mutex> lock(state->mutex);
    if (state->operators.size() >= kMaxTracedOperators) {
        state->truncated = true;
        return nullptr;
    }
    TracedOperator op;
    op.name = call.name();
    op.phase = phase;
    op.depth = static_cast<std::uint32_t>(openCalls.size());
    auto context = std::make_unique<CallContext>();
    context->index = state->operators.size();
    state->operators.push_back(std::move(op));
    openCalls.push_back(context->index);
    return context;
}

void onEnd(const at::RecordFunction& call, at::ObserverContext* context)
{
    if (!context)
        return;
    const std::size_t index = static_cast<CallContext*>(context)->index;
    for (std::size_t k = openCalls.size(); k-- > 0;)
        if (openCalls[k] == index) {
            openCalls.erase(openCalls.begin() + static_cast<std::ptrdiff_t>(k));
            break;
        }
    OperatorTracer::State* state = active.load();
    if (!state)
        return;
    const ObserverScope scope;
    std::lock_guard<std::mutex> lock(state->mutex);
    if (index >= state->operators.size())
        return;
    TracedOperator& op = state->operators[index];
    op.finished = state->finished++;
    const bool uninitialised = computesNothing(op.name);
    try {
        const std::vector<bool> views = viewReturns(call);
        const std::vector<c10::IValue>& outputs = call.outputs();
        for (std::size_t k = 0; k < outputs.size(); ++k)
            captureValue(*state, outputs[k], uninitialised || (k < views.size() && views[k]), op.outputs);
    } catch (const std::exception&) {
        // An output that cannot be copied is left out; the call stays in the trace.
    }
}

}  // namespace

OperatorTracer::OperatorTracer() : state_(std::make_unique<State>())
{
    openCalls.clear();
    active.store(state_.get());
    state_->handle = at::addThreadLocalCallback(at::RecordFunctionCallback(&onStart, &onEnd)
                                                    .needsInputs(false)
                                                    .needsOutputs(true)
                                                    .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION}));
}

OperatorTracer::~OperatorTracer()
{
    at::removeCallback(state_->handle);
    active.store(nullptr);
    openCalls.clear();
}

OperatorTracer::Phase::Phase(OperatorTracer* tracer, const char* name) : tracer_(tracer)
{
    if (tracer_)
        tracer_->state_->phase.store(name);
}

OperatorTracer::Phase::~Phase()
{
    if (tracer_)
        tracer_->state_->phase.store(nullptr);
}

void OperatorTracer::stage(const std::string& name, const at::Tensor& value)
{
    const ObserverScope scope;
    std::lock_guard<std::mutex> lock(state_->mutex);
    TracedOperator op;
    op.name = name;
    op.phase = "stage";
    op.finished = state_->finished++;
    captureTensor(*state_, value, false, op.outputs);
    state_->operators.push_back(std::move(op));
}

std::vector<TracedOperator> OperatorTracer::finish(std::string& omitted)
{
    std::lock_guard<std::mutex> lock(state_->mutex);
    omitted.clear();
    if (state_->truncated)
        omitted = "only the first " + std::to_string(kMaxTracedOperators) + " operator calls were traced";
    if (state_->digestOnly)
        omitted += (omitted.empty() ? "" : "; ") + std::to_string(state_->digestOnly) + " outputs past the " +
                   std::to_string(kMaxTracedValueBytes >> 20) + " MiB value cap came back as digests only (equal or not, no sizes)";
    return std::move(state_->operators);
}

}  // namespace zkdv
