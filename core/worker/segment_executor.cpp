#include "segment_executor.h"
#include "operator_tracer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/api/module.h>

#include "zkdv/audit/divergence.h"
#include "zkdv/audit/grad_scaler_follower.h"
#include "zkdv/audit/numeric_regime.h"
#include "zkdv/optim/contract_registry.h"
#include "zkdv/optim/gradient_clipping.h"
#include "zkdv/optim/optimizer_bridge.h"
#include "zkdv/optim/torch_release.h"
#include "zkdv/program/graph_interpreter.h"
#include "zkdv/program/sealed_program.h"
#include "zkdv/schedule/schedule_follower.h"
#include "zkdv/tape/dataset_samples.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tape/state_digest.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/tensor/autocast_scope.h"
#include "zkdv/tensor/scaled_loss.h"
#include "zkdv/tensor/torch_build.h"
#include "zkdv/tensor/torch_tensors.h"

namespace zkdv {

namespace {

using Clock = std::chrono::steady_clock;

at::Tensor hostContiguous(const at::Tensor& tensor) { return tensor.detach().to(at::kCPU).contiguous(); }

// Compares a replayed tensor with the tape's bytes of it.
TensorComparison compareTensor(std::string tensor, std::string slot, const TensorView& recorded, const at::Tensor& replayed,
                               const Tolerance& tolerance)
{
    TensorComparison comparison;
    comparison.tensor = std::move(tensor);
    comparison.slot = std::move(slot);
    const at::Tensor host = hostContiguous(replayed);
    if (scalarTypeOf(recorded.dtype) != host.scalar_type() || recorded.shape != host.sizes().vec()) {
        comparison.verdict = Verdict::Diverged;
        comparison.metrics.bitwiseEqual = false;
        comparison.note = "the tape holds " + std::string(dtypeName(recorded.dtype)) + " " + nlohmann::json(recorded.shape).dump() +
                          ", the replay " + std::string(dtypeName(dtypeOf(host.scalar_type()))) + " " + nlohmann::json(host.sizes().vec()).dump();
        return comparison;
    }
    comparison.metrics = computeDivergence(recorded.dtype, static_cast<std::uint64_t>(recorded.elementCount()), recorded.data, tensorBytes(host));
    comparison.verdict = tolerance.judge(comparison.metrics, recorded.dtype);
    return comparison;
}

TensorComparison compareFingerprint(const std::string& parameter, const char* slot, double recorded, double replayed,
                                    const Tolerance& tolerance)
{
    TensorComparison comparison;
    comparison.tensor = parameter;
    comparison.slot = slot;
    comparison.metrics = compareScalars(recorded, replayed);
    comparison.verdict = tolerance.judgeFingerprint(recorded, replayed);
    return comparison;
}

// The L2 norm of a tensor, or of a list of them as one vector, in double.
double squaredNorm(const at::Tensor& tensor)
{
    return tensor.defined() ? hostContiguous(tensor).to(at::kDouble).pow(2).sum().item<double>() : 0.0;
}
double modelNorm(const std::vector<at::Tensor>& tensors)
{
    double squares = 0.0;
    for (const at::Tensor& tensor : tensors)
        squares += squaredNorm(tensor);
    return std::sqrt(squares);
}
double differenceNorm(const TensorView& recorded, const at::Tensor& replayed)
{
    return std::sqrt(squaredNorm(tensorFromView(recorded).to(at::kDouble) - hostContiguous(replayed).to(at::kDouble)));
}

// The spacing of a parameter's own floating-point grid at each element: one ulp of |p| in
// p's dtype (0 for 0 and for what is not finite), in double on the host. A step is added to
// a parameter on that grid, so across environments its recorded delta (p after - p before)
// may differ from the replay's by one ulp of p wherever the two steps round to neighbouring
// grid points, however close the steps themselves were.
at::Tensor parameterGrid(const at::Tensor& parameter)
{
    const at::ScalarType type = parameter.scalar_type();
    const int mantissaBits = type == at::kDouble ? 52 : type == at::kHalf ? 10 : type == at::kBFloat16 ? 7 : 23;
    const at::Tensor grid = at::exp2(at::floor(at::log2(hostContiguous(parameter).to(at::kDouble).abs()))).mul_(std::ldexp(1.0, -mantissaBits));
    return at::where(at::isfinite(grid), grid, at::zeros_like(grid));
}

// The norm of what a delta differs by beyond one grid step of its parameter, element by element.
double deltaBeyondGrid(const TensorView& recorded, const at::Tensor& replayed, const at::Tensor& grid)
{
    const at::Tensor difference = (tensorFromView(recorded).to(at::kDouble) - hostContiguous(replayed).to(at::kDouble)).abs_();
    return std::sqrt(squaredNorm((difference - grid).clamp_min_(0.0)));
}

// What a state value differs by that the cross-environment envelope judges. A half-precision
// value (F16, BF16) is rounded to its own coarse grid at every step, which float32 arithmetic
// does not explain: one ulp of the value per element is allowed before the envelope (whose
// unit roundoff is float32's, Tolerance::withinEnvelope). Other dtypes: the whole difference.
double stateDifference(const TensorView& recorded, const at::Tensor& replayed)
{
    if (recorded.dtype == DType::F16 || recorded.dtype == DType::BF16)
        return deltaBeyondGrid(recorded, replayed, parameterGrid(replayed));
    return differenceNorm(recorded, replayed);
}

std::string describeTensor(DType dtype, const std::vector<std::int64_t>& shape)
{
    return std::string(dtypeName(dtype)) + " " + nlohmann::json(shape).dump();
}

// The dtypes a tape may hold a number slot in (docs/tape-format.md, section 6.1).
bool isNumberEncoding(DType dtype) { return dtype == DType::I64 || dtype == DType::F64 || dtype == DType::F32; }

std::string describeMetric(const TensorComparison& c)
{
    char text[160];
    if (!c.note.empty())
        return c.label() + " (" + c.note + ")";
    if (c.metrics.finiteMismatch())
        std::snprintf(text, sizeof text, " (%llu NaN and %llu Inf mismatches)", static_cast<unsigned long long>(c.metrics.nanMismatches),
                      static_cast<unsigned long long>(c.metrics.infMismatches));
    else
        std::snprintf(text, sizeof text, " (max %.3g ULP, relative L2 %.3g)", c.metrics.maxUlp, c.metrics.relativeL2);
    return c.label() + text;
}

// The transaction's verdict and a detail naming what failed.
void conclude(TransactionOutcome& outcome)
{
    outcome.verdict = Verdict::Exact;
    std::vector<std::string> named;
    for (const TensorComparison& c : outcome.comparisons)
        outcome.verdict = worse(outcome.verdict, c.verdict);
    for (const TensorComparison& c : outcome.comparisons)
        if (c.verdict == outcome.verdict && c.verdict != Verdict::Exact)
            named.push_back(describeMetric(c));
    if (outcome.verdict == Verdict::Exact) {
        outcome.detail = std::to_string(outcome.comparisons.size()) + " checks bit for bit";
        return;
    }
    std::string detail = std::string(verdictName(outcome.verdict)) + ": ";
    const std::size_t shown = std::min<std::size_t>(named.size(), 6);
    for (std::size_t i = 0; i < shown; ++i)
        detail += (i ? "; " : "") + named[i];
    if (named.size() > shown)
        detail += "; and " + std::to_string(named.size() - shown) + " more";
    outcome.detail = detail;
}

class TorchSegmentExecutor : public SegmentExecutor {
public:
    explicit TorchSegmentExecutor(const ExecutorSetup& setup)
        : root_(setup.root), device_(setup.device), tolerance_(setup.tolerance)
    {
        noiseTolerance_ = tolerance_;
        if (setup.noiseEnvelope > 0)
            noiseTolerance_.envelope = setup.noiseEnvelope;
        at::init_num_threads();
        if (setup.intraOpThreads > 0)
            at::set_num_threads(setup.intraOpThreads);
        regime_ = chooseRegime(root_, ReplayEnvironment{numericEnvironment(), setup.determinism, libtorchVersion()});
        const auto recorded = optim::TorchRelease::parse(root_.torchVersion);
        recordedReleaseIsProven_ = recorded && optim::isProvenTorchRelease(*recorded);
        if (!recorded || *recorded != optim::TorchRelease::ofThisLibtorch())
            releaseMismatch_ = "the tape was recorded with torch " + root_.torchVersion + " and this replay runs libtorch " + libtorchVersion();
        if (root_.programKind == kExportedGraphKind) {
            loadExportedGraph(setup.program);
        } else {
            try {
                module_ = loadSealedProgram(setup.program, device_.str());
            } catch (const std::exception& error) {
                if (releaseMismatch_.empty())
                    throw;
                throw ReplayEnvironmentError(std::string(error.what()) + " (" + releaseMismatch_ +
                                             "; replay it with the torch release that recorded it)");
            }
            checkSealedProgram(module_);
            module_.train();
            bindLayout();
        }
        bindOptimizer();
    }

