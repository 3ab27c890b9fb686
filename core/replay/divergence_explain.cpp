#include "zkdv/replay/divergence_explain.h"

#include <algorithm>
#include <cstdio>

#include "single_transaction_replay.h"
#include "zkdv/audit/divergence.h"
#include "zkdv/replay/replay_device_check.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/replay/replay_worker_probe.h"
#include "zkdv/store/case_store.h"

namespace zkdv {

namespace {

constexpr int kMostThreads = 1024;

bool allDigits(const std::string& text) { return !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; }); }

std::string shapeText(const std::vector<std::int64_t>& shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? "," : "") + std::to_string(shape[i]);
    return text + "]";
}

// A trace as a forest: which calls each call made, which the step made itself.
struct CallTree {
    std::vector<std::vector<std::size_t>> children;
    std::vector<std::size_t> top;

    explicit CallTree(const std::vector<TracedOperator>& ops) : children(ops.size())
    {
        std::vector<std::size_t> open;
        for (std::size_t i = 0; i < ops.size(); ++i) {
            // A depth deeper than the calls open (a worker is untrusted) counts as one level deeper.
            while (open.size() > ops[i].depth)
                open.pop_back();
            (open.empty() ? top : children[open.back()]).push_back(i);
            open.push_back(i);
        }
    }
};

bool sameCalls(const std::vector<TracedOperator>& a, const std::vector<std::size_t>& la, const std::vector<TracedOperator>& b,
               const std::vector<std::size_t>& lb)
{
    if (la.size() != lb.size())
        return false;
    for (std::size_t k = 0; k < la.size(); ++k)
        if (a[la[k]].name != b[lb[k]].name || a[la[k]].phase != b[lb[k]].phase)
            return false;
    return true;
}

class TraceComparison {
public:
    TraceComparison(const std::vector<TracedOperator>& a, const std::vector<TracedOperator>& b, const Tolerance& tolerance,
                    DivergenceExplanation& out)
        : a_(a), b_(b), treeA_(a), treeB_(b), tolerance_(tolerance), out_(out)
    {
    }

    void run()
    {
        const std::vector<std::size_t>& la = treeA_.top;
        const std::vector<std::size_t>& lb = treeB_.top;
        const std::size_t common = std::min(la.size(), lb.size());
        for (std::size_t k = 0; k < common; ++k) {
            const TracedOperator& x = a_[la[k]];
            const TracedOperator& y = b_[lb[k]];
            if (x.name != y.name || x.phase != y.phase) {
                out_.parted = "the sides part at the step's call " + std::to_string(k) + " (" + x.phase + "): side A calls " + x.name +
                              ", side B " + (y.phase == x.phase ? "" : y.phase + " ") + y.name;
                return;
            }
            compare(la[k], lb[k]);
        }
        if (la.size() != lb.size())
            out_.parted = "side A's step makes " + std::to_string(la.size()) + " calls, side B's " + std::to_string(lb.size()) +
                          "; they agree on the first " + std::to_string(common);
    }

private:
    void compare(std::size_t ia, std::size_t ib)
    {
        const TracedOperator& x = a_[ia];
        const TracedOperator& y = b_[ib];
        ExplainedNode node;
        node.node = ia;
        node.finished = x.finished;
        node.depth = static_cast<std::uint32_t>(inside_.size());
        node.op = x.name;
        node.phase = x.phase;
        node.inside = inside_;
        node.outputs = x.outputs.size();
        if (!x.outputs.empty())
            node.shape = x.outputs.front().shape;
        judge(x, y, node);
        const std::size_t at = out_.nodes.size();
        out_.nodes.push_back(std::move(node));
        if (treeA_.children[ia].empty() && treeB_.children[ib].empty())
            return;
        if (!sameCalls(a_, treeA_.children[ia], b_, treeB_.children[ib])) {
            out_.nodes[at].note += std::string(out_.nodes[at].note.empty() ? "" : "; ") + "the calls inside it differ between the sides (" +
                                   std::to_string(treeA_.children[ia].size()) + " and " + std::to_string(treeB_.children[ib].size()) +
                                   "): compared at this level";
            return;
        }
        inside_.push_back(x.name);
        for (std::size_t k = 0; k < treeA_.children[ia].size(); ++k)
            compare(treeA_.children[ia][k], treeB_.children[ib][k]);
        inside_.pop_back();
    }

