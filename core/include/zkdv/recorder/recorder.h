#pragma once
// The C++ counterpart of ZKDV's Torch frontend (the seed's zkdv.torch.ZKDV): wraps ordinary
// libtorch training steps and writes a verification tape (training side: exposes torch).

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/csrc/jit/api/module.h>

#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/optim/contract_registry.h"
#include "zkdv/optim/optimizer_bridge.h"
#include "zkdv/tape/grad_scaler.h"
#include "zkdv/tape/gradient_transform.h"
#include "zkdv/tape/loss_scale.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

class Recorder;
class GraphInterpreter;

// An exported-graph training step (docs/tape-format.md section 4.2) and the tensors it trains,
// named as its signature names them, in the order the tape's layout will list them.
struct ExportedModel {
    std::vector<std::uint8_t> program;  // the graph's bytes, exactly as they are sealed
    std::vector<std::string> parameterNames;
    std::vector<at::Tensor> parameters;
    std::vector<std::string> bufferNames;
    std::vector<at::Tensor> buffers;
};

// A recorder used out of order or on something it did not prepare; says what to do.
class RecorderError : public Error {
public:
    using Error::Error;
};

// How a Recorder writes its tape; named fields, so that a call says what each value means
// (RecorderOptions{.overwrite = true, .replaySnapshotInterval = 4} where C++20 is on).
struct RecorderOptions {
    double stateCheckProbability = 0.0;
    double updateCheckProbability = 0.0;
    std::uint64_t samplingSeed = 0;
    std::string metadataJson = "{}";  // free-form run metadata (a JSON object)
    bool overwrite = false;           // replace an existing tape file
    bool embedProgram = true;         // the sealed program travels inside the tape
    std::string producerName = "zkdv recorder";
    int maxInFlight = 2;  // records waiting for the disk before training blocks (at least 1)
    // A full-state snapshot every this many transactions: the replay's segment length.
    int replaySnapshotInterval = tape::kDefaultSnapshotInterval;
    // A sealed tape this one continues (a run resumed from a checkpoint; tape format 1.10,
    // section 3.4): the model and optimizer must then be in the state that tape ended in,
    // the optimizer's loaded with ContractOptimizer::loadState(). Empty: a new run.
    std::string resumeFrom;
    // A PEM private key (ECDSA P-256 or Ed25519) to sign the tape with (tape format 1.11,
    // section 7.1): the seal then carries an in-toto statement about the tape, signed. Read
    // when the recorder is made. Empty: the tape is sealed unsigned.
    std::string signingKeyFile;
    // With a signing key, also a detached signature over the whole sealed file, beside it as
    // "<tape>.sig": a Sigstore bundle in OpenSSF model signing's format (docs/signing.md), which
    // `model_signing verify key` checks like any signed model. Needs an ECDSA P-256 key for that.
    bool detachedSignature = false;
    // A dataset commitment of samples (docs/dataset-commitment.md, unit "sample"; Python's
    // zkdv.dataset.commit_samples writes one) the batches are drawn from (tape format 1.12,
    // section 5.7): the root declares it (sha256-merkle-v2, whose root commits the count, also
    // for a v1 document: its counted root), and every transaction must name the committed sample
    // behind each row of its batch (samples()), which is checked before the step and recorded
    // with its Merkle proof. Read when the recorder is made. Empty: batches are not bound.
    std::string datasetCommitmentFile;
    // Training on CUDA, the recorder puts torch's deterministic settings in force before the
    // first step (deterministic algorithms, warn-only; cuDNN deterministic, no benchmarking;
    // no TF32; cuBLAS's fixed workspace) and says so on stderr, so that a replay on the same
    // kind of GPU reproduces the step bit for bit (docs/recorder.md, "Determinism profile").
    // false keeps the trainer's settings; either way the root records those in force.
    bool deterministicOnCuda = true;
};

// How a transaction treats mutations of model or optimizer state made outside it (spec 5.3).
enum class OverlapPolicy { Unchecked };