    void replay(const ReplaySegment& segment, RecordSource& records, const std::function<void(TransactionOutcome&&)>& emitOutcome,
                const std::function<bool()>& cancelled) override
    {
        // Across torch releases kernels round differently (CPU convolutions reduce in another
        // order, for one): the release the tape names puts the replay in the cross-environment
        // regime (chooseRegime), whose envelope and excuses judge it like another CPU. The
        // claim buys nothing more: a divergence beyond them stays one (issue 48, item 9).
        //
        // One exception, for steps that ran under autocast: their kernels round at the
        // autocast dtype's precision (bfloat16: 2^-8), and a release's lower-precision kernels
        // differ from another's by that much, far beyond any float32 envelope. When the tape
        // names another *proven* release (one the auditor can replay with: both lanes have
        // one), such a segment's divergence is unverifiable, naming both releases; a claim of
        // any other release, or of this one, buys nothing.
        auto emit = [&](TransactionOutcome&& outcome) {
            if (!releaseMismatch_.empty() && recordedReleaseIsProven_ && segmentAutocast_ && outcome.verdict == Verdict::Diverged &&
                !batchNotCommitted_) {
                outcome.verdict = Verdict::Unverifiable;
                outcome.cause = UnverifiableCause::Environment;
                outcome.detail = "unverifiable across torch releases (" + releaseMismatch_ + "): the segment ran under autocast (" +
                                 segmentAutocastText_ + "), whose kernels round at that precision and differ between releases; replay "
                                 "with the recording release to decide: " + outcome.detail;
            }
            emitOutcome(std::move(outcome));
        };
        std::uint64_t next = segment.snapshot;
        auto unverifiable = [&](UnverifiableCause cause, const std::string& why) {
            for (; next <= segment.lastTransaction; ++next) {
                TransactionOutcome outcome = blankOutcome(segment, next);
                outcome.verdict = Verdict::Unverifiable;
                outcome.cause = cause;
                outcome.detail = why;
                emit(std::move(outcome));
            }
        };
        // Reading a record back is the auditor's storage; what the record holds is the tape's.
        ByteSpan start;
        try {
            start = records.snapshot(segment.snapshot);
        } catch (const std::exception& error) {
            unverifiable(UnverifiableCause::Environment, "snapshot " + std::to_string(segment.snapshot) + " cannot be read: " + error.what());
            return;
        }
        try {
            loadSnapshot(start);
        } catch (const std::exception& error) {
            unverifiable(UnverifiableCause::TapeMalformed, "snapshot " + std::to_string(segment.snapshot) + " cannot be loaded: " + error.what());
            return;
        }
        if (schedule_ || scaler_) {
            // The schedule steps from the values the transaction before the segment recorded,
            // and the GradScaler's rule from its state and skip.
            bool reading = true;
            try {
                if (segment.snapshot == 0) {
                    if (schedule_)
                        schedule_->startAtRoot();
                    if (scaler_)
                        scaler_->startAtRoot();
                } else {
                    const ByteSpan before = records.transaction(segment.snapshot - 1);
                    reading = false;
                    const SafetensorsView view = SafetensorsView::parse(before);
                    const TransactionRecord previous = TransactionRecord::parse(view, root_);
                    if (schedule_)
                        schedule_->startAfter(previous);
                    if (scaler_)
                        scaler_->startAfter(previous);
                }
            } catch (const std::exception& error) {
                unverifiable(reading ? UnverifiableCause::Environment : UnverifiableCause::TapeMalformed,
                             "transaction " + std::to_string(segment.snapshot - 1) + ", whose scheduled values and loss scale the segment follows, " +
                                 (reading ? "cannot be read: " : "cannot be loaded: ") + error.what());
                return;
            }
        }
        segmentWorst_ = Verdict::Exact;
        firstDiverged_.reset();
        shadows_[0].reset();
        shadows_[1].reset();
        segment_ = &segment;
        records_ = &records;
        segmentUpdate_ = 0.0;
        segmentBufferChange_ = 0.0;
        noiseGradients_.clear();
        segmentAutocast_ = false;
        segmentAutocastText_.clear();
        parameterMoved_.assign(parameters_.size(), false);
        bufferWritten_.assign(buffers_.size(), false);
        bufferBeyondNoise_.clear();
        // A transaction that cannot be replayed gets `verdict`; the rest of the segment is
        // unverifiable, since none of it would start from a checked state.
        auto endSegmentAt = [&](TransactionOutcome& outcome, Verdict verdict, UnverifiableCause cause, std::string detail, const char* because) {
            outcome.comparisons.clear();
            outcome.verdict = verdict;
            outcome.cause = verdict == Verdict::Unverifiable ? cause : UnverifiableCause::None;
            outcome.detail = std::move(detail);
            emit(std::move(outcome));
            ++next;
            unverifiable(cause, "not replayed: transaction " + std::to_string(next - 1) + " of this segment " + because);
        };
        for (; next <= segment.lastTransaction; ++next) {
            if (cancelled())
                return;
            TransactionOutcome outcome = blankOutcome(segment, next);
            batchNotCommitted_ = false;
            capture_ = std::binary_search(segment.capture.begin(), segment.capture.end(), next);
            trace_ = std::binary_search(segment.trace.begin(), segment.trace.end(), next);
            const auto started = Clock::now();
            // Which record is being read: a failure to read it back is the auditor's storage,
            // one of its content the tape's.
            bool reading = true;
            try {
                const ByteSpan record = records.transaction(next);
                reading = false;
                replayTransaction(record, outcome);
                if (next == segment.lastTransaction && segment.reachesNextSnapshot) {
                    reading = true;
                    const ByteSpan after = records.snapshot(next + 1);
                    reading = false;
                    compareSnapshot(after, outcome);
                }
            } catch (const FormatError& error) {
                if (reading)
                    endSegmentAt(outcome, Verdict::Unverifiable, UnverifiableCause::Environment,
                                 std::string("the tape's record cannot be read: ") + error.what(), "could not be read");
                else
                    endSegmentAt(outcome, Verdict::Unverifiable, UnverifiableCause::TapeMalformed,
                                 std::string("the tape's record does not hold what it must: ") + error.what(), "could not be read");
                return;
            } catch (const std::exception& error) {
                // A step recorded with another proven torch release may use what this libtorch
                // lacks (float16 CPU autocast before 2.x): the auditor's libtorch, not the tape,
                // and a replay with that release decides. Any other claim (a release the
                // contracts do not know, "banana") excuses nothing: the step does not run.
                if (!releaseMismatch_.empty() && recordedReleaseIsProven_)
                    endSegmentAt(outcome, Verdict::Unverifiable, UnverifiableCause::Environment,
                                 "unverifiable across torch releases (" + releaseMismatch_ +
                                     "): the training step does not run on this libtorch; replay with the recording release to decide: " +
                                     error.what(),
                                 "failed to run");
                else
                    endSegmentAt(outcome, Verdict::Diverged, UnverifiableCause::ProgramRefused,
                                 std::string("diverged: the training step does not run on the recorded transaction: ") + error.what(),
                                 "failed to run");
                return;
            }
            outcome.replayNs = static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - started).count());
            conclude(outcome);
            excuseNoiseGradients(outcome);
            excuseAmplifiedRounding(outcome);
            markRoundingNoise(outcome);
            if (outcome.verdict == Verdict::Diverged && !transformsNote_.empty())
                outcome.detail += "; the step re-applied the gradient transforms the transaction records: " + transformsNote_;
            segmentWorst_ = worse(segmentWorst_, outcome.verdict);
            if (outcome.verdict == Verdict::Diverged && !firstDiverged_)
                firstDiverged_ = outcome.index;
            emit(std::move(outcome));
        }
    }

private:
    // The amplified-rounding probe (excuseAmplifiedRounding).
    static constexpr double kAmplifiedRoundingFactor = 32.0;
    static constexpr std::uint64_t kMaxShadowSteps = 16;
    struct StepValues {
        std::vector<at::Tensor> losses;  // per micro-batch
        std::vector<at::Tensor> deltas;  // per parameter
        std::map<std::size_t, at::Tensor> totalNorms;  // per gradient transform that computes one
    };
    struct Shadow {
        int threads = 1;
        bool perturbed = false;  // it started from the snapshot moved by an ulp
        std::uint64_t next = 0;  // the transaction it replays next
        std::vector<at::Tensor> parameters, buffers;
        std::vector<optim::SlotState> state;
        StepValues step;     // its last transaction's values
        bool atEnd = false;  // it holds the state the next snapshot is compared with
        std::string failed;  // why it could not replay
    };

    TransactionOutcome blankOutcome(const ReplaySegment& segment, std::uint64_t index) const
    {
        TransactionOutcome outcome;
        outcome.index = index;
        outcome.segment = index / static_cast<std::uint64_t>(root_.snapshotInterval);
        outcome.selected = std::binary_search(segment.selected.begin(), segment.selected.end(), index);
        return outcome;
    }

    // The exported graph trains tensors of the layout's shapes that the replay owns; the
    // snapshot fills them before the first step.
    void loadExportedGraph(const std::vector<std::uint8_t>& bytes)
    {
        const std::string problem = exportedGraphRuntimeProblem();
        if (!problem.empty())
            throw ReplayEnvironmentError(problem);
        graph_ = std::make_unique<GraphInterpreter>(ExportedGraph::parse(ByteSpan(bytes)));
        for (const TensorSpec& spec : root_.parameters)
            parameters_.push_back(at::zeros(spec.shape, at::TensorOptions().dtype(scalarTypeOf(spec.dtype)).device(device_)).requires_grad_(true));
        for (const TensorSpec& spec : root_.buffers)
            buffers_.push_back(at::zeros(spec.shape, at::TensorOptions().dtype(scalarTypeOf(spec.dtype)).device(device_)));
        graph_->bind(root_.parameters, parameters_, root_.buffers, buffers_);
    }

