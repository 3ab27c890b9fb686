#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>

#include <nlohmann/json.hpp>

#include "case_access.h"
#include "command_runner.h"
#include "commands.h"
#include "terminal_progress.h"
#include "zkdv/replay/divergence_explain.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {

namespace {

nlohmann::json finite(double value) { return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(); }

std::string number(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", value);
    return text;
}

std::string shapeText(const std::vector<std::int64_t>& shape)
{
    std::string text = "[";
    for (std::size_t i = 0; i < shape.size(); ++i)
        text += (i ? "," : "") + std::to_string(shape[i]);
    return text + "]";
}

std::string sideText(const DivergenceExplanation& e, int s)
{
    const ExplainSide& side = e.sides[s];
    return side.toString() + " (" + e.devices[s] + ", " + std::to_string(e.intraOpThreads[s]) + " intra-op thread" +
           (e.intraOpThreads[s] == 1 ? "" : "s") + ", " + std::string(kernelChoiceName(side.kernels.value_or(KernelChoice::Recorded))) +
           " kernels)";
}

std::string where(const ExplainedNode& node)
{
    std::string text = node.op + " (" + node.phase;
    for (std::size_t k = node.inside.size(); k-- > 0;)
        text += ", inside " + node.inside[k];
    return text + ")";
}

nlohmann::json nodeJson(const ExplainedNode& node)
{
    return {{"node", node.node},
            {"op", node.op},
            {"phase", node.phase},
            {"depth", node.depth},
            {"inside", node.inside},
            {"shape", node.shape},
            {"outputs", node.outputs},
            {"agreement", std::string(nodeAgreementName(node.agreement))},
            {"max_abs", finite(node.maxAbs)},
            {"relative_l2", finite(node.relativeL2)},
            {"max_ulp", finite(node.maxUlp)},
            {"note", node.note.empty() ? nlohmann::json() : nlohmann::json(node.note)}};
}

nlohmann::json explanationJson(const DivergenceExplanation& e, const std::vector<std::size_t>& rows)
{
    nlohmann::json sides = nlohmann::json::array();
    for (int s = 0; s < 2; ++s)
        sides.push_back({{"side", e.sides[s].toString()},
                         {"device", e.devices[s]},
                         {"intra_op_threads", e.intraOpThreads[s]},
                         {"kernels", std::string(kernelChoiceName(e.sides[s].kernels.value_or(KernelChoice::Recorded)))},
                         {"verdict", std::string(verdictName(e.verdicts[s]))},
                         {"detail", e.details[s]},
                         {"traced", e.traced[s]},
                         {"omitted", e.omitted[s].empty() ? nlohmann::json() : nlohmann::json(e.omitted[s])}});
    nlohmann::json table = nlohmann::json::array();
    for (std::size_t row : rows)
        table.push_back(nodeJson(e.nodes[row]));
    return {{"tape", e.tapeId},
            {"transaction", e.index},
            {"sides", sides},
            {"granularity", e.granularity},
            {"tolerance", e.tolerance.toString()},
            {"compared", e.nodes.size()},
            {"same", e.same},
            {"rounding", e.rounding},
            {"unmeasured", e.unmeasured},
            {"beyond", e.beyond},
            {"diverged", e.diverged()},
            {"first", e.first ? nodeJson(e.nodes[*e.first]) : nlohmann::json()},
            {"first_difference", e.firstDifference ? nodeJson(e.nodes[*e.firstDifference]) : nlohmann::json()},
            {"parted", e.parted.empty() ? nlohmann::json() : nlohmann::json(e.parted)},
            {"rows", table}};
}

void printText(const DivergenceExplanation& e, const std::vector<std::size_t>& rows)
{
    std::printf("transaction %llu of tape %lld replayed on two sides:\n", static_cast<unsigned long long>(e.index), static_cast<long long>(e.tapeId));
    for (int s = 0; s < 2; ++s)
        std::printf("  side %c: %s: %s against the tape\n", s == 0 ? 'A' : 'B', sideText(e, s).c_str(), std::string(verdictName(e.verdicts[s])).c_str());
    std::printf("granularity: %s\n", e.granularity == "operator"
                                         ? "operator (every dispatched operator call of the step, and the loss, gradients and updates between its parts)"
                                         : "stage (the loss, each parameter's gradient and update)");
    std::printf("compared %zu calls under tolerance %s: %llu same, %llu rounding, %llu beyond rounding%s\n", e.nodes.size(),
                e.tolerance.toString().c_str(), static_cast<unsigned long long>(e.same), static_cast<unsigned long long>(e.rounding),
                static_cast<unsigned long long>(e.beyond),
                e.unmeasured ? (", " + std::to_string(e.unmeasured) + " differing past the value cap").c_str() : "");
    for (int s = 0; s < 2; ++s)
        if (!e.omitted[s].empty())
            std::printf("side %c: %s\n", s == 0 ? 'A' : 'B', e.omitted[s].c_str());
    if (e.first) {
        const ExplainedNode& node = e.nodes[*e.first];
        std::printf("first beyond rounding: call %llu, %s: max abs diff %s, relative L2 %s, max ULP %s, shape %s%s\n",
                    static_cast<unsigned long long>(node.node), where(node).c_str(), number(node.maxAbs).c_str(), number(node.relativeL2).c_str(),
                    number(node.maxUlp).c_str(), shapeText(node.shape).c_str(), node.note.empty() ? "" : ("; " + node.note).c_str());
        if (e.firstDifference && *e.firstDifference != *e.first) {
            const ExplainedNode& before = e.nodes[*e.firstDifference];
            std::printf("  (the first difference at all, within rounding: call %llu, %s, max ULP %s)\n", static_cast<unsigned long long>(before.node),
                        where(before).c_str(), number(before.maxUlp).c_str());
        }
    } else if (e.parted.empty()) {
        std::printf("no call differs beyond rounding%s\n", e.rounding || e.unmeasured ? "" : ": every output bit for bit");
    }
    if (!e.parted.empty())
        std::printf("the sides call different operators: %s\n", e.parted.c_str());
    if (rows.empty())
        return;
    int width = 20;
    for (std::size_t row : rows)
        width = std::max(width, static_cast<int>(std::min<std::size_t>(2 * e.nodes[row].depth + e.nodes[row].op.size(), 72)));
    std::printf("\n%6s  %-9s  %-*s  %-16s  %10s  %10s  %s\n", "call", "phase", width, "op", "shape", "rel L2", "max ULP", "agreement");
    for (std::size_t row : rows) {
        const ExplainedNode& node = e.nodes[row];
        const std::string op = std::string(2 * node.depth, ' ') + node.op;
        const bool same = node.agreement == NodeAgreement::Same;
        std::printf("%6llu  %-9s  %-*s  %-16s  %10s  %10s  %s%s\n", static_cast<unsigned long long>(node.node), node.phase.c_str(), width, op.c_str(),
                    shapeText(node.shape).c_str(), same ? "0" : number(node.relativeL2).c_str(), same ? "0" : number(node.maxUlp).c_str(),
                    std::string(nodeAgreementName(node.agreement)).c_str(), e.first && row == *e.first ? "   <== first beyond rounding" : "");
    }
}

}  // namespace

