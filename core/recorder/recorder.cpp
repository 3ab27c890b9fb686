#include "zkdv/recorder/recorder.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <future>

#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/autograd.h>

#include "background_writer.h"
#include "resume_point.h"
#include "snapshot_pool.h"
#include "tensor_watch.h"
#include "zkdv/audit/grad_scaler_follower.h"
#include "zkdv/program/graph_interpreter.h"
#include "zkdv/program/sealed_program.h"
#include "zkdv/provenance/dataset_commitment.h"
#include "zkdv/provenance/model_signing_bundle.h"
#include "zkdv/optim/gradient_clipping.h"
#include "zkdv/optim/torch_release.h"
#include "zkdv/schedule/schedule_follower.h"
#include "zkdv/tape/dataset_samples.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/sampling_schedule.h"
#include "zkdv/tape/scheduled_option.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tape/state_digest.h"
#include "zkdv/tape/tape_writer.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/tensor/autocast_scope.h"
#include "zkdv/tensor/scaled_loss.h"
#include "zkdv/tensor/determinism_probe.h"
#include "zkdv/tensor/torch_build.h"
#include "zkdv/tensor/torch_tensors.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/merkle_tree.h"
#include "zkdv/util/small_file.h"
#include "zkdv/version.h"

namespace zkdv {

namespace {

std::vector<std::int64_t> shapeOf(const at::Tensor& tensor) { return tensor.sizes().vec(); }

// A tensor as the tape stores it: on the host, contiguous.
// One copy, whatever the tensor: a CPU (or pinned) tensor is cloned, a device tensor copied to
// the host into a fresh contiguous tensor (to() then clone() would copy it twice).
at::Tensor hostCopy(const at::Tensor& tensor)
{
    const at::Tensor value = tensor.detach();
    if (value.device().is_cpu())
        return value.clone(at::MemoryFormat::Contiguous);
    return value.to(value.options().device(at::kCPU), /*non_blocking=*/false, /*copy=*/true, at::MemoryFormat::Contiguous);
}

// The full state in canonical order (spec section 6): names and tensors side by side.
struct CanonicalState {
    std::vector<std::string> names;
    std::vector<at::Tensor> tensors;
};

// What a replay of an unrecorded change would call it, said once for every refusal.
constexpr const char* kDivergedOtherwise = "a replay would find the transaction diverged, as if tampered with";


}  // namespace

// ---------------------------------------------------------------- PreparedModel

PreparedModel::PreparedModel(torch::jit::Module module) : module_(std::move(module))
{
    for (const auto& p : module_.named_parameters(true))
        parameterNames_.push_back(p.name);
    for (const auto& b : module_.named_buffers(true))
        bufferNames_.push_back(b.name);
}

PreparedModel::PreparedModel(ExportedModel model)
    : parameterNames_(std::move(model.parameterNames)), bufferNames_(std::move(model.bufferNames)), program_(std::move(model.program)),
      parameters_(std::move(model.parameters)), buffers_(std::move(model.buffers))
{
    if (parameters_.size() != parameterNames_.size() || buffers_.size() != bufferNames_.size())
        throw RecorderError("an exported model names as many tensors as it holds");
    auto specs = [](const std::vector<std::string>& names, const std::vector<at::Tensor>& tensors) {
        std::vector<TensorSpec> out;
        for (std::size_t i = 0; i < names.size(); ++i)
            out.push_back({names[i], tensors[i].sizes().vec(), dtypeOf(tensors[i].scalar_type())});
        return out;
    };
    interpreter_ = std::make_shared<GraphInterpreter>(ExportedGraph::parse(ByteSpan(program_)));
    interpreter_->bind(specs(parameterNames_, parameters_), parameters_, specs(bufferNames_, buffers_), buffers_);
}

std::vector<at::Tensor> PreparedModel::parameters() const
{
    if (interpreter_)
        return parameters_;
    std::vector<at::Tensor> result;
    for (const auto& p : module_.named_parameters(true))
        result.push_back(p.value);
    return result;
}

std::vector<at::Tensor> PreparedModel::buffers() const
{
    if (interpreter_)
        return buffers_;
    std::vector<at::Tensor> result;
    for (const auto& b : module_.named_buffers(true))
        result.push_back(b.value);
    return result;
}

// ---------------------------------------------------------------- Recorder::Impl

struct Recorder::Impl {
    std::string path;
    RecorderOptions config;
    std::unique_ptr<TapeWriter> writer;
    SnapshotPool pool;
    std::unique_ptr<BackgroundWriter> background;
    optim::ContractRegistry registry;
    std::unique_ptr<PreparedModel> model;
    std::unique_ptr<PreparedOptimizer> optimizer;
    std::unique_ptr<optim::OptimizerBridge> bridge;
    std::vector<optim::SlotState> state;
    std::optional<OptimizerSchedule> schedule;
    std::uint64_t scheduleEpoch = 0;
    // The declared scheduler's schedule, followed as the auditor will: a step off it is refused
    // before it is taken, so an honest tape never replays diverged there.
    std::unique_ptr<schedule::ScheduleFollower> scheduleFollower;
    // What a metric-reading scheduler's steps since the last optimizer step read and left.
    schedule::SchedulerInputs scheduleInputs;
    // The declared GradScaler, whose state each transaction uses as the rule moves it.
    std::optional<GradScalerDeclaration> gradScaler;
    std::unique_ptr<GradScalerFollower> scalerFollower;
    bool unscaled = false;  // the open transaction's gradients were unscaled
    bool foundInf = false;  // and held an inf or NaN, so GradScaler skips its step
    bool skipped = false;   // the last step was skipped
    std::optional<SamplingSchedule> sampling;
    // The digest of the last transaction record (the root record before the first), which
    // keys the next transaction's draws (spec 5.2); set by the background writer.
    std::shared_future<Digest> samplingAnchor;
    bool started = false;
    bool sealed = false;
    std::string brokenBy;  // why an optimizer step failed half-way, ending the tape

    bool open = false;
    bool committed = false;
    // The open transaction's micro-batches (one, or several whose gradients accumulate: spec
    // 5.4), how many the sealed program ran on and how many of their losses were differentiated.
    std::vector<std::vector<at::Tensor>> microBatches;
    std::size_t forwards = 0;
    std::size_t backwards = 0;
    std::vector<at::Tensor> losses;   // the sealed program's loss of each micro-batch that ran
    std::vector<LossScale> scales;    // how each differentiated loss was scaled
    AutocastSetting autocast;         // what the transaction's forwards ran under
    // Marks of what the tape describes, taken where the transaction defines them (docs/recorder.md,
    // "Unrecorded changes"): parameters, buffers and optimizer slots as the last step (or the first
    // snapshot) left them; buffers as the program left them; the batch as the program read it; the
    // gradients as the recorded backward left them.
    TensorWatch recordedParameters, recordedBuffers, recordedSlots, forwardBuffers, forwardBatch, backwardGradients;
    std::vector<at::Tensor> batch;  // the micro-batch the next (or last) forward runs on
    // The open transaction's gradient transforms, in order, and their total norms (host copies;
    // undefined for clip_grad_value_).
    std::vector<GradientTransform> gradientTransforms;
    std::vector<at::Tensor> totalNorms;
    std::chrono::steady_clock::time_point startedAt;

    std::uint64_t transactions = 0;
    std::uint64_t snapshots = 0;
    std::uint64_t aborted = 0;
    std::optional<ResumePoint> resumePoint;  // the tape this one continues
    std::shared_ptr<const SigningKey> signingKey;  // signs the seal (spec 7.1); null: unsigned
    // The samples the batches are drawn from (spec 5.7), and the open transaction's: their
    // indices per micro-batch and their proofs' siblings laid end to end.
    std::shared_ptr<const DatasetCommitment> dataset;
    std::shared_ptr<const MerkleTree> datasetTree;
    std::vector<std::vector<std::uint64_t>> samples;
    std::vector<Digest> sampleSiblings;

