// zkdv._native: the C++ recorder as the Python frontend (zkdv.torch) drives it. Tensors and
// TorchScript modules cross as the interpreter's own torch objects (torch's pybind casters,
// the same libtorch on both sides), so nothing is copied; every error the recorder raises
// reaches Python as a RuntimeError with the recorder's message.

#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <torch/csrc/utils/pybind.h>

#include "provenance_binding.h"

#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/optim/contract_registry.h"
#include "zkdv/optim/gradient_clipping.h"
#include "zkdv/optim/torch_release.h"
#include "zkdv/provenance/dataset_commitment.h"
#include "zkdv/recorder/recorder.h"
#include "zkdv/report/report_file.h"
#include "zkdv/tape/dataset_samples.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tensor/torch_tensors.h"
#include "zkdv/schedule/schedule_contract.h"
#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"

namespace py = pybind11;

namespace {

// A torch.optim optimizer's groups as the contract optimizer takes them: the parameters (the
// optimizer's own tensors) and the options as JSON, which Python writes (zkdv/torch/options.py).
std::vector<zkdv::optim::ParameterGroup> toGroups(const std::vector<std::pair<std::vector<at::Tensor>, std::string>>& groups)
{
    std::vector<zkdv::optim::ParameterGroup> result;
    for (const auto& [parameters, options] : groups)
        result.push_back({parameters, zkdv::optim::GroupOptions::parse(options)});
    return result;
}

// A contract written in Python (a zkdv.torch.OptimizerContract that the user registered with
// proof.register_functional_optimizer). Its initialize and update run in the interpreter
// through zkdv.torch.optimizers.ContractAdapter, which converts options (JSON) and number
// slots; the recorder calls them from the training thread with the GIL released.
class PythonContract : public zkdv::optim::OptimizerContract {
public:
    PythonContract(py::object adapter, std::string name, const std::string& defaultsJson, std::set<std::string> numberSlots, bool eager)
        : adapter_(std::move(adapter)), name_(std::move(name)), defaults_(zkdv::optim::GroupOptions::parse(defaultsJson)),
          numberSlots_(std::move(numberSlots)), eager_(eager)
    {
    }

    ~PythonContract() override
    {
        if (!Py_IsInitialized())
            return;
        py::gil_scoped_acquire gil;
        adapter_ = py::object();
    }

    std::string name() const override { return name_; }
    zkdv::optim::GroupOptions defaults() const override { return defaults_; }
    bool initializesEagerly() const override { return eager_; }
    std::set<std::string> numberSlots() const override { return numberSlots_; }

    zkdv::optim::SlotState initialize(const at::Tensor& parameter, const zkdv::optim::GroupOptions& group) const override
    {
        py::gil_scoped_acquire gil;
        return call<zkdv::optim::SlotState>("initialize", parameter, group.dump());
    }

    void update(const std::vector<at::Tensor>& parameters, const std::vector<at::Tensor>& gradients,
                const std::vector<zkdv::optim::SlotState*>& states, const zkdv::optim::GroupOptions& group) const override
    {
        py::gil_scoped_acquire gil;
        std::vector<zkdv::optim::SlotState> before;
        for (const zkdv::optim::SlotState* state : states)
            before.push_back(*state);
        auto after = call<std::vector<zkdv::optim::SlotState>>("update", parameters, gradients, before, group.dump());
        if (after.size() != states.size())
            throw zkdv::optim::ContractError("custom optimizer contract " + name_ + " returned " + std::to_string(after.size()) +
                                             " states for " + std::to_string(states.size()) + " parameters");
        for (std::size_t i = 0; i < states.size(); ++i)
            *states[i] = std::move(after[i]);
    }

private:
    // A Python exception becomes a ContractError with its message, so the recorder reports it
    // as it reports its own contracts' refusals.
    template <typename Result, typename... Arguments>
    Result call(const char* method, Arguments&&... arguments) const
    {
        try {
            return adapter_.attr(method)(std::forward<Arguments>(arguments)...).template cast<Result>();
        } catch (py::error_already_set& error) {
            throw zkdv::optim::ContractError("custom optimizer contract " + name_ + "." + method + ": " + error.what());
        } catch (const py::cast_error& error) {
            throw zkdv::optim::ContractError("custom optimizer contract " + name_ + "." + method +
                                             " must give each slot as a tensor or a number: " + error.what());
        }
    }