    void judge(const TracedOperator& x, const TracedOperator& y, ExplainedNode& node) const
    {
        auto worse = [&](NodeAgreement agreement, const std::string& note = {}) {
            node.agreement = std::max(node.agreement, agreement);
            if (!note.empty() && node.note.find(note) == std::string::npos)
                node.note += (node.note.empty() ? "" : "; ") + note;
        };
        if (x.outputs.size() != y.outputs.size()) {
            worse(NodeAgreement::Beyond, "side A gives " + std::to_string(x.outputs.size()) + " outputs, side B " + std::to_string(y.outputs.size()));
            return;
        }
        for (std::size_t k = 0; k < x.outputs.size(); ++k) {
            const TracedOutput& p = x.outputs[k];
            const TracedOutput& q = y.outputs[k];
            const std::string which = x.outputs.size() > 1 ? "output " + std::to_string(k) + ": " : std::string();
            if (p.dtype != q.dtype || p.shape != q.shape) {
                worse(NodeAgreement::Beyond, which + "side A gives " + std::string(dtypeName(p.dtype)) + " " + shapeText(p.shape) + ", side B " +
                                                 std::string(dtypeName(q.dtype)) + " " + shapeText(q.shape));
                continue;
            }
            if (p.kind == TracedOutput::Kind::Opaque || q.kind == TracedOutput::Kind::Opaque)
                continue;  // uninitialised memory, or not a tensor a tape can hold
            if (p.kind != TracedOutput::Kind::Values || q.kind != TracedOutput::Kind::Values) {
                if (p.digest != q.digest)
                    worse(NodeAgreement::Unmeasured, which + "differs; past the value cap only digests came back");
                continue;
            }
            const std::uint64_t count = p.bytes.size() / dtypeSize(p.dtype);
            const DivergenceMetrics metrics = computeDivergence(p.dtype, count, ByteSpan(p.bytes), ByteSpan(q.bytes));
            if (metrics.bitwiseEqual)
                continue;
            node.maxAbs = std::max(node.maxAbs, metrics.maxAbs);
            node.relativeL2 = std::max(node.relativeL2, metrics.relativeL2);
            node.maxUlp = std::max(node.maxUlp, metrics.maxUlp);
            if (!isFloatingPoint(p.dtype))
                worse(NodeAgreement::Beyond, which + std::string(dtypeName(p.dtype)) + " values differ (integers do not round)");
            else if (metrics.finiteMismatch())
                worse(NodeAgreement::Beyond, which + std::to_string(metrics.nanMismatches) + " NaN and " + std::to_string(metrics.infMismatches) +
                                                 " Inf mismatches");
            else
                worse(tolerance_.judge(metrics) == Verdict::WithinTolerance ? NodeAgreement::Rounding : NodeAgreement::Beyond);
        }
    }

    const std::vector<TracedOperator>& a_;
    const std::vector<TracedOperator>& b_;
    CallTree treeA_, treeB_;
    const Tolerance& tolerance_;
    DivergenceExplanation& out_;
    std::vector<std::string> inside_;
};

}  // namespace

