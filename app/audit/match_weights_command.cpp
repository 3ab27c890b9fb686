// zkdv-audit match-weights: whether a model file holds a state the tape records (its start,
// a snapshot, or the final state that was shipped), tensor by tensor.

#include <cstdio>
#include <string>

#include "command_runner.h"
#include "commands.h"
#include "terminal_progress.h"
#include "zkdv/provenance/model_checkpoint.h"
#include "zkdv/provenance/provenance_json.h"
#include "zkdv/provenance/weight_match.h"
#include "zkdv/tape/shape_text.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {

namespace {

std::string comparisonLine(const WeightComparison& c)
{
    const std::string name = c.tapeName.empty() ? c.modelName : c.tapeName;
    const std::string role = c.role.empty() ? "" : " (" + c.role + ")";
    const std::string renamed = !c.tapeName.empty() && !c.modelName.empty() && c.modelName != c.tapeName ? " [model: " + c.modelName + "]" : "";
    switch (c.finding) {
    case WeightFinding::Equal:
        return "equal     " + name + role + renamed;
    case WeightFinding::Unchecked:
        return "layout ok " + name + role + renamed + ": dtype and shape as the tape's; values through the state digest";
    case WeightFinding::ValuesDiffer: {
        char text[160];
        std::snprintf(text, sizeof text, "%llu of %llu elements differ, max abs diff %.9g%s", static_cast<unsigned long long>(c.differingElements),
                      static_cast<unsigned long long>(c.elements), c.maxAbsDiff,
                      c.nonFiniteDifferences ? (", " + std::to_string(c.nonFiniteDifferences) + " with NaN or infinity").c_str() : "");
        return "DIFFERS   " + name + role + renamed + ": " + text;
    }
    case WeightFinding::DtypeDiffers:
        return "DIFFERS   " + name + role + renamed + ": dtype " + c.tapeDtype + " on the tape, " + c.modelDtype + " in the model";
    case WeightFinding::ShapeDiffers:
        return "DIFFERS   " + name + role + renamed + ": shape " + shapeText(c.tapeShape) + " on the tape, " + shapeText(c.modelShape) + " in the model";
    case WeightFinding::Missing:
        return std::string(c.fails ? "MISSING   " : "missing   ") + name + role + ": not in the model" +
               (c.fails ? "" : " (a buffer: checkpoints may leave out non-persistent buffers; --require-buffers counts it)");
    case WeightFinding::Extra:
        return "EXTRA     " + name + ": in the model (" + c.modelDtype + " " + shapeText(c.modelShape) + "), not in the tape's layout";
    }
    return name;
}

std::string referenceText(const WeightMatch& match)
{
    if (match.reference == WeightReference::FinalStateDigest)
        return "the state digest the last transaction (" + std::to_string(match.beforeTransaction - 1) +
               ") recorded: the tape holds no snapshot of its final state, and its state is parameters alone";
    return std::string(match.finalState ? "the final snapshot" : "the snapshot") + " before transaction " + std::to_string(match.beforeTransaction) +
           (match.beforeTransaction == 0 ? " (the starting state)" : "");
}

}  // namespace

int runMatchWeights(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit match-weights TAPE (--snapshot N | --final) MODEL [--json] [--require-buffers] [--quiet]",
                          "Compares a model's weights (a .safetensors file, or a folder of them as Hugging Face\n"
                          "writes them) with a state the tape records, tensor by tensor and bit for bit:\n"
                          "--snapshot N the snapshot before transaction N (0: the starting weights), --final the\n"
                          "state after the last transaction (the final snapshot; for a tape of format 1.0-1.4\n"
                          "without one, the last transaction's state digest when the state is parameters alone).\n"
                          "Names follow the tape's layout; a common prefix (\"model.\") on one side is accepted\n"
                          "when only one such mapping fits, and reported. Exit 0 when every tensor is equal, 1\n"
                          "when one differs in dtype, shape or values, is missing or extra, 2 when the tape or\n"
                          "the model cannot be read or the tape does not hold the state asked for.");
    parser.setPositionals("TAPE MODEL", "the tape and the model file or folder", 2, true);
    parser.addOption("snapshot", "N", "compare with the snapshot before transaction N");
    parser.addFlag("final", "compare with the tape's final state");
    parser.addFlag("require-buffers", "a buffer the model does not hold counts as a difference");
    parser.addFlag("json", "print the result as JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("match-weights", parser, argc, argv, [&]() {
        const std::vector<std::string>& inputs = parser.positionals();
        if (inputs.size() > 2)
            throw UsageError("unexpected argument \"" + inputs[2] + "\"");
        if (parser.has("final") == parser.has("snapshot"))
            throw UsageError("give exactly one of --snapshot N and --final");
        WeightMatchRequest request;
        request.final = parser.has("final");
        if (!request.final)
            request.snapshot = parser.unsignedValue("snapshot", 0);
        request.requireBuffers = parser.has("require-buffers");
        const std::unique_ptr<ModelCheckpoint> model = ModelCheckpoint::open(inputs[1]);
        TerminalProgress progress(!parser.has("quiet"));
        request.progress = &progress;
        const WeightMatch match = matchWeights(inputs[0], *model, request);
        progress.finish();
        const bool equal = match.equal();
        if (parser.has("json")) {
            const nlohmann::json result = weightMatchJson(match, inputs[0], inputs[1], *model);
            std::printf("%s\n", toJsonText(result, 2).c_str());
            return equal ? kExitOk : kExitCheckFailed;
        }
        std::printf("tape  %s (%s, %llu transactions)\nmodel %s (%zu file(s)%s)\n", inputs[0].c_str(), match.tapeStatus.c_str(),
                    static_cast<unsigned long long>(match.transactions), inputs[1].c_str(), model->files().size(),
                    model->usedIndex() ? ", by model.safetensors.index.json" : "");
        std::printf("against %s\nnames: %s\n", referenceText(match).c_str(), match.mapping.describe().c_str());
        for (const WeightComparison& c : match.tensors)
            std::printf("  %s\n", comparisonLine(c).c_str());
        if (match.reference == WeightReference::FinalStateDigest) {
            std::printf("state digest recorded %s\n", toHex(*match.recordedDigest).c_str());
            std::printf("state digest of model %s\n", match.modelDigest ? toHex(*match.modelDigest).c_str() : "(not computed: a tensor differs in name, dtype or shape)");
        }
        std::string verdict = "the model holds exactly this state's weights";
        if (!equal && match.failing() > 0)
            verdict = std::to_string(match.failing()) + " tensor(s) differ, are missing or extra";
        else if (!equal)
            verdict = "the values differ from the recorded state digest (a digest covers every tensor at once, so none can be named)";
        std::printf("%s: %s\n", equal ? "EQUAL" : "DIFFERENT", verdict.c_str());
        return equal ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