    py::object adapter_;
    std::string name_;
    zkdv::optim::GroupOptions defaults_;
    std::set<std::string> numberSlots_;
    bool eager_;
};

// The contract optimizer behind one prepared torch.optim optimizer. Building it resolves and
// validates the contract, so prepare() refuses LBFGS, differentiable steps or tensor-valued
// options at once, before any training.
class NativeOptimizer {
public:
    NativeOptimizer(const std::string& name, const std::vector<std::pair<std::vector<at::Tensor>, std::string>>& groups)
        : optimizer_(std::make_shared<zkdv::optim::ContractOptimizer>(builtin(name), toGroups(groups)))
    {
    }

    // With a custom contract, which the recorder registers before it prepares the optimizer.
    NativeOptimizer(std::shared_ptr<const zkdv::optim::OptimizerContract> contract,
                    const std::vector<std::pair<std::vector<at::Tensor>, std::string>>& groups)
        : optimizer_(std::make_shared<zkdv::optim::ContractOptimizer>(contract, toGroups(groups))), custom_(std::move(contract))
    {
    }

    const std::shared_ptr<const zkdv::optim::OptimizerContract>& custom() const { return custom_; }

    // The options of torch's param_groups now, so the recorder's check that they are unchanged
    // since sealing sees what the next step would really use.
    void setOptions(const std::vector<std::string>& options)
    {
        auto& groups = optimizer_->groups();
        if (options.size() != groups.size())
            throw zkdv::optim::ContractError("prepared optimizer options changed after attestation; create a new proof for the new optimizer schedule");
        for (std::size_t g = 0; g < groups.size(); ++g)
            groups[g].options = zkdv::optim::GroupOptions::parse(options[g]);
    }

    std::vector<std::string> numberSlots() const
    {
        const auto slots = optimizer_->contract().numberSlots();
        return {slots.begin(), slots.end()};
    }

    // A checkpoint's state, loaded into torch's optimizer before prepare(): each parameter's
    // slots as tensors (number slots as 0-d int64 ones), for a resumed tape's snapshot 0.
    void loadState(const std::vector<std::pair<at::Tensor, std::map<std::string, at::Tensor>>>& states)
    {
        for (const auto& [parameter, slots] : states)
            optimizer_->loadState(parameter, zkdv::optim::SlotState(slots.begin(), slots.end()));
    }

    zkdv::optim::ContractOptimizer& optimizer() { return *optimizer_; }

private:
    static std::shared_ptr<const zkdv::optim::OptimizerContract> builtin(const std::string& name)
    {
        static const zkdv::optim::ContractRegistry registry;
        return registry.resolve(name);
    }
    std::shared_ptr<zkdv::optim::ContractOptimizer> optimizer_;
    std::shared_ptr<const zkdv::optim::OptimizerContract> custom_;
};

// One recorder with its open transaction. The transaction is an RAII scope in C++; Python
// opens and closes it explicitly from its own context manager.
class NativeRecorder {
public:
    NativeRecorder(const std::string& path, double stateCheck, double updateCheck, std::uint64_t seed, const std::string& metadataJson,
                   bool overwrite, int maxInFlight, int replaySnapshotInterval, const std::string& resumeFrom, const std::string& signingKeyFile,
                   bool detachedSignature, const std::string& datasetCommitment, bool deterministicOnCuda)
    {
        zkdv::RecorderOptions config;
        config.stateCheckProbability = stateCheck;
        config.updateCheckProbability = updateCheck;
        config.samplingSeed = seed;
        config.metadataJson = metadataJson;
        config.overwrite = overwrite;
        config.producerName = "zkdv.torch (Python)";
        config.maxInFlight = maxInFlight;
        config.replaySnapshotInterval = replaySnapshotInterval;
        config.resumeFrom = resumeFrom;
        config.signingKeyFile = signingKeyFile;
        config.detachedSignature = detachedSignature;
        config.datasetCommitmentFile = datasetCommitment;
        config.deterministicOnCuda = deterministicOnCuda;
        recorder_ = std::make_unique<zkdv::Recorder>(path, config);
    }