ExplainSide ExplainSide::parse(const std::string& text)
{
    const std::string grammar = " (a side is cpu, cuda or cuda:N; a cpu side may add @threads=N and @kernels=recorded|host)";
    ExplainSide side;
    std::vector<std::string> parts;
    std::size_t start = 0;
    for (;;) {
        const std::size_t at = text.find('@', start);
        parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
        if (at == std::string::npos)
            break;
        start = at + 1;
    }
    side.device = parts.front();
    const bool cuda = side.device == "cuda" || (side.device.rfind("cuda:", 0) == 0 && allDigits(side.device.substr(5)) && side.device.size() <= 9);
    if (side.device != "cpu" && !cuda)
        throw ExplainSideError("side \"" + text + "\": unknown device \"" + side.device + "\"" + grammar);
    for (std::size_t k = 1; k < parts.size(); ++k) {
        const std::string& modifier = parts[k];
        const std::size_t equals = modifier.find('=');
        const std::string key = modifier.substr(0, equals);
        const std::string value = equals == std::string::npos ? std::string() : modifier.substr(equals + 1);
        if (side.device != "cpu")
            throw ExplainSideError("side \"" + text + "\": @" + key + " applies to cpu sides only" + grammar);
        if (key == "threads") {
            if (side.intraOpThreads != 0)
                throw ExplainSideError("side \"" + text + "\": threads given twice");
            if (!allDigits(value) || value.size() > 4 || std::stoi(value) < 1 || std::stoi(value) > kMostThreads)
                throw ExplainSideError("side \"" + text + "\": threads must be a number from 1 to " + std::to_string(kMostThreads) + ", not \"" +
                                       value + "\"");
            side.intraOpThreads = std::stoi(value);
        } else if (key == "kernels") {
            if (side.kernels)
                throw ExplainSideError("side \"" + text + "\": kernels given twice");
            side.kernels = parseKernelChoice(value);
            if (!side.kernels)
                throw ExplainSideError("side \"" + text + "\": kernels must be recorded or host, not \"" + value + "\"");
        } else {
            throw ExplainSideError("side \"" + text + "\": unknown modifier \"" + modifier + "\"" + grammar);
        }
    }
    return side;
}

std::pair<ExplainSide, ExplainSide> ExplainSide::parsePair(const std::string& text)
{
    const std::size_t comma = text.find(',');
    if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
        throw ExplainSideError("--devices takes two sides separated by a comma (cpu,cpu@threads=2 or cpu,cuda:0), not \"" + text + "\"");
    return {parse(text.substr(0, comma)), parse(text.substr(comma + 1))};
}

std::string ExplainSide::toString() const
{
    std::string text = device;
    if (intraOpThreads > 0)
        text += "@threads=" + std::to_string(intraOpThreads);
    if (kernels)
        text += "@kernels=" + std::string(kernelChoiceName(*kernels));
    return text;
}

std::string_view nodeAgreementName(NodeAgreement agreement)
{
    switch (agreement) {
    case NodeAgreement::Same: return "same";
    case NodeAgreement::Rounding: return "rounding";
    case NodeAgreement::Unmeasured: return "unmeasured";
    case NodeAgreement::Beyond: return "beyond";
    }
    return "?";
}

DivergenceExplanation compareOperatorTraces(const std::vector<TracedOperator>& a, const std::vector<TracedOperator>& b, const Tolerance& tolerance)
{
    DivergenceExplanation out;
    out.tolerance = tolerance;
    out.traced[0] = a.size();
    out.traced[1] = b.size();
    auto operatorLevel = [](const std::vector<TracedOperator>& ops) {
        return std::any_of(ops.begin(), ops.end(), [](const TracedOperator& op) { return op.phase != "stage"; });
    };
    out.granularity = operatorLevel(a) && operatorLevel(b) ? "operator" : "stage";
    TraceComparison(a, b, tolerance, out).run();
    for (std::size_t i = 0; i < out.nodes.size(); ++i) {
        const ExplainedNode& node = out.nodes[i];
        switch (node.agreement) {
        case NodeAgreement::Same: ++out.same; break;
        case NodeAgreement::Rounding: ++out.rounding; break;
        case NodeAgreement::Unmeasured: ++out.unmeasured; break;
        case NodeAgreement::Beyond: ++out.beyond; break;
        }
        // Execution order: a call counts when it returns, so the innermost call that differs
        // comes before the calls around it.
        if (node.agreement == NodeAgreement::Beyond && (!out.first || node.finished < out.nodes[*out.first].finished))
            out.first = i;
        if (node.agreement != NodeAgreement::Same && (!out.firstDifference || node.finished < out.nodes[*out.firstDifference].finished))
            out.firstDifference = i;
    }
    return out;
}