    void bindLayout()
    {
        std::map<std::string, at::Tensor> parameters, buffers;
        for (const auto& p : module_.named_parameters(true))
            parameters.emplace(p.name, p.value);
        for (const auto& b : module_.named_buffers(true))
            buffers.emplace(b.name, b.value);
        auto bind = [&](const std::vector<TensorSpec>& specs, std::map<std::string, at::Tensor>& found, const char* kind,
                        std::vector<at::Tensor>& out) {
            for (const TensorSpec& spec : specs) {
                auto it = found.find(spec.name);
                if (it == found.end())
                    throw Error(std::string("the sealed program holds no ") + kind + " '" + spec.name + "' of the tape's model layout");
                if (it->second.sizes().vec() != spec.shape || dtypeOf(it->second.scalar_type()) != spec.dtype)
                    throw Error(std::string("the sealed program's ") + kind + " '" + spec.name + "' differs in shape or dtype from the tape's layout");
                out.push_back(it->second);
                found.erase(it);
            }
            if (!found.empty())
                throw Error(std::string("the sealed program holds a ") + kind + " the tape's layout does not list: '" + found.begin()->first + "'");
        };
        bind(root_.parameters, parameters, "parameter", parameters_);
        bind(root_.buffers, buffers, "buffer", buffers_);
    }

    void bindOptimizer()
    {
        // The contract follows the torch that recorded the tape: torch.optim's arithmetic
        // changed between releases, and the replaying libtorch may be another one.
        // The release is the trainer's claim (issue 48, item 9): one the contracts are not
        // proven for, or no release at all, is judged with this libtorch's contracts (the
        // newest proven ones when this libtorch's are not), in the cross-environment regime
        // chooseRegime puts it in; it can never turn the whole replay into "unverifiable".
        std::optional<optim::TorchRelease> release = optim::TorchRelease::parse(root_.torchVersion);
        if (!release || !optim::isProvenTorchRelease(*release)) {
            const optim::TorchRelease own = optim::TorchRelease::ofThisLibtorch();
            release = optim::isProvenTorchRelease(own) ? own : optim::provenTorchReleases().back();
        }
        recordingRelease_ = *release;
        std::shared_ptr<const optim::OptimizerContract> contract;
        try {
            contract = optim::ContractRegistry(*release).resolve(root_.optimizerContract);
        } catch (const Error& error) {
            // No contract for this release (or this name) in the auditor's zkdv: its fault, not the tape's.
            throw ReplayEnvironmentError(error.what());
        }
        std::vector<optim::BoundGroup> groups;
        groupOf_.assign(parameters_.size(), 0);
        for (const OptimizerGroup& group : root_.optimizerGroups) {
            optim::BoundGroup bound;
            bound.options = nlohmann::json::parse(group.optionsJson);
            for (const std::string& name : group.parameters) {
                const int position = root_.parameterIndex(name);
                if (position < 0)
                    throw Error("optimizer group names parameter '" + name + "', which is not in the layout");
                bound.positions.push_back(static_cast<std::size_t>(position));
                groupOf_[static_cast<std::size_t>(position)] = groups.size();
            }
            groups.push_back(std::move(bound));
        }
        bridge_ = std::make_unique<optim::OptimizerBridge>(contract, std::move(groups), parameters_.size());
        if (root_.optimizerSchedule) {
            bridge_->setScheduled(root_.optimizerSchedule->options);
            schedule_ = std::make_unique<schedule::ScheduleFollower>(root_, release->major, release->minor);
        }
        if (root_.gradScaler)
            scaler_ = std::make_unique<GradScalerFollower>(*root_.gradScaler);
        // Where and how the contract keeps each slot (torch keeps Adam's step on the CPU even
        // for CUDA parameters): snapshot slots are checked against it and placed the same way.
        at::NoGradGuard noGrad;
        slotSpecs_.resize(parameters_.size());
        for (std::size_t i = 0; i < parameters_.size(); ++i)
            for (const auto& [slot, tensor] : contract->initialize(parameters_[i].detach(), bridge_->groups()[groupOf_[i]].options))
                if (tensor.defined())
                    slotSpecs_[i].emplace(slot, SlotSpec{tensor.device(), tensor.scalar_type(), tensor.sizes().vec()});
        numberSlots_ = contract->numberSlots();
    }

    // "state/<parameter>/<slot>" -> (parameter position, slot).
    std::pair<std::size_t, std::string> splitStateName(const std::string& name) const
    {
        const std::string rest = name.substr(6);
        std::size_t best = parameters_.size();
        std::size_t bestLength = 0;
        for (std::size_t i = 0; i < root_.parameters.size(); ++i) {
            const std::string& parameter = root_.parameters[i].name;
            if (rest.size() > parameter.size() + 1 && rest.compare(0, parameter.size(), parameter) == 0 && rest[parameter.size()] == '/' &&
                parameter.size() >= bestLength) {
                best = i;
                bestLength = parameter.size();
            }
        }
        if (best == parameters_.size())
            throw Error("snapshot tensor " + name + " names no parameter of the layout");
        return {best, rest.substr(bestLength + 1)};
    }

    // A snapshot's slot as the contract keeps it. A number slot may be held in any number
    // encoding; its value is converted to the contract's type and must survive that. Every
    // other slot has the contract's dtype and shape, or, when the contract creates it during a
    // step (SGD's momentum buffer), its parameter's.
    at::Tensor slotTensor(std::size_t position, const std::string& slot, const TensorView& view)
    {
        const std::string& contract = root_.optimizerContract;
        const at::Tensor tensor = tensorFromView(view);
        auto spec = slotSpecs_[position].find(slot);
        if (spec != slotSpecs_[position].end() && numberSlots_.count(slot)) {
            if (!isNumberEncoding(view.dtype) || !view.shape.empty())
                throw Error(view.name + " is " + describeTensor(view.dtype, view.shape) + "; " + contract + "'s " + slot +
                            " is a number, held as a tensor of shape [] in I64, F64 or F32");
            auto known = numberEncoding_.find(slot);
            if (known != numberEncoding_.end() && known->second != view.dtype)
                throw Error(view.name + " is " + std::string(dtypeName(view.dtype)) + ", another parameter's " + slot + " in the same snapshot " +
                            std::string(dtypeName(known->second)) + "; a tape holds each slot in one dtype");
            numberEncoding_[slot] = view.dtype;
            const at::Tensor converted = tensor.to(spec->second.type);
            if (!converted.to(tensor.scalar_type()).equal(tensor)) {
                char value[32];
                std::snprintf(value, sizeof value, "%.17g", tensor.item<double>());
                throw Error(view.name + " holds " + value + ", which " + contract + "'s " + slot + " (" +
                            std::string(dtypeName(dtypeOf(spec->second.type))) + ") cannot hold");
            }
            return converted.to(spec->second.device);
        }
        if (spec != slotSpecs_[position].end()) {
            if (scalarTypeOf(view.dtype) != spec->second.type || view.shape != spec->second.shape)
                throw Error(view.name + " is " + describeTensor(view.dtype, view.shape) + "; " + contract + " keeps it as " +
                            describeTensor(dtypeOf(spec->second.type), spec->second.shape));
            return tensor.to(spec->second.device);
        }
        const TensorSpec& parameter = root_.parameters[position];
        if (view.dtype != parameter.dtype || view.shape != parameter.shape)
            throw Error(view.name + " is " + describeTensor(view.dtype, view.shape) + "; " + contract + " keeps " + slot + " like its parameter, " +
                        describeTensor(parameter.dtype, parameter.shape));
        return tensor.to(device_);
    }

    // The replayed value of a slot in the encoding the tape uses for it: a number slot in
    // `recorded` when that is a number encoding, every other slot as it is.
    at::Tensor asRecorded(const std::string& slot, const at::Tensor& tensor, DType recorded) const
    {
        if (numberSlots_.count(slot) && isNumberEncoding(recorded) && tensor.dim() == 0)
            return tensor.to(scalarTypeOf(recorded));
        return tensor;
    }

    void loadSnapshot(ByteSpan payload)
    {
        const SafetensorsView view = SafetensorsView::parse(payload);
        const SnapshotRecord snapshot = SnapshotRecord::parse(view, root_);
        at::NoGradGuard noGrad;
        for (std::size_t i = 0; i < parameters_.size(); ++i)
            parameters_[i].detach().copy_(tensorFromView(*snapshot.parameters[i]));
        for (std::size_t i = 0; i < buffers_.size(); ++i)
            buffers_[i].detach().copy_(tensorFromView(*snapshot.buffers[i]));
        state_.assign(parameters_.size(), optim::SlotState());
        numberEncoding_.clear();
        for (const TensorView* slot : snapshot.stateSlots) {
            auto [position, name] = splitStateName(slot->name);
            state_[position][name] = slotTensor(position, name, *slot);
        }
        // torch creates a parameter's state all at once: none of it, or every slot.
        for (std::size_t i = 0; i < parameters_.size(); ++i)
            for (const auto& [slot, spec] : slotSpecs_[i])
                if (!state_[i].empty() && !state_[i].count(slot))
                    throw Error("the snapshot holds optimizer state of " + root_.parameters[i].name + " but not its slot " + slot);
    }