    Impl(const std::string& p, RecorderOptions c)
        : path(p), config(std::move(c)),
          writer(std::make_unique<TapeWriter>(p, config.overwrite ? TapeWriter::OpenMode::Overwrite : TapeWriter::OpenMode::CreateNew)),
          pool(static_cast<std::size_t>(config.maxInFlight)),
          background(std::make_unique<BackgroundWriter>(*writer, static_cast<std::size_t>(config.maxInFlight)))
    {
    }

    CanonicalState canonicalState() const
    {
        CanonicalState canonical;
        const std::vector<at::Tensor> parameters = model->parameters(), buffers = model->buffers();
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            canonical.names.push_back(parameterTensorName(model->parameterNames()[i]));
            canonical.tensors.push_back(parameters[i].detach());
        }
        for (std::size_t i = 0; i < buffers.size(); ++i) {
            canonical.names.push_back(bufferTensorName(model->bufferNames()[i]));
            canonical.tensors.push_back(buffers[i].detach());
        }
        for (std::size_t i = 0; i < state.size(); ++i)
            for (const auto& [slot, tensor] : state[i]) {
                canonical.names.push_back(stateTensorName(model->parameterNames()[i], slot));
                canonical.tensors.push_back(tensor.detach());
            }
        return canonical;
    }

    // The state digest (spec section 8) of the state the model and optimizer hold now.
    Digest stateDigest() const
    {
        StateDigest state;
        CanonicalState canonical = canonicalState();
        for (std::size_t i = 0; i < canonical.names.size(); ++i) {
            at::Tensor host = hostCopy(canonical.tensors[i]);
            state.add(canonical.names[i], dtypeOf(host.scalar_type()), shapeOf(host), tensorBytes(host));
        }
        return state.finish();
    }

    std::vector<at::Tensor> gradients() const
    {
        std::vector<at::Tensor> result;
        for (const at::Tensor& p : model->parameters())
            result.push_back(p.grad());
        return result;
    }

    std::vector<at::Tensor> slots() const
    {
        std::vector<at::Tensor> result;
        for (const optim::SlotState& slotState : state)
            for (const auto& entry : slotState)
                result.push_back(entry.second);
        return result;
    }

    std::vector<std::string> slotNames() const
    {
        std::vector<std::string> result;
        for (std::size_t i = 0; i < state.size(); ++i)
            for (const auto& entry : state[i])
                result.push_back(model->parameterNames()[i] + "." + entry.first);
        return result;
    }

    std::string current() const { return "transaction " + std::to_string(transactions); }
    std::string lastRecorded() const { return transactions == 0 ? "the first snapshot" : "the optimizer step of transaction " + std::to_string(transactions - 1); }

    void markRecordedState()
    {
        recordedParameters.mark(model->parameters());
        recordedBuffers.mark(model->buffers());
        recordedSlots.mark(slots());
    }

    // A change of the state the tape describes leaves a model the tape cannot reach: the
    // recorder takes no further transaction, and the tape stays valid up to the last one.
    [[noreturn]] void endTape(const std::string& reason)
    {
        const std::string ends = transactions == 0 ? "this tape ends before its first transaction" : "this tape ends at transaction " + std::to_string(transactions - 1);
        brokenBy = reason + "; " + ends + ": create a new proof";
        persistRecorded();
        throw RecorderError(brokenBy);
    }

    // What was recorded before the tape ended is on disk when the training loop hears of the
    // end, so the promised "readable up to that transaction" holds even if the process dies next.
    void persistRecorded() noexcept
    {
        try {
            background->drain();
            writer->flush();
        } catch (...) {
            // A failing write was already reported to the training loop by the call that met it.
        }
    }

    // Parameters, buffers and optimizer slots against the recorded marks; `contents` also reads
    // the parameters' and slots' values (buffers, small, always). Once the program ran, the
    // buffers are its own until the step: `buffers` false leaves them to the forward's mark.
    void checkRecordedState(bool contents, const std::string& where, bool buffers = true)
    {
        const std::vector<at::Tensor> parameters = model->parameters();
        if (auto change = recordedParameters.firstChange(parameters, contents))
            endTape("parameter " + model->parameterNames()[change->index] + " " + change->how + " " + where +
                    ", outside the prepared optimizer (a step of the raw torch.optim optimizer instead of the one proof.prepare() returned, a "
                    "write to param.data, an in-place change under torch.no_grad()): the tape cannot describe it, and " + kDivergedOtherwise +
                    "; change parameters only through the prepared optimizer's step");
        if (auto change = buffers ? recordedBuffers.firstChange(model->buffers(), true) : std::nullopt)
            endTape("buffer " + model->bufferNames()[change->index] + " " + change->how + " " + where +
                    ", outside the sealed program: the tape cannot describe it, and " + kDivergedOtherwise +
                    "; let only the model's forward change its buffers");
        if (auto change = recordedSlots.firstChange(slots(), contents))
            endTape("optimizer state " + slotNames()[change->index] + " " + change->how + " " + where +
                    ", outside the prepared optimizer's step: the tape cannot describe it, and " + kDivergedOtherwise +
                    "; leave optimizer.state to the prepared optimizer");
    }

    // The replay differentiates every prepared parameter; a frozen one would be trained there.
    void requireGradients() const
    {
        const std::vector<at::Tensor> parameters = model->parameters();
        for (std::size_t i = 0; i < parameters.size(); ++i)
            if (!parameters[i].requires_grad())
                throw RecorderError("parameter " + model->parameterNames()[i] + " has requires_grad=False in " + current() +
                                    ", but the sealed program differentiates every prepared parameter and the replay would train it (" +
                                    kDivergedOtherwise + "): keep requires_grad=True, and freeze a parameter with a parameter group of lr 0");
    }

    void beforeForward()
    {
        if (!open)
            throw RecorderError("forward() runs inside a transaction; open one with transaction(batch)");
        if (forwards == microBatches.size())
            throw RecorderError(microBatches.size() == 1
                                    ? "proof.forward() runs the sealed program once per transaction, and " + current() +
                                          " already ran it: a second run would change the buffers twice where the replay changes them once "
                                          "(for gradient accumulation, give the transaction a list of micro-batches)"
                                    : "proof.forward() runs the sealed program once per micro-batch, and " + current() + " already ran all " +
                                          std::to_string(microBatches.size()) + " of its micro-batches");
        if (forwards > backwards)
            throw RecorderError("proof.forward() on micro-batch " + std::to_string(forwards) + " of " + current() + " before proof.backward() of micro-batch " +
                                std::to_string(forwards - 1) + ": the replay differentiates each micro-batch's loss before the next forward");
        // The forward's autocast is recorded and the replay runs it again (spec 5.5); one
        // setting for all of a transaction's forwards.
        const AutocastSetting setting = currentAutocast();
        const std::string problem = autocastProblem(setting);
        if (!problem.empty())
            throw RecorderError(problem + "; " + current() + " runs its forward under it, which the replay would not apply (" + kDivergedOtherwise +
                                "): run proof.forward() under torch.autocast(\"cpu\") or (\"cuda\") with bfloat16 or float16, or without autocast");
        if (forwards > 0 && setting != autocast)
            throw RecorderError("micro-batch " + std::to_string(forwards) + " of " + current() + " runs its forward " +
                                (setting.empty() ? std::string("without autocast") : "under " + describeAutocast(setting)) + ", micro-batch 0 " +
                                (autocast.empty() ? std::string("without") : "under " + describeAutocast(autocast)) +
                                ": a transaction records one autocast for all its forwards");
        requireGradients();
        if (forwards == 0) {
            checkRecordedState(false, "between " + lastRecorded() + " and the forward of " + current());
            forwardBatch.mark(allBatchTensors());
        } else {
            // The buffers are the previous forward's; parameters and slots still the last step's.
            const std::string where = "between the forwards of micro-batches " + std::to_string(forwards - 1) + " and " + std::to_string(forwards) +
                                      " of " + current();
            checkRecordedState(false, where, false);
            if (auto change = forwardBuffers.firstChange(model->buffers(), true))
                endTape("buffer " + model->bufferNames()[change->index] + " " + change->how + " " + where +
                        ", outside the sealed program: the tape cannot describe it, and " + kDivergedOtherwise +
                        "; let only the model's forward change its buffers");
        }
        batch = microBatches[forwards];
        if (forwards == 0)
            autocast = setting;
    }