std::vector<std::size_t> explanationRows(const DivergenceExplanation& explanation, std::size_t after)
{
    const std::vector<ExplainedNode>& nodes = explanation.nodes;
    std::vector<std::size_t> rows;
    if (!explanation.first) {
        for (std::size_t i = 0; i < nodes.size() && rows.size() < after * 4; ++i)
            if (nodes[i].agreement != NodeAgreement::Same)
                rows.push_back(i);
        return rows;
    }
    const std::size_t target = *explanation.first;
    std::vector<bool> chain(nodes.size(), false);
    chain[target] = true;
    std::uint32_t depth = nodes[target].depth;
    for (std::size_t i = target; i-- > 0 && depth > 0;)
        if (nodes[i].depth < depth) {
            chain[i] = true;
            depth = nodes[i].depth;
        }
    std::size_t past = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (nodes[i].depth != 0 && !chain[i])
            continue;
        if (i > target && nodes[i].depth == 0 && ++past > after)
            break;
        rows.push_back(i);
    }
    return rows;
}

DivergenceExplanation explainDivergence(CaseStore& store, const ExplainRequest& request)
{
    const std::uint64_t length = singleTransactionSegmentLength(store, request.tapeId, request.index);
    // A CUDA side the replay workers cannot see is refused before side A replays for nothing.
    if (request.sides[0].device != "cpu" || request.sides[1].device != "cpu") {
        worker::WorkerHello hello;
        try {
            hello = probeReplayWorker(request.limits.startSeconds, request.workerPath);
        } catch (const Error& error) {
            throw ReplayError(error.what());
        }
        for (int s = 0; s < 2; ++s)
            if (request.sides[s].device != "cpu") {
                try {
                    checkReplayDevice(request.sides[s].device, hello.cudaDevices, hello.libtorchVersion, hello.cudaVersion);
                } catch (const Error& error) {
                    throw ReplayError(std::string("side ") + (s == 0 ? "A" : "B") + " (" + request.sides[s].toString() + "): " + error.what());
                }
            }
    }
    std::vector<TracedOperator> traces[2];
    SingleTransactionResult results[2];
    for (int s = 0; s < 2; ++s) {
        const ExplainSide& side = request.sides[s];
        const char* name = s == 0 ? "A" : "B";
        SingleTransactionReplay replay;
        replay.tapeId = request.tapeId;
        replay.index = request.index;
        replay.device = side.device;
        replay.intraOpThreads = side.intraOpThreads;
        replay.kernels = side.kernels.value_or(KernelChoice::Recorded);
        replay.traceOperators = true;
        // The trace's values, their copy in the outcome's frame, and the frame being written.
        replay.extraMemory = 3 * kMaxTracedValueBytes;
        replay.limits = request.limits;
        replay.workerPath = request.workerPath;
        replay.logSuffix = "explain-" + std::to_string(request.index) + "-" + (s == 0 ? "a" : "b");
        replay.progress = request.progress;
        replay.progressPhase = std::string("side ") + name + " (" + side.toString() + "): replaying";
        replay.progressBefore = static_cast<std::uint64_t>(s) * length;
        replay.progressTotal = 2 * length;
        try {
            results[s] = replaySingleTransaction(store, replay);
        } catch (const ReplayError& error) {
            throw ReplayError(std::string("side ") + name + " (" + side.toString() + "): " + error.what());
        }
        TransactionOutcome& outcome = results[s].outcome;
        if (outcome.operators.empty())
            throw ReplayError(std::string("side ") + name + " (" + side.toString() + ") traced no operator of transaction " +
                              std::to_string(request.index) + ": " + outcome.detail);
        traces[s] = std::move(outcome.operators);
    }
    if (request.progress)
        request.progress->report(2 * length, 2 * length, "comparing");
    DivergenceExplanation explanation = compareOperatorTraces(traces[0], traces[1], request.tolerance);
    explanation.tapeId = request.tapeId;
    explanation.index = request.index;
    for (int s = 0; s < 2; ++s) {
        explanation.sides[s] = request.sides[s];
        explanation.devices[s] = results[s].device;
        explanation.intraOpThreads[s] = results[s].intraOpThreads;
        explanation.verdicts[s] = results[s].outcome.verdict;
        explanation.details[s] = results[s].outcome.detail;
        explanation.omitted[s] = results[s].outcome.operatorsOmitted;
    }
    return explanation;
}

}  // namespace zkdv