// A model bound to one stable parameter and buffer order (the seed's PreparedModel).
class PreparedModel {
public:
    torch::jit::Module& module() { return module_; }
    const std::vector<std::string>& parameterNames() const { return parameterNames_; }
    const std::vector<std::string>& bufferNames() const { return bufferNames_; }
    std::vector<at::Tensor> parameters() const;
    std::vector<at::Tensor> buffers() const;
    // Whether the step is an exported graph (module() is then empty).
    bool exported() const { return interpreter_ != nullptr; }

private:
    friend class Recorder;
    explicit PreparedModel(torch::jit::Module module);
    explicit PreparedModel(ExportedModel model);
    torch::jit::Module module_;
    std::vector<std::string> parameterNames_;
    std::vector<std::string> bufferNames_;
    std::shared_ptr<GraphInterpreter> interpreter_;  // the exported-graph step
    std::vector<std::uint8_t> program_;              // its bytes
    std::vector<at::Tensor> parameters_, buffers_;   // the tensors it trains
};

// The optimizer API, routed through the recorder (the seed's PreparedOptimizer).
class PreparedOptimizer {
public:
    // Inside a transaction: the contract's transition, applied, and the transaction recorded.
    void step();
    void zeroGrad() { optimizer_.zeroGrad(); }
    optim::ContractOptimizer& optimizer() { return optimizer_; }
    // The optimizer state the recorder steps, per parameter in the prepared model's order;
    // empty before the first transaction. A frontend shows these tensors as its optimizer's
    // own state (the Python PreparedOptimizer's `state`), so they are never copied.
    const std::vector<optim::SlotState>& state() const;

private:
    friend class Recorder;
    PreparedOptimizer(Recorder& recorder, optim::ContractOptimizer& optimizer) : recorder_(recorder), optimizer_(optimizer) {}
    Recorder& recorder_;
    optim::ContractOptimizer& optimizer_;
};

// One transaction scope, open from the forward pass through the optimizer step. Ending
// the scope without a step aborts it: nothing is written. When the transaction changed the
// state the tape describes all the same (a raw optimizer's step, buffers its forward moved), the
// recorder takes no further transaction; close() says so, the destructor cannot.
class Transaction {
public:
    Transaction(Transaction&& other) noexcept;
    Transaction& operator=(Transaction&&) = delete;
    Transaction(const Transaction&) = delete;
    ~Transaction();
    bool committed() const;
    // Ends the transaction now; throws RecorderError when its changes ended the tape.
    void close();

private:
    friend class Recorder;
    explicit Transaction(Recorder* recorder) : recorder_(recorder) {}
    Recorder* recorder_;
};

struct RecorderStatistics {
    std::uint64_t transactions = 0;
    std::uint64_t snapshots = 0;
    std::uint64_t abortedTransactions = 0;
    std::size_t snapshotPoolSize = 0;
    std::size_t snapshotPoolHighWater = 0;  // most snapshot buffers ever in use at once
    std::size_t pendingHighWater = 0;       // most records ever waiting for the disk
    // Snapshots of CUDA state copied to the host on a side stream, and those copied on the
    // training stream because the device had no memory for the staging area.
    std::size_t snapshotSideStreamCopies = 0;
    std::size_t snapshotTrainingStreamCopies = 0;
};

class Recorder {
public:
    // Creates the tape file now, so a path that exists fails at once (RecorderError naming
    // the overwrite option) rather than after training started.
    explicit Recorder(const std::string& path, RecorderOptions options = {});
    // Waits for pending records; leaves the tape unsealed unless seal() was called.
    ~Recorder();
    Recorder(const Recorder&) = delete;
    Recorder& operator=(const Recorder&) = delete;

    // A proof-local contract for a custom optimizer, found by its name.
    void registerFunctionalOptimizer(std::shared_ptr<const optim::OptimizerContract> contract);

    // Checks the sealed-program convention and binds the parameter and buffer order.
    PreparedModel& prepare(torch::jit::Module module);
    // The same for an exported-graph step: reads the graph with the auditor's checks (allow-list,
    // random operations, signature against the tensors) and binds it to them.
    PreparedModel& prepare(ExportedModel model);
    // Resolves the optimizer's contract and binds its groups to the prepared model's order.
    PreparedOptimizer& prepare(optim::ContractOptimizer& optimizer);