    void replayTransaction(ByteSpan payload, TransactionOutcome& outcome)
    {
        const SafetensorsView view = SafetensorsView::parse(payload);
        const TransactionRecord record = TransactionRecord::parse(view, root_);
        if (record.index != outcome.index)
            throw FormatError("transaction record holds index " + std::to_string(record.index) + ", expected " + std::to_string(outcome.index));

        // A batch that is not the committed samples it names is no kernel's rounding: it is
        // diverged on any machine and any torch release (spec 5.7).
        batchNotCommitted_ = false;
        if (!shadowing_)
            acrossDifferences_.clear();
        StepValues& values = shadowing_ ? shadowing_->step : step_;
        values = StepValues();
        values_ = &values;
        if (const std::optional<std::string> problem = batchSampleProblem(record, root_)) {
            TensorComparison comparison;
            comparison.tensor = "batch";
            comparison.slot = "samples";
            comparison.verdict = Verdict::Diverged;
            comparison.metrics.bitwiseEqual = false;
            comparison.note = *problem;
            outcome.comparisons.push_back(std::move(comparison));
            batchNotCommitted_ = true;
        }
        for (at::Tensor& parameter : parameters_)
            parameter.mutable_grad() = at::Tensor();
        if (schedule_) {
            // The step runs with the values the transaction recorded; the schedule says
            // whether those are the declared schedule's.
            for (const std::string& option : bridge_->scheduled())
                bridge_->setScheduledValue(option, record.optimizerGroupValues(option));
            if (!shadowing_)  // the followers keep the primary replay's account
                for (TensorComparison& comparison : schedule_->follow(record))
                    outcome.comparisons.push_back(std::move(comparison));
        }
        if (scaler_ && !shadowing_)
            outcome.comparisons.push_back(scaler_->follow(record));
        // zkdv-audit explain: every operator of the step with its outputs (operator_tracer.h).
        const std::unique_ptr<OperatorTracer> tracer = trace_ ? std::make_unique<OperatorTracer>() : nullptr;
        std::vector<at::Tensor> buffersBefore;
        if (crossEnvironment())
            for (const at::Tensor& buffer : buffers_)
                buffersBefore.push_back(buffer.is_floating_point() ? buffer.detach().clone() : at::Tensor());
        // One forward and backward pass per micro-batch, in the recorded order; the gradients
        // accumulate as they did in the training loop (spec 5.4).
        for (std::size_t m = 0; m < record.microBatches.size(); ++m) {
            const MicroBatch& micro = record.microBatches[m];
            c10::List<at::Tensor> batch;
            for (const TensorView* tensor : micro.batch)
                batch.push_back(tensorFromView(*tensor).to(device_));
            at::Tensor loss;
            {
                const AutocastScope autocast(record.autocast);  // the forward's, as recorded; the backward runs outside
                if (!record.autocast.empty() && !shadowing_) {
                    segmentAutocast_ = true;
                    segmentAutocastText_ = describeAutocast(record.autocast);
                }
                const OperatorTracer::Phase phase(tracer.get(), "forward");
                loss = graph_ ? graph_->run(batch.vec()).front() : runTrainingStep(module_, batch);
            }
            const std::string name = record.microBatches.size() == 1 ? std::string("loss") : "micro-batch " + std::to_string(m);
            if (tracer)
                tracer->stage(name, loss);
            values.losses.push_back(loss.detach());
            outcome.comparisons.push_back(compareTensor(name, "loss", *micro.loss, loss, tolerance_));
            judgeAcrossEnvironments(outcome.comparisons.back(), micro.loss->dtype, [&] { return differenceNorm(*micro.loss, loss); },
                                    std::sqrt(squaredNorm(loss)), "the loss");
            const at::Tensor scaled = scaledLoss(loss, micro.scale);
            const OperatorTracer::Phase phase(tracer.get(), "backward");
            torch::autograd::backward(
                {record.gradScaler ? gradScaledLoss(scaled, record.gradScaler->state.scale, recordingRelease_.major) : scaled});
        }
        // A GradScaler skips the step when its unscale_ found an inf or NaN (spec 5.6).
        const bool skipped = applyGradientTransforms(record, outcome);
        if (crossEnvironment()) {
            // A buffer's drift across the segment is measured against how far the program moved
            // all of them, step by step (BatchNorm's running statistics, for one).
            double squares = 0.0;
            for (std::size_t i = 0; i < buffers_.size(); ++i)
                if (buffersBefore[i].defined()) {
                    const double changed = squaredNorm(buffers_[i].detach() - buffersBefore[i]);
                    squares += changed;
                    if (!shadowing_ && (changed != 0.0 || !buffers_[i].detach().equal(buffersBefore[i])))
                        bufferWritten_[i] = true;
                }
            if (!shadowing_)
                segmentBufferChange_ += std::sqrt(squares);
        }

        at::NoGradGuard noGrad;
        std::vector<at::Tensor> detached, gradients;
        for (std::size_t i = 0; i < parameters_.size(); ++i) {
            detached.push_back(parameters_[i].detach());
            gradients.push_back(parameters_[i].grad());
            // torch.optim creates a parameter's state at its first step with a gradient.
            if (!skipped && gradients.back().defined() && state_[i].empty())
                state_[i] = bridge_->contract().initialize(detached.back(), bridge_->groups()[groupOf_[i]].options);
        }
        optim::OptimizerBridge::Transition transition;
        if (skipped) {
            // No optimizer step: the parameters and the state stay, and the update is zero.
            transition.parameters = detached;
            transition.state = state_;
            for (const at::Tensor& p : detached)
                transition.deltas.push_back(at::zeros_like(p));
        } else {
            if (tracer)
                for (std::size_t i = 0; i < parameters_.size(); ++i)
                    if (gradients[i].defined())
                        tracer->stage("gradient " + root_.parameters[i].name, gradients[i]);
            const OperatorTracer::Phase phase(tracer.get(), "optimizer");
            transition = bridge_->transition(detached, state_, gradients);
        }
        if (tracer) {
            for (std::size_t i = 0; i < parameters_.size(); ++i)
                tracer->stage("update " + root_.parameters[i].name, transition.deltas[i]);
            outcome.operators = tracer->finish(outcome.operatorsOmitted);
        }
        if (crossEnvironment() && !shadowing_)
            findNoiseGradients(gradients);

        // Across environments, an update is judged against the whole model's update: a
        // parameter whose gradient is rounding noise (a bias before BatchNorm) gets an update
        // of noise, and its own norm is no scale for that.
        const double modelUpdate = crossEnvironment() ? modelNorm(transition.deltas) : 0.0;
        if (!shadowing_)
            segmentUpdate_ += modelUpdate;
        if (crossEnvironment() && !shadowing_)
            for (std::size_t i = 0; i < parameters_.size(); ++i)
                if (!parameterMoved_[i] && transition.deltas[i].defined() && transition.deltas[i].count_nonzero().item<std::int64_t>() != 0)
                    parameterMoved_[i] = true;
        values.deltas = transition.deltas;
        for (std::size_t i = 0; i < parameters_.size(); ++i) {
            const std::string& name = root_.parameters[i].name;
            const DType dtype = root_.parameters[i].dtype;
            const UpdateFingerprint fingerprint = updateFingerprint(transition.deltas[i]);
            // Across environments an update may differ by one grid step of its parameter per
            // element (parameterGrid) before the envelope judges the rest.
            std::optional<at::Tensor> grid;
            auto gridOf = [&]() -> const at::Tensor& {
                if (!grid)
                    grid = parameterGrid(transition.parameters[i]);
                return *grid;
            };
            const char* beyondGrid = "its difference beyond one ulp of the parameter per element";
            outcome.comparisons.push_back(compareFingerprint(name, "update/l2", record.updateL2[i], fingerprint.l2, tolerance_));
            judgeAcrossEnvironments(
                outcome.comparisons.back(), dtype,
                [&] { return std::max(0.0, std::fabs(record.updateL2[i] - fingerprint.l2) - std::sqrt(squaredNorm(gridOf()))); }, modelUpdate,
                "the model's update", beyondGrid);
            outcome.comparisons.push_back(compareFingerprint(name, "update/max_abs", record.updateMaxAbs[i], fingerprint.maxAbs, tolerance_));
            judgeAcrossEnvironments(
                outcome.comparisons.back(), dtype,
                [&] {
                    const double step = gridOf().numel() ? gridOf().max().item<double>() : 0.0;
                    return std::max(0.0, std::fabs(record.updateMaxAbs[i] - fingerprint.maxAbs) - step);
                },
                modelUpdate, "the model's update", beyondGrid);
            if (!record.deltas.empty()) {
                outcome.comparisons.push_back(compareTensor(name, "delta", *record.deltas[i], transition.deltas[i], tolerance_));
                judgeAcrossEnvironments(outcome.comparisons.back(), dtype, [&] { return deltaBeyondGrid(*record.deltas[i], transition.deltas[i], gridOf()); },
                                        modelUpdate, "the model's update", beyondGrid);
                if (capture_)
                    captureValues(name, *record.deltas[i], transition.deltas[i], outcome);
            }
        }
        for (std::size_t i = 0; i < parameters_.size(); ++i)
            detached[i].copy_(transition.parameters[i]);
        state_ = std::move(transition.state);

        if (record.stateDigest && !shadowing_)
            outcome.comparisons.push_back(compareStateDigest(*record.stateDigest, outcome));
    }