    ~NativeRecorder() { close(); }

    void prepareModel(const torch::jit::Module& program) { model_ = &recorder_->prepare(program); }

    // An exported-graph step (zkdv/torch/export_program.py) training the model's own tensors.
    void prepareExported(const py::bytes& program, std::vector<std::string> parameterNames, std::vector<at::Tensor> parameters,
                         std::vector<std::string> bufferNames, std::vector<at::Tensor> buffers)
    {
        const std::string bytes = program;
        zkdv::ExportedModel model{std::vector<std::uint8_t>(bytes.begin(), bytes.end()), std::move(parameterNames), std::move(parameters),
                                  std::move(bufferNames), std::move(buffers)};
        model_ = &recorder_->prepare(std::move(model));
    }

    // The loss, then the tensors of the model's output.
    std::vector<at::Tensor> forwardExported() { return recorder_->forwardExported(); }

    void prepareOptimizer(std::shared_ptr<NativeOptimizer> optimizer)
    {
        if (optimizer->custom())
            recorder_->registerFunctionalOptimizer(optimizer->custom());  // proof-local, as the seed's
        prepared_ = &recorder_->prepare(optimizer->optimizer());
        optimizer_ = std::move(optimizer);  // the recorder keeps a reference to it
    }

    void schedule(std::vector<std::string> options, std::string schedulerJson, std::uint64_t epoch)
    {
        recorder_->schedule(std::move(options), std::move(schedulerJson), epoch);
    }
    void setScheduleEpoch(std::uint64_t epoch) { recorder_->setScheduleEpoch(epoch); }
    void setScheduleInputs(std::vector<double> metrics, std::vector<double> state)
    {
        recorder_->setScheduleInputs(std::move(metrics), std::move(state));
    }

    // One micro-batch, or several accumulated into one step (tape format 1.7, section 5.4).
    void begin(std::vector<std::vector<at::Tensor>> microBatches) { open_.emplace(recorder_->transaction(std::move(microBatches))); }
    void samples(std::vector<std::vector<std::uint64_t>> indices) { recorder_->samples(std::move(indices)); }

    // Raises when the transaction changed the state the tape describes (the recorder's message).
    void end()
    {
        if (!open_)
            return;
        zkdv::Transaction transaction = std::move(*open_);
        open_.reset();
        transaction.close();
    }

    // Python's own autograd call, inside the recorder's checks of the gradients.
    // `scale`: how zkdv.torch scaled the loss it differentiates, ("div" | "mul", number,
    // whether the loop's number was an int), or None.
    // `gradScaled`: the differentiated loss was also multiplied by the prepared GradScaler's scale.
    void backward(const py::function& differentiate, const std::optional<std::tuple<std::string, double, bool>>& scale, bool gradScaled)
    {
        zkdv::LossScale loss;
        if (scale) {
            const auto& [op, by, integral] = *scale;
            if (op != "div" && op != "mul")
                throw zkdv::RecorderError("a loss scale is \"div\" or \"mul\", not \"" + op + "\"");
            loss.op = op == "div" ? zkdv::LossScale::Op::Divide : zkdv::LossScale::Op::Multiply;
            loss.by = by;
            loss.integral = integral;
        }
        recorder_->backward([&differentiate] { differentiate(); }, loss, gradScaled);
    }