    void afterForward(const at::Tensor& loss)
    {
        forwardBuffers.mark(model->buffers());
        losses.push_back(loss.detach());
        ++forwards;
    }

    // Every micro-batch's tensors, in order (what the batch watch marked).
    std::vector<at::Tensor> allBatchTensors() const
    {
        std::vector<at::Tensor> all;
        for (const std::vector<at::Tensor>& micro : microBatches)
            all.insert(all.end(), micro.begin(), micro.end());
        return all;
    }

    // The determinism profile in force for this training (spec 3.5), after putting torch's
    // deterministic settings in force on CUDA unless the trainer asked to keep theirs.
    DeterminismProfile determinismProfile(const std::string& device)
    {
        bool setHere = false;
        if (device.rfind("cuda", 0) == 0 && config.deterministicOnCuda) {
            const std::string changed = applyDeterministicTraining();
            setHere = true;
            if (!changed.empty())
                std::fprintf(stderr,
                             "zkdv: training on %s with torch's deterministic settings, so that a replay on this kind of GPU "
                             "reproduces every step: set %s (deterministicOnCuda = false, or ZKDVConfig(deterministic=False), keeps yours)\n",
                             device.c_str(), changed.c_str());
        }
        DeterminismProfile profile = currentDeterminismProfile(device);
        profile.setByRecorder = setHere;
        // torch.optim's resolution of `foreach` and `fused` (_default_to_fused_or_foreach): an
        // explicit value holds; left to torch, foreach runs for parameters on CUDA, fused never.
        for (const optim::BoundGroup& group : bridge->groups()) {
            auto resolve = [&](const char* key, bool byDefault, std::optional<bool>& out) {
                auto it = group.options.find(key);
                if (it == group.options.end())
                    return;
                const bool used = it->is_boolean() ? it->get<bool>() : byDefault;
                out = out.value_or(false) || used;
            };
            resolve("fused", false, profile.optimizerFused);
            const auto flag = group.options.find("differentiable");
            const bool differentiable = flag != group.options.end() && flag->is_boolean() && flag->get<bool>();
            resolve("foreach", profile.deviceKind == "cuda" && !differentiable && !profile.optimizerFused.value_or(false), profile.optimizerForeach);
        }
        return profile;
    }

    void start()
    {
        at::NoGradGuard noGrad;
        SealedProgram program;
        if (model->exported()) {
            program.bytes = model->program_;
            program.sha256 = Sha256::of(ByteSpan(program.bytes));
        } else {
            program = sealProgram(model->module());
        }
        const std::vector<at::Tensor> parameters = model->parameters(), buffers = model->buffers();
        state = startingState(parameters);
        RootRecord root;
        root.producerName = config.producerName;
        root.producerVersion = kVersion;
        root.torchVersion = libtorchVersion();
        root.device = parameters.empty() ? "cpu" : parameters.front().device().str();
        root.intraOpThreads = currentIntraOpThreads();
        root.numerics = numericEnvironment();
        root.determinism = determinismProfile(root.device);
        for (std::size_t i = 0; i < parameters.size(); ++i)
            root.parameters.push_back({model->parameterNames()[i], shapeOf(parameters[i]), dtypeOf(parameters[i].scalar_type())});
        for (std::size_t i = 0; i < buffers.size(); ++i)
            root.buffers.push_back({model->bufferNames()[i], shapeOf(buffers[i]), dtypeOf(buffers[i].scalar_type())});
        root.optimizerContract = bridge->contract().name();
        for (const optim::BoundGroup& group : bridge->groups()) {
            OptimizerGroup written;
            for (std::size_t position : group.positions)
                written.parameters.push_back(model->parameterNames()[position]);
            written.optionsJson = group.options.dump();
            root.optimizerGroups.push_back(std::move(written));
        }
        root.optimizerSchedule = schedule;
        root.gradScaler = gradScaler;
        root.programKind = model->exported() ? kExportedGraphKind : "torchscript";
        root.programSha256 = program.sha256;
        root.programEmbedded = config.embedProgram;
        root.snapshotInterval = config.replaySnapshotInterval;
        root.stateCheckProbability = config.stateCheckProbability;
        root.updateCheckProbability = config.updateCheckProbability;
        root.samplingSeed = config.samplingSeed;
        root.maxInFlight = config.maxInFlight;
        root.overlap = "unchecked";
        root.metadataJson = config.metadataJson;
        // Always sha256-merkle-v2 (spec 5.7, 1.14): a v1 document (made before 1.14) binds by the
        // counted root of its root and count, which anyone holding those two recomputes.
        if (dataset)
            root.dataset = DatasetDeclaration{MerkleAlgorithm::V2, datasetTree->publishedRoot(MerkleAlgorithm::V2),
                                              static_cast<std::uint64_t>(dataset->files.size())};
        if (resumePoint) {
            const CanonicalState canonical = canonicalState();
            root.resumes = resumePoint->continueWith(root, canonical.names, canonical.tensors);
        }
        // Validate what we are about to write with the reader's own rules.
        const std::string rootJson = root.toJson();
        const RootRecord written = RootRecord::parse(ByteSpan(std::string_view(rootJson)));
        if (written.optimizerSchedule && written.optimizerSchedule->checked()) {
            const optim::TorchRelease release = optim::TorchRelease::ofThisLibtorch();
            scheduleFollower = std::make_unique<schedule::ScheduleFollower>(written, release.major, release.minor);
            scheduleFollower->startAtRoot();
        }

        auto shared = std::make_shared<SealedProgram>(std::move(program));
        const bool embed = config.embedProgram;
        sampling.emplace(root);
        auto rootDigest = std::make_shared<std::promise<Digest>>();
        samplingAnchor = rootDigest->get_future().share();
        background->submit([rootJson, shared, embed, rootDigest](TapeWriter& w) {
            rootDigest->set_value(w.append(tape::RecordType::Root, ByteSpan(std::string_view(rootJson))));
            if (embed)
                w.append(tape::RecordType::Program, ByteSpan(shared->bytes));
        });
        started = true;
        snapshot(0);
        markRecordedState();
    }

    // The optimizer state of snapshot 0: torch's initial state, or, for a resumed run, the
    // state loaded into the optimizer (checked against the tape it continues when the root is
    // written). State a new run's optimizer already holds would be left out of the tape.
    std::vector<optim::SlotState> startingState(const std::vector<at::Tensor>& parameters) const
    {
        std::vector<optim::SlotState> initial = bridge->initialState(parameters);
        const optim::ContractOptimizer& own = optimizer->optimizer();
        bool loaded = false;
        for (std::size_t i = 0; i < parameters.size(); ++i) {
            const optim::SlotState& slots = own.state(parameters[i]);
            if (slots.empty())
                continue;
            if (!resumePoint) {
                for (const auto& [slot, tensor] : slots) {
                    auto same = initial[i].find(slot);
                    if (same == initial[i].end() || !bitwiseEqual(same->second.to(at::kCPU), tensor.detach().to(at::kCPU)))
                        throw RecorderError("the optimizer's state of " + model->parameterNames()[i] + " (" + slot +
                                            ") is not torch's initial state: a new tape starts from fresh optimizer state; to continue the tape "
                                            "its checkpoint was saved with, name that tape (RecorderOptions.resumeFrom, ZKDV(..., resume_from=...))");
                }
                continue;
            }
            initial[i] = optim::cloneState(slots);
            loaded = true;
        }
        if (loaded)
            optim::packState(initial);
        return initial;
    }