    // The transaction's clipping, as the recording torch applied it (spec 5.1), and each total
    // norm it computed against the recorded one. Where torch would have raised (a non-finite
    // norm under error_if_nonfinite) the recorded step cannot have happened: the throw makes
    // the transaction diverged. A GradScaler's unscale_ (spec 5.6) decides whether the step is
    // skipped: returns that decision, compared with the recorded one.
    bool applyGradientTransforms(const TransactionRecord& record, TransactionOutcome& outcome)
    {
        transformsNote_.clear();
        bool skipped = false;
        if (record.gradientTransforms.empty())
            return skipped;
        for (const GradientTransform& transform : record.gradientTransforms)
            transformsNote_ += (transformsNote_.empty() ? "" : ", then ") + transform.describe();
        std::vector<at::Tensor> gradients;
        for (const at::Tensor& parameter : parameters_)
            gradients.push_back(parameter.grad());
        for (std::size_t k = 0; k < record.gradientTransforms.size(); ++k) {
            const GradientTransform& transform = record.gradientTransforms[k];
            const at::Tensor total = optim::applyGradientTransform(transform, gradients, recordingRelease_);
            if (transform.kind == GradientTransform::Kind::Unscale) {
                skipped = total.item<float>() != 0.0f;
                outcome.comparisons.push_back(compareSkip(*record.gradScaler, skipped));
                continue;
            }
            if (!total.defined())
                continue;
            if (values_)
                values_->totalNorms[k] = total;
            outcome.comparisons.push_back(compareTensor("gradients", "total_norm/" + std::to_string(k), *record.totalNorms[k], total, tolerance_));
            judgeAcrossEnvironments(outcome.comparisons.back(), record.totalNorms[k]->dtype,
                                    [&] { return differenceNorm(*record.totalNorms[k], total); }, std::sqrt(squaredNorm(total)),
                                    "the total norm");
            TensorComparison& comparison = outcome.comparisons.back();
            if (comparison.verdict != Verdict::Exact && comparison.note.empty())
                comparison.note = transform.describe() + ": total norm " + scalarText(*record.totalNorms[k]) + " recorded, " +
                                  scalarText(total) + " replayed";
        }
        return skipped;
    }

    // Whether the replayed gradients held an inf or NaN where the transaction says its step
    // was (or was not) skipped for one. Either way the replay follows its own finding.
    static TensorComparison compareSkip(const GradScalerStep& recorded, bool replayed)
    {
        TensorComparison comparison;
        comparison.tensor = "grad_scaler";
        comparison.slot = "skipped";
        comparison.metrics = compareScalars(recorded.skipped ? 1.0 : 0.0, replayed ? 1.0 : 0.0);
        if (recorded.skipped == replayed)
            return comparison;
        comparison.verdict = Verdict::Diverged;
        comparison.note = std::string("grad_scaler skipped is ") + (recorded.skipped ? "true" : "false") +
                          " in the transaction, but the replayed gradients scaled by " + gradScaleText(recorded.state.scale) +
                          (replayed ? " hold an inf or NaN, so GradScaler.step() skips the optimizer step"
                                    : " are all finite, so GradScaler.step() takes the optimizer step");
        return comparison;
    }

    static std::string scalarText(const TensorView& view)
    {
        return scalarText(tensorFromView(view));
    }
    static std::string scalarText(const at::Tensor& tensor)
    {
        char text[40];
        std::snprintf(text, sizeof text, "%.9g", hostContiguous(tensor).to(at::kDouble).item<double>());
        return text;
    }

    // Both values of a compared delta, for the element comparison; bounded in bytes per outcome.
    static void captureValues(const std::string& name, const TensorView& recorded, const at::Tensor& replayed, TransactionOutcome& outcome)
    {
        std::uint64_t used = 0;
        for (const ComparedValues& v : outcome.values)
            used += v.recorded.size() + v.replayed.size();
        if (used + 2 * recorded.data.size > kMaxComparedValueBytes) {
            outcome.valuesOmitted += (outcome.valuesOmitted.empty() ? "values left out (more than " + std::to_string(kMaxComparedValueBytes >> 20) +
                                                                          " MiB in all): "
                                                                    : std::string(", ")) + name;
            return;
        }
        ComparedValues values;
        values.tensor = name;
        values.slot = "delta";
        values.dtype = recorded.dtype;
        values.shape = recorded.shape;
        values.recorded.assign(recorded.data.begin(), recorded.data.end());
        const at::Tensor host = hostContiguous(replayed);
        if (scalarTypeOf(recorded.dtype) == host.scalar_type() && recorded.shape == host.sizes().vec()) {
            const ByteSpan bytes = tensorBytes(host);
            values.replayed.assign(bytes.begin(), bytes.end());
        }
        outcome.values.push_back(std::move(values));
    }

    // The state digest of the replayed state, number slots encoded as `encoding` says.
    Digest replayedDigest(const std::map<std::string, DType>& encoding) const
    {
        StateDigest digest;
        auto add = [&](const std::string& name, const at::Tensor& tensor) {
            const at::Tensor host = hostContiguous(tensor);
            digest.add(name, dtypeOf(host.scalar_type()), host.sizes().vec(), tensorBytes(host));
        };
        for (std::size_t i = 0; i < parameters_.size(); ++i)
            add(parameterTensorName(root_.parameters[i].name), parameters_[i]);
        for (std::size_t i = 0; i < buffers_.size(); ++i)
            add(bufferTensorName(root_.buffers[i].name), buffers_[i]);
        for (std::size_t i = 0; i < state_.size(); ++i)
            for (const auto& [slot, tensor] : state_[i])
                if (tensor.defined()) {
                    auto it = encoding.find(slot);
                    add(stateTensorName(root_.parameters[i].name, slot), it == encoding.end() ? tensor : asRecorded(slot, tensor, it->second));
                }
        return digest.finish();
    }

    // Whether some encoding of the number slots the tape allows gives the recorded digest.
    // The segment's snapshot fixes the encoding of the slots it holds; a slot created since
    // (every slot, in the segment from snapshot 0) may be in any number encoding.
    bool digestMatches(const Digest& recorded, Digest& first) const
    {
        std::map<std::string, DType> encoding = numberEncoding_;
        std::vector<std::string> open;
        for (const optim::SlotState& slots : state_)
            for (const auto& [slot, tensor] : slots)
                if (numberSlots_.count(slot) && !encoding.count(slot) && std::find(open.begin(), open.end(), slot) == open.end())
                    open.push_back(slot);
        const DType choices[] = {DType::I64, DType::F64, DType::F32};
        std::vector<std::size_t> choice(open.size(), 0);
        for (bool more = true; more;) {
            for (std::size_t k = 0; k < open.size(); ++k)
                encoding[open[k]] = choices[choice[k]];
            const Digest replayed = replayedDigest(encoding);
            if (replayed == recorded)
                return true;
            if (std::all_of(choice.begin(), choice.end(), [](std::size_t c) { return c == 0; }))
                first = replayed;  // the encoding our writers use, to name in the note
            more = false;
            for (std::size_t k = 0; k < open.size() && !more; ++k) {
                more = ++choice[k] < std::size(choices);
                if (!more)
                    choice[k] = 0;
            }
        }
        return false;
    }

    // A digest can only match a bit-exact state. Its mismatch is excused as rounding (not
    // comparable, within-tolerance) only while every earlier check of the segment, this
    // transaction's included, is within tolerance; after a divergence it is a divergence.
    TensorComparison compareStateDigest(const Digest& recorded, const TransactionOutcome& outcome) const
    {
        TensorComparison comparison;
        comparison.tensor = "state";
        comparison.slot = "state-digest";
        comparison.metrics.elements = 1;
        Digest replayed{};
        comparison.metrics.bitwiseEqual = digestMatches(recorded, replayed);
        if (comparison.metrics.bitwiseEqual)
            return comparison;
        comparison.metrics.ulpHistogram[0] = 0;
        Verdict soFar = segmentWorst_;
        for (const TensorComparison& c : outcome.comparisons)
            soFar = worse(soFar, c.verdict);
        const std::string hashes = "the full state after this step hashes to " + toHex(replayed) + ", the tape recorded " + toHex(recorded);
        if (soFar == Verdict::Exact && crossEnvironment()) {
            // Every compared value agrees, but across environments rounding may have moved
            // bits no check samples (an optimizer slot's last bit under an equal update); the
            // next snapshot compares all of it against the envelope.
            comparison.verdict = Verdict::WithinTolerance;
            comparison.note = "not comparable across numerical environments: every value compared is bit for bit, but the state need not be";
        } else if (soFar == Verdict::Exact) {
            comparison.verdict = Verdict::Diverged;
            comparison.note = hashes;
        } else if (soFar == Verdict::WithinTolerance) {
            comparison.verdict = Verdict::WithinTolerance;
            comparison.note = "not comparable: the replay is within tolerance, not bit for bit, so the state digest cannot match";
        } else {
            comparison.verdict = Verdict::Diverged;
            comparison.note = hashes + " (not excused as rounding: " +
                              (firstDiverged_ ? "transaction " + std::to_string(*firstDiverged_) + " of this segment diverged"
                                              : std::string("a check of this transaction diverged")) +
                              ")";
        }
        return comparison;
    }

    bool crossEnvironment() const { return regime_.regime == NumericRegime::CrossEnvironment; }

    // A parameter whose gradient is at rounding level of the whole model's gradient (a bias
    // before BatchNorm, whose gradient BatchNorm cancels) does not move the loss; an optimizer
    // that normalizes its gradient (Adam) turns that noise into full-size steps, which differ
    // in another environment by as much as they are large. No tolerance can tell that from
    // tampering, so across environments its mismatches are no evidence either way.
    void findNoiseGradients(const std::vector<at::Tensor>& gradients)
    {
        const double model = modelNorm(gradients);
        for (std::size_t i = 0; i < gradients.size(); ++i) {
            // A gradient that is exactly zero (a path the data never takes) is zero on every
            // machine: no rounding noise, so nothing it reaches is excused (issue 48, item 10).
            if (!gradients[i].defined() || (!gradients[i].is_sparse() && gradients[i].count_nonzero().item<std::int64_t>() == 0))
                continue;
            double ratio = 0.0;
            if (noiseTolerance_.withinEnvelope(root_.parameters[i].dtype, std::sqrt(squaredNorm(gradients[i])), model, ratio) &&
                !noiseGradients_.count(root_.parameters[i].name))
                noiseGradients_.emplace(root_.parameters[i].name, ratio);
        }
    }