    // torch.amp.GradScaler (tape format 1.8, section 5.6).
    void gradScaler(double growthFactor, double backoffFactor, std::int64_t growthInterval, double scale, std::int64_t growthTracker)
    {
        recorder_->declareGradScaler(zkdv::GradScalerDeclaration{{growthFactor, backoffFactor, growthInterval}, scalerState(scale, growthTracker)});
    }
    void checkGradScale(double scale, std::int64_t growthTracker) { recorder_->checkGradScalerState(scalerState(scale, growthTracker)); }
    std::pair<double, std::int64_t> gradScale() const
    {
        const zkdv::GradScalerState state = recorder_->gradScalerState();
        return {state.scale, state.growthTracker};
    }
    bool unscaleGradients() { return recorder_->unscaleGradients(); }
    bool stepSkipped() const { return recorder_->stepSkipped(); }
    bool committed() const { return open_ && open_->committed(); }

    at::Tensor clipGradNorm(double maxNorm, double normType, bool errorIfNonfinite, std::optional<bool> foreach)
    {
        return recorder_->clipGradNorm(maxNorm, normType, errorIfNonfinite, foreach);
    }
    void clipGradValue(double clipValue, std::optional<bool> foreach) { recorder_->clipGradValue(clipValue, foreach); }

    at::Tensor forward(const torch::jit::Module& program) { return recorder_->forward(program); }

    // Whether a GradScaler skipped the step (an inf or NaN in the unscaled gradients).
    bool step()
    {
        if (!prepared_)
            throw zkdv::RecorderError("prepare the optimizer before stepping it");
        prepared_->step();
        return recorder_->stepSkipped();
    }

    // The state in the prepared model's parameter order, as the recorder's own tensors.
    std::vector<std::map<std::string, at::Tensor>> state() const
    {
        if (!prepared_)
            return {};
        return {prepared_->state().begin(), prepared_->state().end()};
    }

    std::vector<at::Tensor> parameters() const { return model_ ? model_->parameters() : std::vector<at::Tensor>{}; }

    void seal() { recorder_->seal(); }

    // Waits for pending records and releases the file; a tape not sealed reads as unsealed.
    void close()
    {
        open_.reset();
        recorder_.reset();
    }

    std::string chainHead() const { return zkdv::toHex(live().chainHead()); }

    py::dict statistics() const
    {
        const zkdv::RecorderStatistics s = live().statistics();
        py::dict d;
        d["transactions"] = s.transactions;
        d["snapshots"] = s.snapshots;
        d["aborted_transactions"] = s.abortedTransactions;
        d["pending_high_water"] = s.pendingHighWater;
        d["snapshot_side_stream_copies"] = s.snapshotSideStreamCopies;
        d["snapshot_training_stream_copies"] = s.snapshotTrainingStreamCopies;
        return d;
    }

private:
    // Python reads the scale as a float (a double holding a float32 value).
    static zkdv::GradScalerState scalerState(double scale, std::int64_t growthTracker)
    {
        if (static_cast<double>(static_cast<float>(scale)) != scale)
            throw zkdv::RecorderError("a GradScaler's scale is a float32 value, and " + std::to_string(scale) + " is not one");
        return zkdv::GradScalerState{static_cast<float>(scale), growthTracker};
    }
    const zkdv::Recorder& live() const
    {
        if (!recorder_)
            throw zkdv::RecorderError("this proof is closed");
        return *recorder_;
    }
    std::unique_ptr<zkdv::Recorder> recorder_;
    std::optional<zkdv::Transaction> open_;
    std::shared_ptr<NativeOptimizer> optimizer_;
    zkdv::PreparedModel* model_ = nullptr;
    zkdv::PreparedOptimizer* prepared_ = nullptr;
};

}  // namespace