    void snapshot(std::uint64_t beforeTransaction)
    {
        CanonicalState canonical = canonicalState();
        auto copy = pool.acquire(canonical.tensors);
        auto names = std::make_shared<std::vector<std::string>>(std::move(canonical.names));
        background->submit([copy, names, beforeTransaction](TapeWriter& w) {
            copy->wait();
            const std::vector<at::Tensor>* buffers = copy->buffers;
            SafetensorsBuilder blob;
            blob.setMetadata("zkdv.record", "snapshot");
            blob.setMetadata("before_transaction", std::to_string(beforeTransaction));
            for (std::size_t i = 0; i < names->size(); ++i) {
                const at::Tensor& tensor = (*buffers)[i];
                blob.add((*names)[i], dtypeOf(tensor.scalar_type()), shapeOf(tensor), tensorBytes(tensor));
            }
            std::vector<std::uint8_t> header;
            w.append(tape::RecordType::Snapshot, blob.pieces(header));
        });
        ++snapshots;
    }

    // The next transaction's draws. They wait for the previous transaction's record to be
    // hashed, which the writer does while this step computes.
    SampledChecks drawSampledChecks()
    {
        Digest anchor;
        try {
            anchor = samplingAnchor.get();
        } catch (const std::future_error&) {
            // The writer failed before it wrote that record: report its error, not ours.
            background->drain();
            throw;
        }
        return sampling->next(anchor);
    }
};

// ---------------------------------------------------------------- Recorder

Recorder::Recorder(const std::string& path, RecorderOptions config)
{
    if (config.maxInFlight < 1)
        throw RecorderError("max_in_flight must be at least 1");
    if (config.replaySnapshotInterval < 1)
        throw RecorderError("replay_snapshot_interval must be at least 1");
    if (!(config.stateCheckProbability >= 0 && config.stateCheckProbability <= 1 && config.updateCheckProbability >= 0 &&
          config.updateCheckProbability <= 1))
        throw RecorderError("sampling probabilities must lie in [0, 1]");
    if (!nlohmann::json::accept(config.metadataJson) || !nlohmann::json::parse(config.metadataJson).is_object())
        throw RecorderError("run metadata must be a JSON object");
    // Read before the file is created, so a resume that cannot work leaves nothing behind.
    std::optional<ResumePoint> resumePoint;
    if (!config.resumeFrom.empty()) {
        std::error_code ignored;
        if (std::filesystem::equivalent(config.resumeFrom, path, ignored))
            throw RecorderError("a resumed tape is a new file: " + path + " is the tape it continues");
        resumePoint = ResumePoint::read(config.resumeFrom);
    }
    // Read before the file is created too: a key that cannot sign is known before training.
    std::shared_ptr<const SigningKey> signingKey;
    if (!config.signingKeyFile.empty()) {
        try {
            signingKey = std::make_shared<const SigningKey>(SigningKey::fromPemFile(config.signingKeyFile));
        } catch (const std::exception& error) {
            throw RecorderError(error.what());
        }
    }
    if (config.detachedSignature) {
        if (!signingKey)
            throw RecorderError("a detached signature needs a signing key: set the signing key file as well");
        std::error_code ignored;
        const std::filesystem::path bundle = detachedSignaturePathOf(path);
        if (!config.overwrite && std::filesystem::exists(bundle, ignored))
            throw RecorderError(bundle.string() + " exists (a detached signature of an earlier tape); remove it or allow overwriting");
    }
    std::shared_ptr<const DatasetCommitment> dataset;
    std::shared_ptr<const MerkleTree> datasetTree;
    if (!config.datasetCommitmentFile.empty()) {
        try {
            const std::string text = readSmallFile(config.datasetCommitmentFile, DatasetCommitment::kMaxDocumentBytes, "a dataset commitment");
            dataset = std::make_shared<const DatasetCommitment>(DatasetCommitment::parse(text));
        } catch (const std::exception& error) {
            throw RecorderError(config.datasetCommitmentFile + ": " + error.what());
        }
        if (dataset->unit != DatasetCommitment::kSampleUnit)
            throw RecorderError(config.datasetCommitmentFile + " commits files; batches are bound to a commitment of samples "
                                "(zkdv.dataset.commit_samples, docs/dataset-commitment.md)");
        std::vector<Digest> digests;
        for (const CommittedFile& sample : dataset->files)
            digests.push_back(sample.sha256);
        datasetTree = std::make_shared<const MerkleTree>(digests);
        if (datasetTree->publishedRoot(dataset->algorithm) != dataset->root)
            throw RecorderError(config.datasetCommitmentFile + ": its root is not the root of its leaves (the document was edited)");
    }
    impl_ = std::make_unique<Impl>(path, std::move(config));
    impl_->resumePoint = std::move(resumePoint);
    impl_->signingKey = std::move(signingKey);
    impl_->dataset = std::move(dataset);
    impl_->datasetTree = std::move(datasetTree);
}

Recorder::~Recorder()
{
    try {
        impl_->background->drain();
    } catch (...) {
        // The error was already reported to the training loop by the call that met it.
    }
    impl_->background.reset();
    try {
        impl_->writer->flush();
    } catch (...) {
    }
}

void Recorder::registerFunctionalOptimizer(std::shared_ptr<const optim::OptimizerContract> contract)
{
    impl_->registry.registerContract(std::move(contract));
}

PreparedModel& Recorder::prepare(torch::jit::Module module)
{
    if (impl_->model)
        throw RecorderError("this recorder already prepared a model; a tape records one model");
    checkSealedProgram(module);
    impl_->model.reset(new PreparedModel(std::move(module)));
    return *impl_->model;
}

PreparedOptimizer& Recorder::prepare(optim::ContractOptimizer& optimizer)
{
    if (!impl_->model)
        throw RecorderError("prepare the model before its optimizer, so the optimizer can bind to its parameter order");
    if (impl_->optimizer)
        throw RecorderError("this recorder already prepared an optimizer; a tape records one optimizer");
    auto contract = impl_->registry.resolve(optimizer.contract().name());
    const std::vector<at::Tensor> canonical = impl_->model->parameters();
    std::vector<optim::BoundGroup> groups;
    for (const optim::ParameterGroup& group : optimizer.groups())
        groups.push_back(optim::BoundGroup{optim::bindByIdentity(group.parameters, canonical), group.options});
    impl_->bridge = std::make_unique<optim::OptimizerBridge>(contract, std::move(groups), canonical.size());
    impl_->optimizer.reset(new PreparedOptimizer(*this, optimizer));
    return *impl_->optimizer;
}

void Recorder::schedule(std::vector<std::string> options, std::string schedulerJson, std::uint64_t epoch)
{
    Impl& d = *impl_;
    if (!d.bridge)
        throw RecorderError("prepare the optimizer before its schedule");
    if (d.started)
        throw RecorderError("the tape's root is written: a schedule is declared before the first transaction");
    if (options.empty())
        throw RecorderError("a schedule moves at least one optimizer option");
    if (epoch > tape::kMaxScheduleEpochAdvance)
        throw RecorderError("the scheduler stepped " + std::to_string(epoch) + " times before the first transaction; the tape records at most " +
                            std::to_string(tape::kMaxScheduleEpochAdvance) + ": create the scheduler with the proof");
    for (const std::string& option : options)
        for (std::size_t g = 0; g < d.bridge->groups().size(); ++g) {
            const nlohmann::json* value = scheduledValue(d.bridge->groups()[g].options, option);
            if (!value || !value->is_number())
                throw RecorderError("the schedule moves " + option + ", but parameter group " + std::to_string(g) + " has no numeric " + option);
        }
    if (!schedulerJson.empty()) {
        // The auditor recomputes the schedule from this description: one it cannot take is
        // refused now, not found unverifiable after training.
        const optim::TorchRelease release = optim::TorchRelease::ofThisLibtorch();
        try {
            const auto contract = schedule::makeScheduleContract(parseUntrustedJson(schedulerJson, "scheduler description"),
                                                                 d.bridge->groups().size(), release.major, release.minor);
            if (contract->options() != options)
                throw schedule::ScheduleError(contract->kind() + " moves other options than the ones declared");
        } catch (const Error& error) {
            throw RecorderError(std::string("the scheduler cannot be recorded as a checked schedule: ") + error.what());
        }
    }
    d.bridge->setScheduled(options);
    d.schedule = OptimizerSchedule{std::move(options), std::move(schedulerJson), epoch};
    d.scheduleEpoch = epoch;
}