    // Across environments: a transaction that diverged only where a noise gradient reaches
    // (that parameter's update, value and state, the buffers it feeds, the digest after them)
    // is unverifiable, never diverged, and never passes: the recording environment decides.
    // A mismatch of the loss or of any other parameter stays a divergence.
    // A comparison measured by the divergence metrics (its note, if any, is the envelope's),
    // not a dtype, shape or digest mismatch.
    static bool measuredDifference(const TensorComparison& c) { return c.note.empty() || c.note.rfind("max ", 0) == 0; }
    // A value a noise gradient reaches: that parameter's update, value and state.
    bool reachedByNoise(const TensorComparison& c) const
    {
        return noiseGradients_.count(c.tensor) && c.slot != "loss" && !c.metrics.bitwiseEqual && measuredDifference(c);
    }
    // A digest follows the state only while nothing else in the segment truly diverged.
    bool digestFollows(const TensorComparison& c) const { return c.slot == "state-digest" && !firstDiverged_; }

    void excuseNoiseGradients(TransactionOutcome& outcome) const
    {
        if (!crossEnvironment() || outcome.verdict != Verdict::Diverged || noiseGradients_.empty())
            return;
        bool noiseMismatch = false;
        for (const TensorComparison& c : outcome.comparisons) {
            if (c.verdict != Verdict::Diverged)
                continue;
            const bool noise = reachedByNoise(c);
            const bool follows = (c.slot == "snapshot/buffer" && measuredDifference(c) && !bufferBeyondNoise_.count(c.tensor)) ||
                                 digestFollows(c);
            if (!noise && !follows)
                return;
            noiseMismatch = noiseMismatch || noise;
        }
        if (!noiseMismatch)
            return;
        std::string names;
        for (const auto& [name, ratio] : noiseGradients_) {
            char text[96];
            std::snprintf(text, sizeof text, "%.3g", ratio);
            names += (names.empty() ? "" : ", ") + name + " (||gradient|| = " + text + " u x the model's)";
        }
        outcome.verdict = Verdict::Unverifiable;
        outcome.detail = "unverifiable across numerical environments (" + regime_.reason +
                         "): the gradient of " + names +
                         " is rounding noise, which its optimizer turns into steps no tolerance can tell from tampering; "
                         "replay in the recording environment to decide: " + outcome.detail;
    }

    // Across environments on the CPU, a transaction still diverged after the envelope and the
    // noise rule is checked against what rounding does at that point of training: the segment
    // is replayed again ("shadows"), at another intra-op thread count (the recorded one where
    // the replay runs another), first from its snapshot as it is and, when that does not
    // explain the tape, once more from the snapshot moved by an ulp; every comparison that
    // failed is measured between each shadow and this replay. Where an ulp decides the outcome
    // (a max-pool or ReLU near a tie, a gradient of rounding that Adam normalizes into full
    // steps), honest replays part by far more than any model-wide envelope, and a shadow then
    // differs from this replay by as much as the tape does. When every failed comparison is
    // within kAmplifiedRoundingFactor times the larger shadow's difference, the transaction is
    // unverifiable (never passed: only the recording environment decides); any one beyond it,
    // or one no shadow can measure, keeps it diverged (docs/replay.md, "Amplified rounding").
    void excuseAmplifiedRounding(TransactionOutcome& outcome)
    {
        if (!crossEnvironment() || !device_.is_cpu() || outcome.verdict != Verdict::Diverged || batchNotCommitted_ || !segment_ ||
            !records_)
            return;
        std::vector<TensorComparison*> judged;
        for (TensorComparison& c : outcome.comparisons) {
            if (c.verdict != Verdict::Diverged)
                continue;
            if (reachedByNoise(c) || digestFollows(c))
                continue;
            if (!acrossDifferences_.count(c.label()))
                return;  // not a difference an envelope judged: no rounding explains it
            // A buffer fed by noise gradients that differs beyond what they differ by here is
            // not amplified rounding either: the amplification would start at them.
            if (c.slot == "snapshot/buffer" && bufferBeyondNoise_.count(c.tensor))
                return;
            judged.push_back(&c);
        }
        if (judged.empty())
            return;
        std::map<std::string, double> largest;  // per judged comparison, the largest shadow difference so far
        std::uint64_t budget = kMaxShadowSteps;
        std::string ran, why;
        for (int variant = 0; variant < 2; ++variant) {
            if (!advanceShadowTo(variant, outcome.index, budget, why))
                break;
            Shadow& shadow = *shadows_[variant];
            ran += std::string(ran.empty() ? "" : "; ") + shadowName(shadow);
            for (TensorComparison* c : judged)
                if (const std::optional<double> spread = shadowSpread(*c, shadow))
                    largest[c->label()] = std::max(largest[c->label()], *spread);
            double worstRatio = 0.0;
            std::string worstLabel, beyond;
            for (TensorComparison* c : judged) {
                const double difference = acrossDifferences_[c->label()];
                const double spread = largest.count(c->label()) ? largest[c->label()] : 0.0;
                if (!(spread > 0.0) || difference > kAmplifiedRoundingFactor * spread) {
                    beyond = c->label() + " by " + (spread > 0.0 ? formatNumber(spread) : std::string("nothing")) + ", so the tape's difference " +
                             formatNumber(difference) + " is beyond what rounding does here (more than " +
                             formatNumber(kAmplifiedRoundingFactor) + " x that)";
                    break;
                }
                if (difference / spread >= worstRatio) {
                    worstRatio = difference / spread;
                    worstLabel = c->label();
                }
            }
            if (!beyond.empty()) {
                why = "replays of the segment again (" + ran + ") differ from this one in " + beyond;
                continue;
            }
            for (TensorComparison* c : judged)
                c->roundingNoise = true;
            outcome.verdict = Verdict::Unverifiable;
            outcome.detail = "unverifiable across numerical environments (" + regime_.reason +
                             "): rounding is amplified here beyond the envelope; replaying the segment again (" + ran +
                             ") differs from this replay by as much as the tape does (the tape's difference is at most " +
                             formatNumber(worstRatio) + " x the larger, in " + worstLabel + "; within the factor " +
                             formatNumber(kAmplifiedRoundingFactor) +
                             "), which no tolerance can tell from tampering; replay in the recording environment to decide: " + outcome.detail;
            return;
        }
        if (!why.empty())
            outcome.detail += "; " + why;
    }

    std::string shadowName(const Shadow& shadow) const
    {
        return "at " + std::to_string(shadow.threads) + " intra-op thread(s) instead of " + std::to_string(primaryThreads_) +
               (shadow.perturbed ? ", from the snapshot moved by an ulp" : "");
    }

    static std::string formatNumber(double value)
    {
        char text[32];
        std::snprintf(text, sizeof text, "%.3g", value);
        return text;
    }

    // The primary replay's live state against the shadow's, as the comparison measures it.
    std::optional<double> shadowSpread(const TensorComparison& c, const Shadow& other) const
    {
        const StepValues& primary = step_;
        const StepValues& shadow = other.step;
        const auto scalarDifference = [](const at::Tensor& a, const at::Tensor& b) -> std::optional<double> {
            if (!a.defined() || !b.defined())
                return std::nullopt;
            return std::sqrt(squaredNorm(a.detach().to(at::kDouble) - b.detach().to(at::kDouble)));
        };
        if (c.slot == "loss") {
            std::size_t m = 0;
            if (c.tensor != "loss") {
                if (c.tensor.rfind("micro-batch ", 0) != 0)
                    return std::nullopt;
                m = static_cast<std::size_t>(std::strtoull(c.tensor.c_str() + 12, nullptr, 10));
            }
            if (m >= primary.losses.size() || m >= shadow.losses.size())
                return std::nullopt;
            return scalarDifference(primary.losses[m], shadow.losses[m]);
        }
        if (c.tensor == "gradients" && c.slot.rfind("total_norm/", 0) == 0) {
            const std::size_t k = static_cast<std::size_t>(std::strtoull(c.slot.c_str() + 11, nullptr, 10));
            const auto a = primary.totalNorms.find(k);
            const auto b = shadow.totalNorms.find(k);
            if (a == primary.totalNorms.end() || b == shadow.totalNorms.end())
                return std::nullopt;
            return scalarDifference(a->second, b->second);
        }
        const int position = root_.parameterIndex(c.tensor);
        if (position >= 0) {
            const auto i = static_cast<std::size_t>(position);
            if (c.slot == "snapshot/param")
                return other.atEnd ? scalarDifference(parameters_[i], other.parameters[i]) : std::nullopt;
            if (c.slot.rfind("state/", 0) == 0) {
                if (!other.atEnd)
                    return std::nullopt;
                const std::string slot = c.slot.substr(6);
                const auto a = state_[i].find(slot);
                const auto b = other.state[i].find(slot);
                if (a == state_[i].end() || b == other.state[i].end() || !a->second.is_floating_point())
                    return std::nullopt;
                return scalarDifference(a->second, b->second);
            }
            if (i >= primary.deltas.size() || i >= shadow.deltas.size())
                return std::nullopt;
            // A fingerprint moves by at most the norm of the update's difference (|‖a‖ - ‖b‖| and
            // |max|a| - max|b|| are both at most ‖a - b‖); one element's maximum alone may
            // happen to agree between the replays while the update around it does not.
            if (c.slot == "delta" || c.slot == "update/l2" || c.slot == "update/max_abs")
                return scalarDifference(primary.deltas[i], shadow.deltas[i]);
            return std::nullopt;
        }
        if (c.slot == "snapshot/buffer" && other.atEnd)
            for (std::size_t i = 0; i < root_.buffers.size(); ++i)
                if (root_.buffers[i].name == c.tensor)
                    return buffers_[i].is_floating_point() ? scalarDifference(buffers_[i], other.buffers[i]) : std::nullopt;
        return std::nullopt;
    }