PYBIND11_MODULE(_native, m)
{
    m.doc() = "The ZKDV C++ recorder, bound for zkdv.torch; its submodule provenance for zkdv.provenance";
    py::module_ provenance = m.def_submodule("provenance");
    zkdv::python::bindProvenance(provenance);
    m.def("builtin_contract_names", &zkdv::optim::builtinContractNames, "the torch.optim classes the built-in contracts reproduce");
    m.def("schedule_kinds", &zkdv::schedule::scheduleKinds, "the torch.optim.lr_scheduler classes the schedule contracts reproduce");
    // The values a schedule contract gives at epochs 0 .. epochs-1, each step from the one
    // before (as the auditor chains them): values[epoch][option][group]. The oracle test
    // compares them with real torch's.
    m.def(
        "schedule_values",
        [](const std::string& description, std::size_t groups, const std::string& torchVersion, std::uint64_t epochs) {
            const auto release = zkdv::optim::TorchRelease::parse(torchVersion);
            if (!release)
                throw zkdv::schedule::ScheduleError("\"" + torchVersion + "\" is not a torch release");
            const auto contract =
                zkdv::schedule::makeScheduleContract(nlohmann::json::parse(description), groups, release->major, release->minor);
            std::vector<zkdv::schedule::ScheduledValues> values;
            zkdv::schedule::ScheduledValues current = contract->base();
            for (std::uint64_t epoch = 0; epoch < epochs; ++epoch)
                values.push_back(current = contract->step(epoch, current));
            return values;
        },
        py::arg("description"), py::arg("groups"), py::arg("torch_version"), py::arg("epochs"));
    // The same for a scheduler whose steps read a metric (ReduceLROnPlateau): from the
    // description's base values and state, one step per metric (epochs 1, 2, …), each giving
    // (values[option][group], state). The oracle test compares them with real torch's.
    m.def(
        "schedule_values_with_metrics",
        [](const std::string& description, std::size_t groups, const std::string& torchVersion, const std::vector<double>& metrics) {
            const auto release = zkdv::optim::TorchRelease::parse(torchVersion);
            if (!release)
                throw zkdv::schedule::ScheduleError("\"" + torchVersion + "\" is not a torch release");
            const auto contract =
                zkdv::schedule::makeScheduleContract(nlohmann::json::parse(description), groups, release->major, release->minor);
            if (!contract->readsMetric())
                throw zkdv::schedule::ScheduleError(contract->kind() + " reads no metric: use schedule_values");
            std::vector<std::pair<zkdv::schedule::ScheduledValues, zkdv::schedule::SchedulerState>> steps;
            zkdv::schedule::ScheduledValues current = contract->base();
            zkdv::schedule::SchedulerState state = contract->initialState();
            for (std::size_t i = 0; i < metrics.size(); ++i) {
                current = contract->stepWithMetric(i + 1, current, metrics[i], state);
                steps.emplace_back(current, state);
            }
            return steps;
        },
        py::arg("description"), py::arg("groups"), py::arg("torch_version"), py::arg("metrics"));
    // The recorder's and the replay's clipping, applied to `gradients` in place as the torch
    // release `torch_version` would (its foreach resolved as that release does): the oracle
    // test compares it with torch.nn.utils' own. Returns clip_grad_norm's total norm.
    m.def(
        "gradient_transform",
        [](const std::vector<at::Tensor>& gradients, const std::string& kind, double value, double normType, bool errorIfNonfinite,
           std::optional<bool> foreach, const std::string& torchVersion) {
            const auto release = zkdv::optim::TorchRelease::parse(torchVersion);
            if (!release)
                throw zkdv::Error("\"" + torchVersion + "\" is not a torch release");
            zkdv::GradientTransform transform;
            if (kind == "clip_grad_norm") {
                transform.kind = zkdv::GradientTransform::Kind::ClipNorm;
                transform.maxNorm = value;
                transform.normType = normType;
                transform.errorIfNonfinite = errorIfNonfinite;
            } else if (kind == "clip_grad_value") {
                transform.kind = zkdv::GradientTransform::Kind::ClipValue;
                transform.clipValue = value;
            } else if (kind == "unscale") {
                // GradScaler.unscale_ by the scale `value` (a float32): returns found_inf.
                transform.kind = zkdv::GradientTransform::Kind::Unscale;
                transform.scale = static_cast<float>(value);
                return zkdv::optim::applyGradientTransform(transform, gradients, *release);
            } else {
                throw zkdv::Error("unknown gradient transform kind \"" + kind + "\"");
            }
            transform.foreach = zkdv::optim::resolveForeach(foreach, gradients, *release);
            return zkdv::optim::applyGradientTransform(transform, gradients, *release);
        },
        py::arg("gradients"), py::arg("kind"), py::arg("value"), py::arg("norm_type") = 2.0, py::arg("error_if_nonfinite") = false,
        py::arg("foreach") = py::none(), py::arg("torch_version"));
    py::class_<NativeOptimizer, std::shared_ptr<NativeOptimizer>>(m, "ContractOptimizer")
        .def(py::init<const std::string&, const std::vector<std::pair<std::vector<at::Tensor>, std::string>>&>(), py::arg("name"),
             py::arg("groups"))
        .def_static(
            "custom",
            [](py::object adapter, const std::string& name, const std::string& defaultsJson, const std::set<std::string>& numberSlots,
               bool eager, const std::vector<std::pair<std::vector<at::Tensor>, std::string>>& groups) {
                auto contract = std::make_shared<PythonContract>(std::move(adapter), name, defaultsJson, numberSlots, eager);
                return std::make_shared<NativeOptimizer>(std::move(contract), groups);
            },
            py::arg("adapter"), py::arg("name"), py::arg("defaults_json"), py::arg("number_slots"), py::arg("initializes_eagerly"),
            py::arg("groups"))
        .def("set_options", &NativeOptimizer::setOptions)
        .def("number_slots", &NativeOptimizer::numberSlots)
        .def("load_state", &NativeOptimizer::loadState, py::arg("states"));

    // A dataset's samples committed as the training step receives them (tape format 5.7): one
    // sample's zkdv-sample-v1 digest from its tensors (each with a first dimension of 1, as a
    // batch of one), and the commitment document of the digests in dataset order.
    m.def(
        "sample_digest",
        [](const std::vector<at::Tensor>& tensors) {
            std::vector<at::Tensor> host;
            std::vector<zkdv::TensorView> views;
            std::uint64_t bytes = 0;
            for (const at::Tensor& tensor : tensors)
                host.push_back(tensor.detach().to(at::kCPU).contiguous());
            for (std::size_t i = 0; i < host.size(); ++i) {
                views.push_back(zkdv::TensorView{"batch/" + std::to_string(i), zkdv::dtypeOf(host[i].scalar_type()), host[i].sizes().vec(),
                                                 zkdv::tensorBytes(host[i])});
                bytes += views.back().data.size;
            }
            std::vector<const zkdv::TensorView*> batch;
            for (const zkdv::TensorView& view : views)
                batch.push_back(&view);
            if (zkdv::batchRows(batch) != 1)
                throw zkdv::Error("a sample's tensors each hold one row (a batch of one), as default_collate([item]) makes them");
            const zkdv::Digest digest = zkdv::sampleDigest(batch, 0);
            return py::make_tuple(bytes, py::bytes(reinterpret_cast<const char*>(digest.data()), digest.size()));
        },
        py::arg("tensors"));
    m.def(
        "write_sample_commitment",
        [](const std::vector<std::pair<std::uint64_t, py::bytes>>& samples, const std::string& path, bool overwrite) {
            std::vector<std::pair<std::uint64_t, zkdv::Digest>> digests;
            for (const auto& [size, bytes] : samples) {
                const std::string text = bytes;
                if (text.size() != 32)
                    throw zkdv::Error("a sample digest is 32 bytes");
                zkdv::Digest digest{};
                std::copy(text.begin(), text.end(), digest.begin());
                digests.emplace_back(size, digest);
            }
            if (!overwrite && std::ifstream(path))
                throw zkdv::IoError(path + " exists; pass overwrite=True to replace it");
            const zkdv::DatasetCommitment commitment = zkdv::DatasetCommitment::ofSamples(digests);
            zkdv::writeReportFile(path, commitment.toJson().dump(2) + "\n");
            return zkdv::toHex(commitment.root);
        },
        py::arg("samples"), py::arg("path"), py::arg("overwrite") = false);

    // The training calls release the GIL: the background writer never needs it, and a
    // second Python thread (a data loader) keeps running while a step computes.
    // The defaults of zkdv.torch.ZKDV's keywords, so that Python and C++ default alike.
    m.attr("DEFAULT_MAX_IN_FLIGHT") = zkdv::RecorderOptions{}.maxInFlight;
    m.attr("DEFAULT_SNAPSHOT_INTERVAL") = zkdv::RecorderOptions{}.replaySnapshotInterval;
    // The tape format this build writes ("1.14"), for tests that follow it rather than a number.
    m.attr("TAPE_FORMAT") = std::to_string(zkdv::tape::kMajorVersion) + "." + std::to_string(zkdv::tape::kMinorVersion);
    py::class_<NativeRecorder>(m, "Recorder")
        .def(py::init<const std::string&, double, double, std::uint64_t, const std::string&, bool, int, int, const std::string&, const std::string&, bool, const std::string&, bool>(),
             py::arg("path"), py::arg("state_check_probability"), py::arg("update_check_probability"), py::arg("seed"),
             py::arg("metadata_json"), py::arg("overwrite"), py::arg("max_in_flight"), py::arg("replay_snapshot_interval"),
             py::arg("resume_from") = std::string(), py::arg("signing_key") = std::string(), py::arg("detached_signature") = false,
             py::arg("dataset_commitment") = std::string(), py::arg("deterministic") = true)
        .def("prepare_model", &NativeRecorder::prepareModel)
        .def("prepare_optimizer", &NativeRecorder::prepareOptimizer)
        .def("schedule", &NativeRecorder::schedule, py::arg("options"), py::arg("scheduler_json"), py::arg("epoch"))
        .def("set_schedule_epoch", &NativeRecorder::setScheduleEpoch)
        .def("set_schedule_inputs", &NativeRecorder::setScheduleInputs, py::arg("metrics"), py::arg("state"))
        .def("begin", &NativeRecorder::begin)
        .def("samples", &NativeRecorder::samples, py::arg("indices"))
        .def("end", &NativeRecorder::end)
        .def("committed", &NativeRecorder::committed)
        .def("forward", &NativeRecorder::forward, py::call_guard<py::gil_scoped_release>())
        .def("backward", &NativeRecorder::backward, py::arg("differentiate"), py::arg("scale") = py::none(), py::arg("grad_scaled") = false)
        .def("grad_scaler", &NativeRecorder::gradScaler, py::arg("growth_factor"), py::arg("backoff_factor"), py::arg("growth_interval"),
             py::arg("scale"), py::arg("growth_tracker"))
        .def("check_grad_scale", &NativeRecorder::checkGradScale, py::arg("scale"), py::arg("growth_tracker"))
        .def("grad_scale", &NativeRecorder::gradScale)
        .def("unscale_gradients", &NativeRecorder::unscaleGradients, py::call_guard<py::gil_scoped_release>())
        .def("step_skipped", &NativeRecorder::stepSkipped)
        .def("clip_grad_norm", &NativeRecorder::clipGradNorm, py::arg("max_norm"), py::arg("norm_type"), py::arg("error_if_nonfinite"),
             py::arg("foreach"), py::call_guard<py::gil_scoped_release>())
        .def("clip_grad_value", &NativeRecorder::clipGradValue, py::arg("clip_value"), py::arg("foreach"),
             py::call_guard<py::gil_scoped_release>())
        .def("prepare_exported", &NativeRecorder::prepareExported)
        .def("forward_exported", &NativeRecorder::forwardExported, py::call_guard<py::gil_scoped_release>())
        .def("step", &NativeRecorder::step, py::call_guard<py::gil_scoped_release>())
        .def("state", &NativeRecorder::state)
        .def("parameters", &NativeRecorder::parameters)
        .def("seal", &NativeRecorder::seal, py::call_guard<py::gil_scoped_release>())
        .def("close", &NativeRecorder::close)
        .def("chain_head", &NativeRecorder::chainHead)
        .def("statistics", &NativeRecorder::statistics);
}