void Recorder::setScheduleEpoch(std::uint64_t epoch)
{
    Impl& d = *impl_;
    if (!d.schedule || !d.schedule->checked())
        throw RecorderError("this tape's schedule names no scheduler whose epoch it records");
    if (epoch < d.scheduleEpoch || epoch - d.scheduleEpoch > tape::kMaxScheduleEpochAdvance)
        throw RecorderError("the scheduler's epoch went from " + std::to_string(d.scheduleEpoch) + " to " + std::to_string(epoch) +
                            ": the tape records a scheduler stepped forward by scheduler.step() (at most " +
                            std::to_string(tape::kMaxScheduleEpochAdvance) + " steps between optimizer steps), never set back or skipped by "
                            "step(epoch)");
    d.scheduleEpoch = epoch;
}

void Recorder::setScheduleInputs(std::vector<double> metrics, std::vector<double> state)
{
    Impl& d = *impl_;
    if (!d.schedule || !d.schedule->checked())
        throw RecorderError("this tape's schedule names no scheduler whose steps' metrics it records");
    if (metrics.size() > tape::kMaxScheduleEpochAdvance || state.size() > tape::kMaxSchedulerStateValues)
        throw RecorderError("a scheduler's inputs hold at most " + std::to_string(tape::kMaxScheduleEpochAdvance) + " metrics and " +
                            std::to_string(tape::kMaxSchedulerStateValues) + " state values");
    d.scheduleInputs = schedule::SchedulerInputs{std::move(metrics), std::move(state)};
}

Transaction Recorder::transaction(std::vector<at::Tensor> batch, OverlapPolicy overlap)
{
    std::vector<std::vector<at::Tensor>> one;
    one.push_back(std::move(batch));
    return transaction(std::move(one), overlap);
}

Transaction Recorder::transaction(std::vector<std::vector<at::Tensor>> microBatches, OverlapPolicy)
{
    Impl& d = *impl_;
    if (d.open)
        throw RecorderError("nested ZKDV transactions are unsupported");
    if (d.sealed)
        throw RecorderError("the tape is sealed; start a new recorder for more transactions");
    if (!d.brokenBy.empty())
        throw RecorderError(d.brokenBy);
    if (!d.model || !d.bridge)
        throw RecorderError("prepare the model and its optimizer before the first transaction");
    if (microBatches.empty() || microBatches.size() > kMaxMicroBatches)
        throw RecorderError("a transaction holds 1 to " + std::to_string(kMaxMicroBatches) + " micro-batches, not " + std::to_string(microBatches.size()));
    for (const std::vector<at::Tensor>& micro : microBatches) {
        if (micro.size() != microBatches.front().size())
            throw RecorderError("every micro-batch of a transaction holds as many tensors as the first: the sealed step takes batches of one form");
        for (const at::Tensor& tensor : micro)
            if (!tensor.defined())
                throw RecorderError("a transaction's batch holds an undefined tensor");
    }
    if (!d.started)
        d.start();
    d.open = true;
    d.committed = false;
    d.microBatches = std::move(microBatches);
    d.samples.clear();
    d.sampleSiblings.clear();
    d.forwards = 0;
    d.backwards = 0;
    d.losses.clear();
    d.scales.clear();
    d.batch = d.microBatches.front();
    d.gradientTransforms.clear();
    d.totalNorms.clear();
    d.unscaled = false;
    d.foundInf = false;
    d.skipped = false;
    d.startedAt = std::chrono::steady_clock::now();
    return Transaction(this);
}

void Recorder::samples(std::vector<std::vector<std::uint64_t>> indices)
{
    Impl& d = *impl_;
    if (!d.open)
        throw RecorderError("name a batch's samples inside its transaction");
    if (!d.dataset)
        throw RecorderError("this recorder has no dataset commitment to name samples of (RecorderOptions::datasetCommitmentFile)");
    if (indices.size() != d.microBatches.size())
        throw RecorderError("the transaction holds " + std::to_string(d.microBatches.size()) + " micro-batches; name the samples of each (" +
                            std::to_string(indices.size()) + " lists given)");
    const std::uint64_t leaves = d.dataset->files.size();
    std::vector<Digest> siblings;
    for (std::size_t m = 0; m < indices.size(); ++m) {
        std::vector<at::Tensor> host;
        std::vector<TensorView> views;
        for (std::size_t i = 0; i < d.microBatches[m].size(); ++i)
            host.push_back(hostCopy(d.microBatches[m][i]));
        for (std::size_t i = 0; i < host.size(); ++i)
            views.push_back(TensorView{"batch/" + std::to_string(i), dtypeOf(host[i].scalar_type()), shapeOf(host[i]), tensorBytes(host[i])});
        std::vector<const TensorView*> batch;
        for (const TensorView& view : views)
            batch.push_back(&view);
        const std::string where = indices.size() > 1 ? "micro-batch " + std::to_string(m) + ": " : std::string();
        std::uint64_t rows = 0;
        try {
            rows = batchRows(batch);
        } catch (const FormatError& error) {
            throw RecorderError(where + error.what());
        }
        if (indices[m].size() != rows)
            throw RecorderError(where + "the batch holds " + std::to_string(rows) + " rows, and " + std::to_string(indices[m].size()) +
                                " sample indices were named: name one per row");
        for (std::uint64_t row = 0; row < rows; ++row) {
            const std::uint64_t index = indices[m][row];
            if (index >= leaves)
                throw RecorderError(where + "row " + std::to_string(row) + " names sample " + std::to_string(index) + ", but the commitment holds " +
                                    std::to_string(leaves) + " samples");
            if (sampleDigest(batch, row) != d.dataset->files[index].sha256)
                throw RecorderError(where + "row " + std::to_string(row) + " of the batch is not committed sample " + std::to_string(index) +
                                    " (its zkdv-sample-v1 digest differs from the commitment's): the loader, its transforms or the indices "
                                    "are not those the commitment was made with");
            const MerkleProof proof = d.datasetTree->proof(index);
            siblings.insert(siblings.end(), proof.siblings.begin(), proof.siblings.end());
        }
    }
    d.samples = std::move(indices);
    d.sampleSiblings = std::move(siblings);
}

at::Tensor Recorder::forward(const torch::jit::Module& model)
{
    Impl& d = *impl_;
    if (!d.model || model._ivalue() != d.model->module()._ivalue())
        throw RecorderError("proof.forward() received an unprepared model; pass it through proof.prepare() first");
    d.beforeForward();
    c10::List<at::Tensor> batch;
    for (const at::Tensor& tensor : d.batch)
        batch.push_back(tensor);
    at::Tensor loss = runTrainingStep(d.model->module(), batch);
    d.afterForward(loss);
    return loss;
}

PreparedModel& Recorder::prepare(ExportedModel model)
{
    if (impl_->model)
        throw RecorderError("this recorder already prepared a model; a tape records one model");
    impl_->model.reset(new PreparedModel(std::move(model)));
    return *impl_->model;
}

std::vector<at::Tensor> Recorder::forwardExported()
{
    Impl& d = *impl_;
    if (!d.model || !d.model->exported())
        throw RecorderError("forwardExported() runs an exported-graph step; prepare one with prepare(ExportedModel)");
    d.beforeForward();
    std::vector<at::Tensor> outputs = d.model->interpreter_->run(d.batch);
    d.afterForward(outputs.front());
    return outputs;
}

void Recorder::backward(const at::Tensor& loss, LossScale scale)
{
    Impl& d = *impl_;
    if (d.gradScaler && d.open) {
        const float by = gradScalerState().scale;
        const int major = optim::TorchRelease::ofThisLibtorch().major;
        backward([&loss, &scale, by, major] { torch::autograd::backward({gradScaledLoss(scaledLoss(loss, scale), by, major)}); }, scale, true);
        return;
    }
    backward([&loss, &scale] { torch::autograd::backward({scaledLoss(loss, scale)}); }, scale);
}

