#include "zkdv/provenance/weight_match.h"

#include <algorithm>

#include "zkdv/tape/state_digest.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {

// Throws Error (not FormatError, which a scan would take for a corrupt record) when the names
// match ambiguously.
NameMapping mappingFor(const RootRecord& root, const ModelCheckpoint& model)
{
    std::vector<std::string> layout;
    for (const TensorSpec& spec : root.parameters)
        layout.push_back(spec.name);
    for (const TensorSpec& spec : root.buffers)
        layout.push_back(spec.name);
    return chooseNameMapping(layout, model.names());
}

// Collects what matchWeights needs in one scan: the root, where the snapshots are, the last
// transaction's state digest, and the comparison of the one snapshot asked for.
class WeightMatchVisitor : public TapeVisitor {
public:
    WeightMatchVisitor(const ModelCheckpoint& model, std::optional<std::uint64_t> target, bool requireBuffers)
        : model_(model), target_(target), requireBuffers_(requireBuffers)
    {
    }

    void onRoot(const RootRecord& root, const RecordLocation&) override { root_ = root; }

    void onSnapshot(const SnapshotRecord& snapshot, const RecordLocation&) override
    {
        snapshots.push_back(snapshot.beforeTransaction);
        if (!target_ || snapshot.beforeTransaction != *target_ || !root_)
            return;
        // Chosen only here, so that a tape without the state asked for is refused for that.
        mapping = mappingFor(*root_, model_);
        std::vector<StateTensor> state;
        for (std::size_t i = 0; i < root_->parameters.size(); ++i)
            state.push_back(stateTensor(root_->parameters[i], false, snapshot.parameters[i]));
        for (std::size_t i = 0; i < root_->buffers.size(); ++i)
            state.push_back(stateTensor(root_->buffers[i], true, snapshot.buffers[i]));
        comparison = compareWeights(state, model_, mapping, requireBuffers_);
    }

    void onTransaction(const TransactionRecord& transaction, const RecordLocation&) override { lastStateDigest = transaction.stateDigest; }

    static StateTensor stateTensor(const TensorSpec& spec, bool buffer, const TensorView* values)
    {
        return StateTensor{spec.name, buffer, spec.dtype, spec.shape, values};
    }

    NameMapping mapping;
    std::vector<std::uint64_t> snapshots;
    std::optional<std::vector<WeightComparison>> comparison;
    std::optional<Digest> lastStateDigest;  // of the last transaction read

private:
    const ModelCheckpoint& model_;
    std::optional<std::uint64_t> target_;
    bool requireBuffers_;
    std::optional<RootRecord> root_;
};

std::string snapshotList(const std::vector<std::uint64_t>& snapshots)
{
    if (snapshots.empty())
        return "it holds none";
    std::string text = "it holds snapshots ";
    for (std::size_t i = 0; i < snapshots.size(); ++i) {
        if (i == 8 && snapshots.size() > 10) {
            text += ", … " + std::to_string(snapshots.back()) + " (" + std::to_string(snapshots.size()) + " in all)";
            break;
        }
        text += (i ? ", " : "") + std::to_string(snapshots[i]);
    }
    return text;
}

TapeSummary scanOrRefuse(const std::string& path, TapeVisitor& visitor, ProgressSink* progress)
{
    ScanOptions options;
    options.progress = progress;
    TapeSummary summary = scanTape(path, &visitor, options);
    if (summary.status == TapeStatus::Corrupt)
        throw WeightMatchUnavailable("the tape is corrupt (" + (summary.problem ? summary.problem->describe() : std::string("no problem named")) +
                                     "): its states are not evidence; zkdv-audit verify says more");
    if (!summary.root)
        throw WeightMatchUnavailable("the tape ends before its root record");
    return summary;
}

// Why the state digest of the tape's final state cannot be computed from a model's
// parameters alone, or "" when it can: the digest (tape format section 8) covers buffers and
// optimizer state too, so only a model without buffers trained by an optimizer that keeps no
// state (SGD without momentum) has a final state of parameters alone.
std::string digestFromParametersProblem(const RootRecord& root)
{
    if (!root.buffers.empty())
        return "the model has " + std::to_string(root.buffers.size()) + " buffer(s), which the state digest covers and a model file need not hold";
    if (root.optimizerContract != "SGD")
        return "the optimizer " + root.optimizerContract + " keeps state (tape format 6.1) that the state digest covers and a model file does not hold";
    if (root.optimizerSchedule && root.optimizerSchedule->schedules("momentum"))
        return "the schedule moves SGD's momentum, so its momentum buffers may be part of the state digest";
    for (const OptimizerGroup& group : root.optimizerGroups) {
        const nlohmann::json options = parseUntrustedJson(group.optionsJson, "optimizer options");
        auto it = options.find("momentum");
        if (it != options.end() && !(it->is_number() && it->get<double>() == 0.0))
            return "SGD with momentum keeps momentum buffers (tape format 6.1), which the state digest covers and a model file does not hold";
    }
    return {};
}

}  // namespace