    // The prepared optimizer's schedule (tape format 1.6, section 3.3), before the first
    // transaction: `options` may change from step to step, and every transaction records their
    // values; `schedulerJson` describes the scheduler an auditor recomputes them with ({"kind",
    // "arguments", "base"}; empty: the values are as recorded, checked against no schedule), and
    // `epoch` is its last_epoch now.
    void schedule(std::vector<std::string> options, std::string schedulerJson, std::uint64_t epoch);
    // The scheduler's last_epoch at the next optimizer step; it never goes back.
    void setScheduleEpoch(std::uint64_t epoch);
    // For a scheduler whose step reads a metric (ReduceLROnPlateau; tape format 1.9, section
    // 3.3): the metric each of its steps since the last optimizer step was given, in order, and
    // its own state now (best, num_bad_epochs, cooldown_counter); with setScheduleEpoch.
    void setScheduleInputs(std::vector<double> metrics, std::vector<double> state);
    // Opens a transaction for `batch` (nested transactions are refused). The first one
    // seals the program and writes the root record and the first snapshot.
    Transaction transaction(std::vector<at::Tensor> batch, OverlapPolicy overlap = OverlapPolicy::Unchecked);
    // Gradient accumulation (tape format 1.7, section 5.4): one optimizer step over several
    // micro-batches, each run through forward() and backward() in order before the step.
    Transaction transaction(std::vector<std::vector<at::Tensor>> microBatches, OverlapPolicy overlap = OverlapPolicy::Unchecked);
    // With a dataset commitment: the committed sample index of each row of the open
    // transaction's batch, one list per micro-batch. Throws RecorderError naming the row whose
    // tensors are not that sample's (as the commitment's digest has it), or an index the
    // commitment does not hold; a transaction without them cannot step.
    void samples(std::vector<std::vector<std::uint64_t>> indices);
    // Runs the prepared model's training_step on the open transaction's batch (its next
    // micro-batch); refuses a model that was not prepared ("pass it through prepare() first").
    at::Tensor forward(const torch::jit::Module& model);
    // Runs the prepared exported-graph step on the open transaction's batch: its loss, then its
    // further outputs (the model's output).
    std::vector<at::Tensor> forwardExported();
    // Differentiates the loss inside a transaction, scaled as `scale` says (accumulation's
    // `loss / micro-batches`), refusing gradients left from before (the replay starts from
    // zero; later micro-batches add to the earlier ones') and marking the gradients the step
    // must then apply unchanged.
    void backward(const at::Tensor& loss, LossScale scale = {});
    // The same checks around a frontend's own autograd call (Python's torch.autograd.backward
    // of the loss scaled by `scale`).
    void backward(const std::function<void()>& differentiate, LossScale scale = {}, bool gradScaled = false);
    // Between backward() and the optimizer step: torch.nn.utils.clip_grad_norm_ or
    // clip_grad_value_ over every prepared parameter's gradient, applied here and recorded in the
    // transaction (tape format 1.7, section 5.1), so the replay applies it too. `foreach` unset
    // resolves as torch does. clipGradNorm returns the total norm, as torch's does.
    at::Tensor clipGradNorm(double maxNorm, double normType = 2.0, bool errorIfNonfinite = false, std::optional<bool> foreach = std::nullopt);
    void clipGradValue(double clipValue, std::optional<bool> foreach = std::nullopt);

    // torch.amp.GradScaler (tape format 1.8, section 5.6), declared before the first
    // transaction: its rule and the state the first transaction uses. From then on the
    // recorder keeps the scale as torch's scaler.update() moves it after every step: each
    // backward() multiplies its loss by the transaction's scale (the function form: the
    // frontend's own call does, and says so with `gradScaled`), unscaleGradients() divides the
    // gradients by it, and the optimizer step unscales them if that was not done and is
    // skipped, recorded with no update, when they held an inf or NaN.
    void declareGradScaler(GradScalerDeclaration declaration);
    // The state the open transaction uses (the declared one, moved by the rule after each step).
    GradScalerState gradScalerState() const;
    // The training loop's own scaler state at this transaction: refused unless it is
    // gradScalerState(), the one the tape will record and the auditor's rule gives.
    void checkGradScalerState(const GradScalerState& state) const;
    // GradScaler.unscale_(optimizer): recorded like clipping; whether an inf or NaN was found.
    bool unscaleGradients();
    // Whether the open (or last) transaction's step was skipped for an inf or NaN.
    bool stepSkipped() const;

    // Waits for every pending record, then writes the seal. Throws the first write error.
    void seal();

    RecorderStatistics statistics() const;
    // The digest of the last record written (after seal(): the tape's chain head).
    Digest chainHead() const;
    const std::string& path() const;

private:
    friend class PreparedOptimizer;
    friend class Transaction;
    struct Impl;
    void step(PreparedOptimizer& optimizer);
    at::Tensor transformGradients(GradientTransform transform);
    // Ends the open transaction; what it changed outside the tape, if anything (empty: nothing).
    std::string endTransaction();
    std::unique_ptr<Impl> impl_;
};

}  // namespace zkdv