void Recorder::backward(const std::function<void()>& differentiate, LossScale scale, bool gradScaled)
{
    Impl& d = *impl_;
    if (!d.open) {
        differentiate();
        return;
    }
    if (d.gradScaler && !gradScaled)
        throw RecorderError("proof.backward() of a loss the GradScaler did not scale in " + d.current() +
                            ": the tape declares a GradScaler, whose scale multiplies every loss before its backward pass (the replay "
                            "multiplies it too, and unscales the gradients); differentiate scaler.scale(loss)");
    if (!d.gradScaler && gradScaled)
        throw RecorderError("proof.backward() of a loss scaled by a GradScaler the tape does not declare: prepare the scaler with the optimizer, "
                            "before the first transaction (scaler = proof.prepare(torch.amp.GradScaler(...)))");
    if (d.forwards == 0)
        throw RecorderError("proof.backward() before proof.forward(): compute the loss from proof.forward(model, inputs)");
    if (d.backwards == d.forwards)
        throw RecorderError("proof.backward() twice for micro-batch " + std::to_string(d.forwards - 1) + " of " + d.current() +
                            " (its loss was differentiated already): the replay differentiates each micro-batch's loss once" +
                            (d.forwards < d.microBatches.size() ? std::string("; run proof.forward() on the next micro-batch first") : std::string()));
    const std::string problem = lossScaleProblem(scale);
    if (!problem.empty())
        throw RecorderError("proof.backward(): " + problem);
    d.requireGradients();
    const std::vector<at::Tensor> gradients = d.gradients();
    if (d.backwards == 0) {
        // The replay computes every transaction's gradients from zero.
        for (std::size_t i = 0; i < gradients.size(); ++i)
            if (gradients[i].defined() &&
                at::count_nonzero(gradients[i].is_sparse() ? gradients[i]._values() : gradients[i]).item<std::int64_t>() != 0)
                throw RecorderError("the gradient of parameter " + d.model->parameterNames()[i] + " is not zero before proof.backward() in " + d.current() +
                                    " (gradients accumulated over earlier transactions?): the replay computes every transaction's gradients from "
                                    "zero, so its step would differ (" + kDivergedOtherwise + "); call optimizer.zero_grad() before proof.backward(), "
                                    "step in every transaction, and accumulate over micro-batches inside one transaction");
    } else if (auto change = d.backwardGradients.firstChange(gradients, true)) {
        // Later micro-batches add to what the earlier ones left.
        throw RecorderError("the gradient of parameter " + d.model->parameterNames()[change->index] + " " + change->how +
                            " between the backward passes of micro-batches " + std::to_string(d.backwards - 1) + " and " + std::to_string(d.backwards) +
                            " of " + d.current() + ": the replay accumulates the gradients the sealed program computes (" + kDivergedOtherwise +
                            "); leave them as proof.backward() left them");
    }
    differentiate();
    d.backwardGradients.mark(d.gradients());
    d.scales.push_back(scale);
    ++d.backwards;
}

at::Tensor Recorder::clipGradNorm(double maxNorm, double normType, bool errorIfNonfinite, std::optional<bool> foreach)
{
    GradientTransform transform;
    transform.kind = GradientTransform::Kind::ClipNorm;
    transform.maxNorm = maxNorm;
    transform.normType = normType;
    transform.errorIfNonfinite = errorIfNonfinite;
    transform.foreach = foreach;
    return transformGradients(transform);
}

void Recorder::clipGradValue(double clipValue, std::optional<bool> foreach)
{
    GradientTransform transform;
    transform.kind = GradientTransform::Kind::ClipValue;
    transform.clipValue = clipValue;
    transform.foreach = foreach;
    transformGradients(transform);
}

at::Tensor Recorder::transformGradients(GradientTransform transform)
{
    Impl& d = *impl_;
    const bool unscale = transform.kind == GradientTransform::Kind::Unscale;
    const std::string name = unscale ? "unscale_" : transform.kind == GradientTransform::Kind::ClipNorm ? "clip_grad_norm_" : "clip_grad_value_";
    const std::string call = (unscale ? "scaler." : "proof.") + name + "()";
    const char* where = unscale ? "unscale between proof.backward() and scaler.step(optimizer)" : "clip between proof.backward() and optimizer.step()";
    if (!d.open)
        throw RecorderError(call + " records a change of the gradients inside a transaction; outside one, call " +
                            (unscale ? std::string("the GradScaler's own") : "torch.nn.utils." + name) + " itself");
    if (d.committed)
        throw RecorderError(call + " after optimizer.step() in " + d.current() + ": the step took the gradients already; " + where);
    if (d.backwards == 0)
        throw RecorderError(call + " before proof.backward() in " + d.current() + ": there are no gradients of the recorded loss yet; " + where);
    if (d.backwards < d.microBatches.size())
        throw RecorderError(call + " after " + std::to_string(d.backwards) + " of the " + std::to_string(d.microBatches.size()) + " micro-batches of " +
                            d.current() + ": it changes the accumulated gradients, after the last micro-batch's proof.backward()");
    const std::string problem = gradientTransformProblem(transform);
    if (!problem.empty())
        throw RecorderError(call + ": " + problem);
    if (d.gradientTransforms.size() >= kMaxGradientTransforms)
        throw RecorderError("a transaction records at most " + std::to_string(kMaxGradientTransforms) + " gradient transforms; " + d.current() +
                            " already holds that many");
    d.requireGradients();
    if (auto change = d.backwardGradients.firstChange(d.gradients(), true))
        throw RecorderError("the gradient of parameter " + d.model->parameterNames()[change->index] + " " + change->how + " before " + call +
                            " in " + d.current() + ", outside the recorded step: the replay transforms the gradients the sealed program computes (" +
                            kDivergedOtherwise + "); leave the gradients as proof.backward() left them");
    const optim::TorchRelease release = optim::TorchRelease::ofThisLibtorch();
    const std::vector<at::Tensor> gradients = d.gradients();
    if (!unscale)
        transform.foreach = optim::resolveForeach(transform.foreach, gradients, release);
    at::Tensor total;
    try {
        total = optim::applyGradientTransform(transform, gradients, release);
    } catch (const RecorderError&) {
        throw;
    } catch (const std::exception& error) {
        // torch raises before it scales anything (a non-finite norm under error_if_nonfinite):
        // the gradients are as the backward left them and the transaction goes on.
        throw RecorderError(std::string(error.what()) + " in " + d.current());
    }
    d.backwardGradients.mark(d.gradients());
    d.gradientTransforms.push_back(transform);
    d.totalNorms.push_back(total.defined() && transform.kind == GradientTransform::Kind::ClipNorm ? hostCopy(total) : at::Tensor());
    return total;
}

void Recorder::declareGradScaler(GradScalerDeclaration declaration)
{
    Impl& d = *impl_;
    if (!d.bridge)
        throw RecorderError("prepare the optimizer before its GradScaler");
    if (d.started)
        throw RecorderError("the tape's root is written: a GradScaler is prepared before the first transaction");
    if (d.gradScaler)
        throw RecorderError("this recorder already declared a GradScaler; a tape records one");
    std::string problem = gradScalerRuleProblem(declaration.rule);
    if (problem.empty())
        problem = gradScalerStateProblem(declaration.initial, declaration.rule);
    if (!problem.empty())
        throw RecorderError("the GradScaler cannot be recorded: " + problem);
    d.gradScaler = declaration;
    d.scalerFollower = std::make_unique<GradScalerFollower>(declaration);
}

GradScalerState Recorder::gradScalerState() const
{
    if (!impl_->scalerFollower)
        throw RecorderError("this recorder declares no GradScaler");
    return impl_->scalerFollower->expected();
}

void Recorder::checkGradScalerState(const GradScalerState& state) const
{
    const Impl& d = *impl_;
    if (!d.scalerFollower)
        throw RecorderError("this recorder declares no GradScaler");
    const TensorComparison comparison = d.scalerFollower->judge(state);
    if (comparison.verdict != Verdict::Exact)
        throw RecorderError("the GradScaler's state is not the one its rule gives in " + d.current() + " (" + comparison.note +
                            "): the auditor follows the rule from step to step and would find this step diverged, so it is refused; call "
                            "scaler.update() once after every scaler.step(optimizer), without new_scale, and change the scale only through the "
                            "scaler's constructor");
}