    // Moves every floating-point value of the live state (parameters, buffers, optimizer-state
    // slots other than counters) by at least one unit in the last place, up or down at random
    // (seeded by the snapshot: the same every time): the shadow starts where the recording
    // might as well have been, so that a point of training whose outcome an ulp decides (an
    // argmax near a tie, a ReLU at zero, a gradient that is all rounding under Adam) shows as
    // the replays parting.
    void perturbByOneUlp(std::uint64_t seed)
    {
        at::NoGradGuard noGrad;
        at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(seed + 1);
        auto perturb = [&](const at::Tensor& tensor) {
            if (!tensor.defined() || !tensor.is_floating_point() || tensor.numel() == 0)
                return;
            // x * (1 ± eps) is x moved by one or two ulps, in the tensor's own dtype.
            const double eps = tensor.scalar_type() == at::kDouble     ? std::numeric_limits<double>::epsilon()
                               : tensor.scalar_type() == at::kHalf     ? 0x1p-10
                               : tensor.scalar_type() == at::kBFloat16 ? 0x1p-7
                                                                       : static_cast<double>(std::numeric_limits<float>::epsilon());
            at::Tensor factors = at::empty(tensor.sizes(), tensor.options().dtype(at::kDouble).device(at::kCPU));
            factors.bernoulli_(0.5, generator).mul_(2.0 * eps).add_(1.0 - eps);
            tensor.detach().mul_(factors.to(tensor.options()));
        };
        for (const at::Tensor& parameter : parameters_)
            perturb(parameter);
        for (const at::Tensor& buffer : buffers_)
            perturb(buffer);
        for (optim::SlotState& slots : state_)
            for (auto& [slot, tensor] : slots)
                if (!numberSlots_.count(slot))
                    perturb(tensor);
    }

    // Brings shadow `variant` (0: from the segment's snapshot, 1: from it moved by an ulp) up to
    // transaction `index`, within `budget` steps (what is left of them after), the primary
    // replay's state set aside meanwhile and put back after, whatever happens. False, saying
    // why, when it cannot replay.
    bool advanceShadowTo(int variant, std::uint64_t index, std::uint64_t& budget, std::string& why)
    {
        std::optional<Shadow>& shadow = shadows_[variant];
        if (shadow && !shadow->failed.empty()) {
            why = shadow->failed;
            return false;
        }
        // The transaction's outcome is due within the time budget of one (20 x the median, at
        // least): more steps than fit it are not tried.
        const std::uint64_t steps = index + 1 - (shadow ? shadow->next : segment_->snapshot);
        if (steps > budget) {
            if (variant == 0)
                why = "not replayed again to measure what rounding does here: that takes " + std::to_string(steps) + " steps, more than " +
                      std::to_string(kMaxShadowSteps) + " fit the time budget of one transaction";
            return false;
        }
        budget -= steps;
        primaryThreads_ = at::get_num_threads();
        const bool fresh = !shadow;
        if (fresh) {
            shadow.emplace();
            const int recorded = root_.intraOpThreads;
            shadow->threads = recorded > 0 && recorded != primaryThreads_ ? recorded : (primaryThreads_ == 1 ? 2 : 1);
            shadow->perturbed = variant == 1;
            shadow->next = segment_->snapshot;
        }
        // Set aside: the primary's live tensors and everything a step changes.
        std::vector<at::Tensor> parameters, buffers;
        for (const at::Tensor& p : parameters_)
            parameters.push_back(p.detach().clone());
        for (const at::Tensor& b : buffers_)
            buffers.push_back(b.detach().clone());
        std::vector<optim::SlotState> state = std::move(state_);
        const std::map<std::string, DType> encoding = numberEncoding_;
        const std::string transformsNote = transformsNote_;
        const bool capture = capture_, trace = trace_, notCommitted = batchNotCommitted_;
        auto restore = [&] {
            for (std::size_t i = 0; i < parameters_.size(); ++i)
                parameters_[i].detach().copy_(parameters[i]);
            for (std::size_t i = 0; i < buffers_.size(); ++i)
                buffers_[i].detach().copy_(buffers[i]);
            state_ = std::move(state);
            numberEncoding_ = encoding;
            transformsNote_ = transformsNote;
            capture_ = capture;
            trace_ = trace;
            batchNotCommitted_ = notCommitted;
            shadowing_ = nullptr;
            at::set_num_threads(primaryThreads_);
        };
        try {
            if (fresh) {
                loadSnapshot(records_->snapshot(segment_->snapshot));
                if (shadow->perturbed)
                    perturbByOneUlp(segment_->snapshot);
            } else {
                for (std::size_t i = 0; i < parameters_.size(); ++i)
                    parameters_[i].detach().copy_(shadow->parameters[i]);
                for (std::size_t i = 0; i < buffers_.size(); ++i)
                    buffers_[i].detach().copy_(shadow->buffers[i]);
                state_ = std::move(shadow->state);
            }
            shadowing_ = &*shadow;
            capture_ = trace_ = false;
            at::set_num_threads(shadow->threads);
            for (; shadow->next <= index; ++shadow->next) {
                TransactionOutcome scratch = blankOutcome(*segment_, shadow->next);
                replayTransaction(records_->transaction(shadow->next), scratch);
            }
            shadow->parameters.clear();
            shadow->buffers.clear();
            for (const at::Tensor& p : parameters_)
                shadow->parameters.push_back(p.detach().clone());
            for (const at::Tensor& b : buffers_)
                shadow->buffers.push_back(b.detach().clone());
            shadow->state = std::move(state_);
        } catch (const std::exception& error) {
            shadow->failed = std::string("replaying the segment again, to measure what rounding does here, failed: ") + error.what();
            why = shadow->failed;
            restore();
            return false;
        }
        restore();
        shadow->atEnd = index == segment_->lastTransaction && segment_->reachesNextSnapshot;
        return true;
    }

    // What a noise gradient reaches (excuseNoiseGradients' rule), marked on every comparison of
    // a cross-environment outcome, for calibrations to leave out.
    void markRoundingNoise(TransactionOutcome& outcome) const
    {
        if (!crossEnvironment() || noiseGradients_.empty())
            return;  // (what excuseAmplifiedRounding excused it marked itself)
        for (TensorComparison& c : outcome.comparisons)
            c.roundingNoise = c.roundingNoise || (noiseGradients_.count(c.tensor) && c.slot != "loss") || c.slot == "snapshot/buffer";
    }

    // The cross-environment regime (docs/replay.md, "Regimes"): a floating-point comparison
    // that fails the tensor's own bounds passes when the norm of its difference is within the
    // envelope of `scale`, the replay's norm of the whole model's corresponding quantity. A
    // dtype, shape or NaN/Inf mismatch, an integer or a counter never does.
    void judgeAcrossEnvironments(TensorComparison& comparison, DType dtype, const std::function<double()>& difference, double scale,
                                 const char* scaleName, const char* differenceName = "its difference") const
    {
        // Bit for bit across environments: measured as 0 (a calibration counts it).
        if (crossEnvironment() && comparison.metrics.bitwiseEqual && comparison.note.empty() && isFloatingPoint(dtype))
            comparison.envelopeRatio = 0.0;
        if (!crossEnvironment() || comparison.verdict != Verdict::Diverged || !comparison.note.empty() ||
            comparison.metrics.finiteMismatch() || !isFloatingPoint(dtype))
            return;
        const double norm = difference();
        double ratio = 0.0;
        const bool within = tolerance_.withinEnvelope(dtype, norm, scale, ratio);
        comparison.envelopeRatio = std::isfinite(norm) ? ratio : std::numeric_limits<double>::infinity();
        char text[400];
        std::snprintf(text, sizeof text, "max %.3g ULP, relative L2 %.3g; across environments %s %.3g is %.3g u x %s (%.3g), %s envelope %g",
                      comparison.metrics.maxUlp, comparison.metrics.relativeL2, differenceName, norm, ratio, scaleName, scale,
                      within ? "within the" : "outside the", tolerance_.envelope);
        comparison.note = text;
        if (within)
            comparison.verdict = Verdict::WithinTolerance;
        else if (!shadowing_ && std::isfinite(norm))
            acrossDifferences_[comparison.label()] = norm;
    }