int runExplain(int argc, char** argv)
{
    ArgumentParser parser(
        "zkdv-audit explain CASE TX --devices A,B [--tolerance T] [--tape ID] [--all] [--json]",
        "Where a divergence starts: replays transaction TX (from its segment's snapshot, as a replay does)\n"
        "on two sides, traces every operator the step calls with its outputs, and names the first\n"
        "operator whose outputs differ between the sides beyond rounding, with the sizes of the\n"
        "difference (max abs, relative L2, max ULP), and the calls up to and a few past it.\n"
        "A side: cpu | cuda | cuda:N, a cpu side with modifiers @threads=N (libtorch's intra-op\n"
        "threads) and @kernels=recorded|host (kernel settings, as replay --kernels), e.g.\n"
        "--devices cpu,cpu@threads=2 or --devices cpu,cuda:0. Plain cpu replays as zkdv-audit replay.\n"
        "The program runs only in replay workers; nothing is stored in the case (docs/replay.md,\n"
        "\"Explain (where a divergence starts)\").\n"
        "Exit 0 when no operator differs beyond rounding, 1 when one does (or the sides call\n"
        "different operators), 2 on usage errors, an unreadable case or a device that is not present.");
    parser.setPositionals("CASE TX", "the audit case (*.zkaudit) and the transaction's index", 2, true);
    parser.addOption("devices", "A,B", "the two sides (required)");
    parser.addOption("tolerance", "T", "what counts as rounding: ulp=N,rel=X (defaults: " + Tolerance::defaults().toString() + ")");
    parser.addOption("tape", "ID", "the tape when the case holds several");
    parser.addFlag("all", "list every compared call, not only those up to and a few past the first difference");
    parser.addFlag("json", "print JSON on stdout (docs/cli-json.md)");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("explain", parser, argc, argv, [&]() {
        const std::vector<std::string>& positionals = parser.positionals();
        if (positionals.size() != 2)
            throw UsageError("explain takes CASE and TX, the transaction's index");
        ExplainRequest request;
        if (!parser.has("devices"))
            throw UsageError("--devices A,B is required (e.g. cpu,cpu@threads=2 or cpu,cuda:0)");
        try {
            const auto [a, b] = ExplainSide::parsePair(parser.value("devices"));
            request.sides[0] = a;
            request.sides[1] = b;
            request.tolerance = parser.has("tolerance") ? Tolerance::parse(parser.value("tolerance")) : Tolerance::defaults();
        } catch (const Error& error) {
            throw UsageError(error.what());
        }
        const std::string& index = positionals[1];
        if (index.empty() || index.size() > 19 || index.find_first_not_of("0123456789") != std::string::npos)
            throw UsageError("TX must be a transaction index, not \"" + index + "\"");
        request.index = std::stoull(index);
        const std::string& casePath = positionals.front();
        if (access(casePath.c_str(), F_OK) != 0)
            throw UsageError("case " + casePath + " does not exist; create it with `zkdv-audit ingest TAPE --case " + casePath + "`");
        const std::unique_ptr<CaseStore> store = openCaseForReading(casePath);
        request.tapeId = static_cast<std::int64_t>(parser.unsignedValue("tape", 0));
        if (request.tapeId == 0) {
            const std::vector<CaseTape> tapes = store->tapes();
            if (tapes.size() != 1)
                throw UsageError("case " + casePath + " holds " + std::to_string(tapes.size()) + " tapes; choose one with --tape ID");
            request.tapeId = tapes.front().id;
        }
        TerminalProgress progress(!parser.has("quiet"));
        request.progress = &progress;
        DivergenceExplanation explanation;
        try {
            explanation = explainDivergence(*store, request);
        } catch (const ReplayError& error) {
            progress.finish();
            throw UsageError(error.what());
        }
        progress.finish();
        std::vector<std::size_t> rows;
        if (parser.has("all")) {
            rows.resize(explanation.nodes.size());
            std::iota(rows.begin(), rows.end(), std::size_t(0));
        } else {
            rows = explanationRows(explanation);
        }
        if (parser.has("json"))
            std::printf("%s\n", toJsonText(explanationJson(explanation, rows), 2).c_str());
        else
            printText(explanation, rows);
        return explanation.diverged() ? kExitCheckFailed : kExitOk;
    });
}

}  // namespace zkdv::cli