bool Recorder::unscaleGradients()
{
    Impl& d = *impl_;
    if (!d.gradScaler)
        throw RecorderError("scaler.unscale_() inside a transaction needs the GradScaler prepared before the first transaction");
    if (d.unscaled)
        throw RecorderError("unscale_() has already been called on this optimizer since the last update() (" + d.current() + ")");
    GradientTransform transform;
    transform.kind = GradientTransform::Kind::Unscale;
    transform.scale = d.scalerFollower->expected().scale;
    const at::Tensor found = transformGradients(transform);
    d.unscaled = true;
    d.foundInf = found.item<float>() != 0.0f;
    return d.foundInf;
}

bool Recorder::stepSkipped() const { return impl_->skipped; }

void Recorder::step(PreparedOptimizer& prepared)
{
    Impl& d = *impl_;
    if (!d.open)
        throw RecorderError("optimizer.step() on a prepared optimizer must run inside a transaction");
    if (d.committed)
        throw RecorderError("a transaction holds one optimizer step; open a new transaction for the next");
    if (d.forwards == 0)
        throw RecorderError("no loss in this transaction: compute it with forward() so the recorded loss is the one trained on");
    if (d.backwards == 0)
        throw RecorderError("no recorded backward in " + d.current() +
                            ": differentiate the loss with proof.backward(loss) between proof.forward() and optimizer.step(), so that the step "
                            "applies the gradients the replay computes");
    if (d.backwards < d.microBatches.size())
        throw RecorderError("optimizer.step() after " + std::to_string(d.backwards) + " of the " + std::to_string(d.microBatches.size()) +
                            " micro-batches of " + d.current() + ": the tape records every micro-batch the transaction was given, and the replay "
                            "accumulates all of them; run proof.forward() and proof.backward() on each before the step");
    if (d.dataset && d.samples.empty())
        throw RecorderError("the recorder binds batches to a dataset commitment: name the samples of this transaction's batch before "
                            "the step (Recorder::samples; Python: proof.transaction(batch=..., samples=...))");
    d.requireGradients();
    // GradScaler.step() unscales the gradients when unscale_() did not, and skips the step
    // when they held an inf or NaN (the transaction is recorded with no update).
    if (d.gradScaler && !d.unscaled)
        unscaleGradients();
    const bool skipped = d.gradScaler && d.foundInf;
    if (auto change = d.backwardGradients.firstChange(d.gradients(), true))
        throw RecorderError("the gradient of parameter " + d.model->parameterNames()[change->index] + " " + change->how +
                            " between proof.backward() and optimizer.step() in " + d.current() +
                            " (gradient clipping, or another change of .grad): the replay steps with the gradients the sealed program computes (" +
                            kDivergedOtherwise + "), so this step is refused and nothing is recorded; clip with proof.clip_grad_norm_() or "
                            "proof.clip_grad_value_(), which the tape records, and otherwise leave the gradients as proof.backward() left them");
    if (auto change = d.forwardBatch.firstChange(d.allBatchTensors(), true))
        throw RecorderError("batch tensor " + std::to_string(change->index) + " " + change->how + " after proof.forward() in " + d.current() +
                            ": the tape would record another batch than the one the step trained on (" + kDivergedOtherwise +
                            "), so this step is refused; change a batch before its transaction, or pass a copy");
    d.checkRecordedState(true, "between " + d.lastRecorded() + " and the optimizer step of " + d.current(), false);
    if (auto change = d.forwardBuffers.firstChange(d.model->buffers(), true))
        d.endTape("buffer " + d.model->bufferNames()[change->index] + " " + change->how + " between proof.forward() and optimizer.step() in " +
                  d.current() + ", outside the sealed program: the tape cannot describe it, and " + kDivergedOtherwise +
                  "; let only the model's forward change its buffers");
    std::vector<optim::GroupOptions> current;
    for (const optim::ParameterGroup& group : prepared.optimizer().groups())
        current.push_back(group.options);
    d.bridge->takeOptions(current);
    schedule::ScheduledValues scheduledValues;
    if (d.scheduleFollower) {
        for (const std::string& option : d.schedule->options) {
            std::vector<double> perGroup;
            for (const optim::BoundGroup& group : d.bridge->groups())
                perGroup.push_back(scheduledValue(group.options, option)->get<double>());  // takeOptions took numbers only
            scheduledValues.push_back(std::move(perGroup));
        }
        for (const TensorComparison& comparison : d.scheduleFollower->judge(d.scheduleEpoch, scheduledValues, d.scheduleInputs))
            if (!passes(comparison.verdict))
                throw RecorderError("the optimizer options of this step are not the prepared scheduler's (" + comparison.note + ") in " +
                                    d.current() + ": the tape declares that scheduler's schedule, and an auditor recomputing it would find "
                                    "this step diverged, so it is refused and nothing is recorded; leave the options to the scheduler, or "
                                    "prepare a LambdaLR for a rule of your own (its values are recorded as they are)");
    }

    at::NoGradGuard noGrad;
    std::vector<at::Tensor> parameters = d.model->parameters(), detached, gradients;
    for (const at::Tensor& p : parameters) {
        detached.push_back(p.detach());
        gradients.push_back(p.grad());
    }
    std::vector<at::Tensor> deltas;
    try {
        if (skipped)
            for (const at::Tensor& p : detached)
                deltas.push_back(at::zeros_like(p));
        else
            deltas = d.bridge->stepInPlace(detached, d.state, gradients);
    } catch (const std::exception& error) {
        // Groups before the failing one may be stepped already: what the model holds now is
        // no state the tape can describe, so this recorder takes no further transactions.
        d.brokenBy = "an optimizer step of this recorder failed half-way (" + std::string(error.what()) + "); create a new proof";
        d.persistRecorded();
        throw RecorderError(std::string(error.what()) + "; the optimizer step may have updated some parameter groups, so this tape ends here: "
                            "create a new proof");
    }
    if (d.scheduleFollower)
        d.scheduleFollower->advance(d.scheduleEpoch, std::move(scheduledValues), d.scheduleInputs.state);
    std::optional<GradScalerStep> scalerStep;
    if (d.scalerFollower) {
        scalerStep = GradScalerStep{d.scalerFollower->expected(), skipped};
        d.scalerFollower->advance(*scalerStep);
    }
    d.skipped = skipped;
    // What the step left is what the tape describes from here on (a failing write after this
    // point is the writer's error, never a change outside the step).
    d.recordedParameters.mark(parameters);
    d.recordedSlots.mark(d.slots());
    d.recordedBuffers = d.forwardBuffers;  // the step leaves buffers as the program did

    const SampledChecks checks = d.drawSampledChecks();
    const bool updateCheck = checks.update;
    const bool stateCheck = checks.state;
    auto l2 = std::make_shared<std::vector<double>>(), maxAbs = std::make_shared<std::vector<double>>();
    for (const at::Tensor& delta : deltas) {
        const UpdateFingerprint fingerprint = updateFingerprint(delta);
        l2->push_back(fingerprint.l2);
        maxAbs->push_back(fingerprint.maxAbs);
    }
    std::optional<Digest> digest;
    if (stateCheck)
        digest = d.stateDigest();

    auto micro = std::make_shared<std::vector<std::pair<at::Tensor, std::vector<at::Tensor>>>>();
    for (std::size_t m = 0; m < d.microBatches.size(); ++m) {
        std::vector<at::Tensor> batch;
        for (const at::Tensor& tensor : d.microBatches[m])
            batch.push_back(hostCopy(tensor));
        micro->emplace_back(hostCopy(d.losses[m]), std::move(batch));
    }
    auto sampleIndices = std::make_shared<std::vector<std::vector<std::uint64_t>>>(std::move(d.samples));
    auto sampleSiblings = std::make_shared<std::vector<Digest>>(std::move(d.sampleSiblings));
    d.samples.clear();
    d.sampleSiblings.clear();
    auto scales = std::make_shared<std::vector<LossScale>>(d.scales);
    auto autocast = std::make_shared<AutocastSetting>(d.autocast);
    auto sampledDeltas = std::make_shared<std::vector<at::Tensor>>();
    if (updateCheck)
        for (const at::Tensor& delta : deltas)
            sampledDeltas->push_back(hostCopy(delta));
    auto names = std::make_shared<std::vector<std::string>>(d.model->parameterNames());
    auto options = std::make_shared<std::vector<std::pair<std::string, std::vector<double>>>>();
    std::vector<std::string> recordedOptions = {"lr"};
    if (d.schedule)
        for (const std::string& option : d.schedule->options)
            if (option != "lr")
                recordedOptions.push_back(option);
    for (const std::string& option : recordedOptions) {
        std::vector<double> perGroup;
        for (const optim::BoundGroup& group : d.bridge->groups())
            if (const nlohmann::json* value = scheduledValue(group.options, option); value && value->is_number())
                perGroup.push_back(value->get<double>());
        if (perGroup.size() == d.bridge->groups().size())
            options->emplace_back(option, perGroup);
    }
    auto transforms = std::make_shared<std::vector<GradientTransform>>(std::move(d.gradientTransforms));
    auto totalNorms = std::make_shared<std::vector<at::Tensor>>(std::move(d.totalNorms));
    d.gradientTransforms.clear();
    d.totalNorms.clear();
    const std::uint64_t index = d.transactions;
    const std::optional<std::uint64_t> scheduleEpoch =
        d.schedule && d.schedule->checked() ? std::optional<std::uint64_t>(d.scheduleEpoch) : std::nullopt;
    // The metrics were this step's; the state stays the scheduler's until it steps again.
    auto scheduleInputs = std::make_shared<schedule::SchedulerInputs>(schedule::SchedulerInputs{std::move(d.scheduleInputs.metrics), d.scheduleInputs.state});
    d.scheduleInputs.metrics.clear();
    const auto wallTime = static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - d.startedAt).count());

    auto recordDigest = std::make_shared<std::promise<Digest>>();
    d.samplingAnchor = recordDigest->get_future().share();
    d.background->submit([=](TapeWriter& w) {
        TransactionRecordBuilder record(index, wallTime);
        record.setAutocast(*autocast);
        for (std::size_t m = 0; m < micro->size(); ++m) {
            const auto& [loss, batch] = (*micro)[m];
            record.addMicroBatch(dtypeOf(loss.scalar_type()), tensorBytes(loss), (*scales)[m]);
            for (const at::Tensor& tensor : batch)
                record.addBatchTensor(dtypeOf(tensor.scalar_type()), shapeOf(tensor), tensorBytes(tensor));
        }
        for (const auto& [option, values] : *options)
            record.setOptimizerValue(option, values);
        record.setUpdateFingerprints(*l2, *maxAbs);
        for (std::size_t i = 0; i < sampledDeltas->size(); ++i)
            record.addDelta((*names)[i], dtypeOf((*sampledDeltas)[i].scalar_type()), shapeOf((*sampledDeltas)[i]),
                            tensorBytes((*sampledDeltas)[i]));
        if (digest)
            record.setStateDigest(*digest);
        if (scheduleEpoch)
            record.setScheduleEpoch(*scheduleEpoch);
        record.setScheduleInputs(scheduleInputs->metrics, scheduleInputs->state);
        if (scalerStep)
            record.setGradScaler(*scalerStep);
        if (!sampleIndices->empty())
            record.setSamples(*sampleIndices, *sampleSiblings);
        for (std::size_t k = 0; k < transforms->size(); ++k) {
            const at::Tensor& total = (*totalNorms)[k];
            if (total.defined())
                record.addGradientTransform((*transforms)[k], dtypeOf(total.scalar_type()), tensorBytes(total));
            else
                record.addGradientTransform((*transforms)[k]);
        }
        SafetensorsBuilder blob = record.blob();
        std::vector<std::uint8_t> header;
        recordDigest->set_value(w.append(tape::RecordType::Transaction, blob.pieces(header)));
    });
    ++d.transactions;
    d.committed = true;
    if (d.transactions % static_cast<std::uint64_t>(d.config.replaySnapshotInterval) == 0)
        d.snapshot(d.transactions);
}