std::string_view weightReferenceName(WeightReference reference)
{
    return reference == WeightReference::Snapshot ? "snapshot" : "final-state-digest";
}

bool WeightMatch::equal() const
{
    return failing() == 0 && (reference == WeightReference::Snapshot || (recordedDigest && modelDigest && *recordedDigest == *modelDigest));
}

std::uint64_t WeightMatch::failing() const
{
    return static_cast<std::uint64_t>(std::count_if(tensors.begin(), tensors.end(), [](const WeightComparison& c) { return c.fails; }));
}

WeightMatch matchWeights(const std::string& tapePath, const ModelCheckpoint& model, const WeightMatchRequest& request)
{
    WeightMatchVisitor first(model, request.final ? std::nullopt : std::optional<std::uint64_t>(request.snapshot), request.requireBuffers);
    TapeSummary summary = scanOrRefuse(tapePath, first, request.progress);
    WeightMatch match;
    match.tapeStatus = std::string(tapeStatusName(summary.status));
    match.transactions = summary.transactionCount;
    const RootRecord& root = *summary.root;

    if (!request.final) {
        if (!first.comparison)
            throw WeightMatchUnavailable("the tape holds no snapshot before transaction " + std::to_string(request.snapshot) + "; " +
                                         snapshotList(first.snapshots));
        match.beforeTransaction = request.snapshot;
        match.finalState = summary.finalStateOnTape && request.snapshot == summary.transactionCount && summary.complete();
        match.mapping = first.mapping;
        match.tensors = std::move(*first.comparison);
        return match;
    }

    if (!summary.complete())
        throw WeightMatchUnavailable("the tape is " + match.tapeStatus + ", so its final state is not known (the recorder may not have finished); " +
                                     "--snapshot N compares with a snapshot it holds");
    match.beforeTransaction = summary.transactionCount;
    match.finalState = true;
    if (summary.finalStateOnTape) {
        WeightMatchVisitor second(model, summary.transactionCount, request.requireBuffers);
        const TapeSummary again = scanOrRefuse(tapePath, second, request.progress);
        if (!second.comparison || again.chainHead != summary.chainHead)
            throw WeightMatchUnavailable("the final snapshot could not be read again: the tape changed while it was read");
        match.mapping = second.mapping;
        match.tensors = std::move(*second.comparison);
        return match;
    }

    // A tape of format 1.0–1.4 whose transaction count is off the snapshot interval: its final
    // state is only in the last transaction's state digest, if that check was drawn.
    const std::string prefix = "the tape (format 1." + std::to_string(summary.formatMinor) + ", " + std::to_string(summary.transactionCount) +
                               " transactions, snapshots every " + std::to_string(root.snapshotInterval) + ") holds no snapshot of its final state";
    if (summary.transactionCount == 0)
        throw WeightMatchUnavailable(prefix);
    if (!first.lastStateDigest)
        throw WeightMatchUnavailable(prefix + ", and its last transaction carries no state digest");
    const std::string problem = digestFromParametersProblem(root);
    if (!problem.empty())
        throw WeightMatchUnavailable(prefix + ", and its last transaction's state digest cannot be computed from a model's weights: " + problem);

    match.reference = WeightReference::FinalStateDigest;
    match.mapping = mappingFor(root, model);
    match.recordedDigest = first.lastStateDigest;
    std::vector<StateTensor> layout;
    for (const TensorSpec& spec : root.parameters)
        layout.push_back(StateTensor{spec.name, false, spec.dtype, spec.shape, nullptr});
    match.tensors = compareWeights(layout, model, match.mapping, request.requireBuffers);
    if (match.failing() == 0) {
        StateDigest digest;
        for (const TensorSpec& spec : root.parameters) {
            const TensorView& tensor = *model.find(match.mapping.modelName(spec.name))->view;
            digest.add(parameterTensorName(spec.name), tensor.dtype, tensor.shape, tensor.data);
        }
        match.modelDigest = digest.finish();
    }
    return match;
}

}  // namespace zkdv