    void compareSnapshot(ByteSpan payload, TransactionOutcome& outcome) const
    {
        const SafetensorsView view = SafetensorsView::parse(payload);
        const SnapshotRecord snapshot = SnapshotRecord::parse(view, root_);
        for (std::size_t i = 0; i < parameters_.size(); ++i) {
            outcome.comparisons.push_back(compareTensor(root_.parameters[i].name, "snapshot/param", *snapshot.parameters[i], parameters_[i], tolerance_));
            if (!judgedExactlyUnwritten(outcome.comparisons.back(), !parameterMoved_[i], "parameter"))
                judgeAcrossEnvironments(outcome.comparisons.back(), root_.parameters[i].dtype,
                                        [&] { return stateDifference(*snapshot.parameters[i], parameters_[i]); }, segmentUpdate_,
                                        "the model's updates over the segment");
        }
        for (std::size_t i = 0; i < buffers_.size(); ++i) {
            outcome.comparisons.push_back(compareTensor(root_.buffers[i].name, "snapshot/buffer", *snapshot.buffers[i], buffers_[i], tolerance_));
            if (!judgedExactlyUnwritten(outcome.comparisons.back(), !bufferWritten_[i] && buffers_[i].is_floating_point(), "buffer"))
                judgeAcrossEnvironments(outcome.comparisons.back(), root_.buffers[i].dtype,
                                        [&] { return stateDifference(*snapshot.buffers[i], buffers_[i]); }, segmentBufferChange_,
                                        "the buffers' changes over the segment");
        }
        noteBuffersBeyondNoise(snapshot);
        // A state slot against the same slot of the whole model (number slots are counters:
        // they get no envelope).
        std::map<std::string, double> slotSquares;
        if (crossEnvironment())
            for (const optim::SlotState& slots : state_)
                for (const auto& [slot, tensor] : slots)
                    if (!numberSlots_.count(slot) && tensor.defined() && tensor.is_floating_point())
                        slotSquares[slot] += squaredNorm(tensor);
        std::vector<std::map<std::string, const TensorView*>> recorded(parameters_.size());
        for (const TensorView* slot : snapshot.stateSlots) {
            auto [position, name] = splitStateName(slot->name);
            recorded[position][name] = slot;
        }
        for (std::size_t i = 0; i < parameters_.size(); ++i) {
            const std::string& parameter = root_.parameters[i].name;
            for (const auto& [slot, tensor] : state_[i]) {
                auto it = recorded[i].find(slot);
                if (it == recorded[i].end()) {
                    TensorComparison missing;
                    missing.tensor = parameter;
                    missing.slot = "state/" + slot;
                    missing.verdict = Verdict::Diverged;
                    missing.metrics.bitwiseEqual = false;
                    missing.note = "the replay holds this optimizer-state slot, the tape's next snapshot does not";
                    outcome.comparisons.push_back(std::move(missing));
                    continue;
                }
                auto known = numberEncoding_.find(slot);
                if (numberSlots_.count(slot) && known != numberEncoding_.end() && known->second != it->second->dtype) {
                    TensorComparison changed;
                    changed.tensor = parameter;
                    changed.slot = "state/" + slot;
                    changed.verdict = Verdict::Diverged;
                    changed.metrics.bitwiseEqual = false;
                    changed.note = "the tape holds this number slot as " + std::string(dtypeName(it->second->dtype)) + " here and as " +
                                   std::string(dtypeName(known->second)) + " in the snapshot the segment started from";
                    outcome.comparisons.push_back(std::move(changed));
                } else {
                    const at::Tensor replayed = asRecorded(slot, tensor, it->second->dtype);
                    outcome.comparisons.push_back(compareTensor(parameter, "state/" + slot, *it->second, replayed, tolerance_));
                    if (!numberSlots_.count(slot))
                        judgeAcrossEnvironments(outcome.comparisons.back(), it->second->dtype,
                                                [&] { return stateDifference(*it->second, replayed); }, std::sqrt(slotSquares[slot]),
                                                "the model's whole slot");
                }
                recorded[i].erase(it);
            }
            for (const auto& [slot, view] : recorded[i]) {
                TensorComparison extra;
                extra.tensor = parameter;
                extra.slot = "state/" + slot;
                extra.verdict = Verdict::Diverged;
                extra.metrics.bitwiseEqual = false;
                extra.note = "the tape's next snapshot holds this optimizer-state slot, the replay does not";
                outcome.comparisons.push_back(std::move(extra));
            }
        }
    }

    // A buffer follows a noise gradient (BatchNorm's running mean moves with the bias before it)
    // only by as much as the noise parameters themselves differ: a buffer whose difference
    // from the tape is beyond kAmplifiedRoundingFactor times theirs, at the same snapshot, is
    // not excused by them (issue 48, item 9: an altered running_mean in a tape that records no
    // environment).
    void noteBuffersBeyondNoise(const SnapshotRecord& snapshot) const
    {
        bufferBeyondNoise_.clear();
        if (!crossEnvironment() || noiseGradients_.empty())
            return;
        auto comparable = [](const TensorView& recorded, const at::Tensor& replayed) {
            return replayed.is_floating_point() && scalarTypeOf(recorded.dtype) == replayed.scalar_type() && recorded.shape == replayed.sizes().vec();
        };
        double squares = 0.0;
        for (std::size_t i = 0; i < parameters_.size(); ++i)
            if (noiseGradients_.count(root_.parameters[i].name) && comparable(*snapshot.parameters[i], parameters_[i])) {
                const double d = differenceNorm(*snapshot.parameters[i], parameters_[i]);
                squares += d * d;
            }
        const double noise = std::sqrt(squares);
        for (std::size_t i = 0; i < buffers_.size(); ++i)
            if (comparable(*snapshot.buffers[i], buffers_[i]) &&
                !(differenceNorm(*snapshot.buffers[i], buffers_[i]) <= kAmplifiedRoundingFactor * noise))
                bufferBeyondNoise_.insert(root_.buffers[i].name);
    }

    // Across environments, a value no step of the segment changed in the replay (a buffer the
    // program never writes, a parameter whose every update was exactly zero) went through no
    // arithmetic, so no rounding can explain a difference: it is judged bit for bit, with no
    // envelope and no excuse (issue 48, item 10). Returns whether it judged `comparison`.
    bool judgedExactlyUnwritten(TensorComparison& comparison, bool unwritten, const char* what) const
    {
        if (!crossEnvironment() || !unwritten || comparison.metrics.bitwiseEqual || !comparison.note.empty())
            return false;
        comparison.verdict = Verdict::Diverged;
        comparison.note = std::string("no step of the segment changed this ") + what +
                          " in the replay, so no rounding explains a difference: judged bit for bit";
        return true;
    }

    RootRecord root_;
    c10::Device device_;
    Tolerance tolerance_;
    Tolerance noiseTolerance_;  // its envelope decides which gradients are rounding noise
    torch::jit::Module module_;
    std::unique_ptr<GraphInterpreter> graph_;  // instead of module_, for an exported-graph program
    std::vector<at::Tensor> parameters_;  // layout order, the module's own tensors
    std::vector<at::Tensor> buffers_;
    std::vector<std::size_t> groupOf_;
    std::unique_ptr<optim::OptimizerBridge> bridge_;
    optim::TorchRelease recordingRelease_;
    std::string transformsNote_;  // the replayed transaction's gradient transforms, for its detail
    std::unique_ptr<schedule::ScheduleFollower> schedule_;  // when the root schedules options
    std::unique_ptr<GradScalerFollower> scaler_;            // when the root declares a GradScaler
    struct SlotSpec {
        c10::Device device;
        at::ScalarType type;
        std::vector<std::int64_t> shape;
    };
    std::vector<std::map<std::string, SlotSpec>> slotSpecs_;  // per parameter, the slots initialize() gives
    std::set<std::string> numberSlots_;
    std::vector<optim::SlotState> state_;
    std::map<std::string, DType> numberEncoding_;   // the tape's dtype of each number slot the segment's snapshot holds
    bool batchNotCommitted_ = false;                // this transaction's batch is not its committed samples
    std::string releaseMismatch_;                   // says which releases, when the tape's torch is not this libtorch's
    bool recordedReleaseIsProven_ = false;          // the tape names a release the contracts are proven for
    bool segmentAutocast_ = false;                  // a step of this segment ran under autocast (as recorded)
    std::string segmentAutocastText_;               // ... which, in words
    bool capture_ = false;  // the transaction being replayed sends its values back (ReplaySegment::capture)
    bool trace_ = false;    // ... and every operator it calls, with the outputs (ReplaySegment::trace)
    Verdict segmentWorst_ = Verdict::Exact;         // the worst verdict of the segment's transactions so far
    std::optional<std::uint64_t> firstDiverged_;    // the segment's first diverged transaction
    RegimeChoice regime_;                           // the tape's numerical environment against this worker's
    double segmentUpdate_ = 0.0;                    // cross-environment: the sum of the model's update norms in the segment so far
    double segmentBufferChange_ = 0.0;              // ... and of the float buffers' changes
    std::vector<bool> parameterMoved_;              // cross-environment: a step of the segment changed it in the replay
    std::vector<bool> bufferWritten_;               // ... and this float buffer
    // At the last snapshot compared: the buffers no noise gradient explains (a cache of
    // compareSnapshot's, which is const, for excuseNoiseGradients).
    mutable std::set<std::string> bufferBeyondNoise_;
    std::map<std::string, double> noiseGradients_;  // cross-environment: the segment's parameters with a gradient of rounding noise

    const ReplaySegment* segment_ = nullptr;           // the segment being replayed
    RecordSource* records_ = nullptr;                  // ... and its records
    StepValues step_;                                  // the primary replay's transaction's values
    StepValues* values_ = nullptr;                     // where the transaction being replayed puts its values
    mutable std::map<std::string, double> acrossDifferences_;  // the transaction's comparisons outside the envelope: their difference norms
    std::optional<Shadow> shadows_[2];                 // the segment's shadow replays, once needed
    Shadow* shadowing_ = nullptr;                      // the shadow replayTransaction runs: it compares nothing that counts
    int primaryThreads_ = 1;
};

}  // namespace

std::unique_ptr<SegmentExecutor> SegmentExecutor::create(const ExecutorSetup& setup)
{
    try {
        return std::make_unique<TorchSegmentExecutor>(setup);
    } catch (const Error&) {
        throw;
    } catch (const std::exception& error) {
        throw Error(std::string("the sealed program cannot be loaded for replay on ") + setup.device + ": " + error.what());
    }
}

void prepareDeterministicReplay()
{
    // cuBLAS is deterministic only with a fixed workspace; it must be set before CUDA starts.
    // A job's profile (workerDeterminism) then sets the rest, and may name another workspace.
    setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", 0);
    at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
    at::globalContext().setBenchmarkCuDNN(false);
    at::globalContext().setDeterministicCuDNN(true);
}

}  // namespace zkdv