std::string Recorder::endTransaction()
{
    Impl& d = *impl_;
    const bool committed = d.committed;
    if (!committed)
        ++d.aborted;
    d.open = false;
    d.batch.clear();
    d.microBatches.clear();
    d.losses.clear();
    if (!d.brokenBy.empty() || !d.started)
        return {};
    // A transaction that leaves the state other than the tape says ends the tape: a raw
    // optimizer's step, a program run without a step (its buffers moved), a change after the step.
    try {
        if (committed)
            d.checkRecordedState(false, "after the optimizer step of transaction " + std::to_string(d.transactions - 1) + ", inside it");
        else
            d.checkRecordedState(true, "in " + d.current() + ", which ended without a step of the prepared optimizer (step the optimizer "
                                        "returned by proof.prepare() in every transaction)");
    } catch (const std::exception& error) {  // never out of a destructor
        return error.what();
    }
    return {};
}

void Recorder::seal()
{
    Impl& d = *impl_;
    if (d.open)
        throw RecorderError("close the open transaction before sealing the tape");
    if (d.sealed)
        return;
    if (!d.model || !d.bridge)
        throw RecorderError("nothing to seal: prepare the model and its optimizer first");
    if (!d.brokenBy.empty()) {
        d.persistRecorded();
        throw RecorderError("this recorder's tape ended early (" + d.brokenBy +
                            "), so the model may not hold the state after the last recorded transaction, which a sealed tape ends with; "
                            "the tape stays unsealed, readable up to that transaction (zkdv-audit ingest --allow-incomplete)");
    }
    if (!d.started)
        d.start();
    // The tape ends with the final state, so the last segment's replay is compared with it
    // (spec 2.4); when the count is a multiple of the interval, step() already wrote it.
    if (d.transactions % static_cast<std::uint64_t>(d.config.replaySnapshotInterval) != 0)
        d.snapshot(d.transactions);
    // A signature states the final state's digest, taken from the state itself (what the
    // final snapshot holds).
    std::optional<Digest> finalState;
    if (d.signingKey)
        finalState = d.stateDigest();
    d.background->submit([key = d.signingKey, finalState](TapeWriter& w) { w.seal(key.get(), finalState); });
    d.background->drain();
    d.writer->sync();
    d.sealed = true;
    // Over the finished file, after the seal: the bundle signs every byte of it.
    if (d.config.detachedSignature)
        writeDetachedSignature(d.path, detachedSignaturePathOf(d.path), *d.signingKey, /*overwrite=*/true);
}

RecorderStatistics Recorder::statistics() const
{
    RecorderStatistics s;
    s.transactions = impl_->transactions;
    s.snapshots = impl_->snapshots;
    s.abortedTransactions = impl_->aborted;
    s.snapshotPoolSize = impl_->pool.size();
    s.snapshotPoolHighWater = impl_->pool.highWater();
    s.snapshotSideStreamCopies = impl_->pool.sideStreamCopies();
    s.snapshotTrainingStreamCopies = impl_->pool.trainingStreamCopies();
    s.pendingHighWater = impl_->background->pendingHighWater();
    return s;
}

const std::string& Recorder::path() const { return impl_->path; }

Digest Recorder::chainHead() const
{
    impl_->background->drain();
    return impl_->writer->chainHead();
}

// ---------------------------------------------------------------- PreparedOptimizer, Transaction

void PreparedOptimizer::step() { recorder_.step(*this); }

const std::vector<optim::SlotState>& PreparedOptimizer::state() const { return recorder_.impl_->state; }

Transaction::Transaction(Transaction&& other) noexcept : recorder_(other.recorder_) { other.recorder_ = nullptr; }

Transaction::~Transaction()
{
    if (recorder_)
        recorder_->endTransaction();
}

void Transaction::close()
{
    if (!recorder_)
        return;
    Recorder* recorder = recorder_;
    recorder_ = nullptr;
    const std::string refusal = recorder->endTransaction();
    if (!refusal.empty())
        throw RecorderError(refusal);
}

bool Transaction::committed() const { return recorder_ && recorder_->impl_->committed; }

}  // namespace zkdv
