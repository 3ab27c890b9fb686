#include "zkdv/tape/resume_link.h"

#include <nlohmann/json.hpp>

#include "zkdv/tape/scheduled_option.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {
using nlohmann::json;

std::string describe(const TensorSpec& spec)
{
    std::string shape;
    for (std::int64_t dim : spec.shape)
        shape += (shape.empty() ? "" : ", ") + std::to_string(dim);
    return spec.name + " " + std::string(dtypeName(spec.dtype)) + " [" + shape + "]";
}

std::string layoutProblem(const std::vector<TensorSpec>& before, const std::vector<TensorSpec>& after, const char* kind)
{
    for (std::size_t i = 0; i < std::max(before.size(), after.size()); ++i) {
        const bool same = i < before.size() && i < after.size() && before[i].name == after[i].name && before[i].shape == after[i].shape &&
                          before[i].dtype == after[i].dtype;
        if (!same)
            return std::string("its ") + kind + " " + std::to_string(i) + " is " + (i < after.size() ? describe(after[i]) : "absent") +
                   ", the previous tape's " + (i < before.size() ? describe(before[i]) : "absent") + ": not the same model";
    }
    return {};
}

// A group's options without the scheduled ones (an array option goes whole when one of its
// elements is scheduled), which may differ from one tape to the next as from one step to the next.
json staticOptions(const OptimizerGroup& group, const std::optional<OptimizerSchedule>& schedule)
{
    json options = parseUntrustedJson(group.optionsJson, "optimizer group options");
    if (schedule)
        for (const std::string& name : schedule->options)
            if (auto parsed = parseScheduledOptionName(name))
                options.erase(parsed->option);
    return options;
}

std::string optimizerProblem(const RootRecord& before, const RootRecord& after)
{
    if (after.optimizerContract != before.optimizerContract)
        return "its optimizer is " + after.optimizerContract + ", the previous tape's " + before.optimizerContract;
    if (after.optimizerGroups.size() != before.optimizerGroups.size())
        return "it has " + std::to_string(after.optimizerGroups.size()) + " optimizer groups, the previous tape " +
               std::to_string(before.optimizerGroups.size());
    const std::vector<std::string> noneScheduled;
    const auto& scheduledBefore = before.optimizerSchedule ? before.optimizerSchedule->options : noneScheduled;
    const auto& scheduledAfter = after.optimizerSchedule ? after.optimizerSchedule->options : noneScheduled;
    if (scheduledBefore != scheduledAfter)
        return "it schedules other optimizer options than the previous tape";
    for (std::size_t g = 0; g < after.optimizerGroups.size(); ++g) {
        if (after.optimizerGroups[g].parameters != before.optimizerGroups[g].parameters)
            return "its optimizer group " + std::to_string(g) + " holds other parameters than the previous tape's";
        const json was = staticOptions(before.optimizerGroups[g], before.optimizerSchedule);
        const json now = staticOptions(after.optimizerGroups[g], after.optimizerSchedule);
        if (was != now)
            return "its optimizer group " + std::to_string(g) + " has the options " + now.dump() + ", the previous tape's " + was.dump();
    }
    return {};
}

// The scheduler's kind, arguments and base stay (ReduceLROnPlateau's base is the rates where
// it stands, which move with the run, as its state does), and its epoch goes on from the one
// the previous tape's last step recorded: it may step on between the tapes, never back.
std::string scheduleProblem(const TapeEnd& previous, const RootRecord& after)
{
    const RootRecord& before = previous.root;
    const bool checkedBefore = before.optimizerSchedule && before.optimizerSchedule->checked();
    const bool checkedAfter = after.optimizerSchedule && after.optimizerSchedule->checked();
    if (checkedBefore != checkedAfter)
        return checkedAfter ? "it declares a scheduler, the previous tape none" : "it declares no scheduler, the previous tape one";
    if (!checkedAfter)
        return {};
    const json was = parseUntrustedJson(before.optimizerSchedule->schedulerJson, "optimizer schedule");
    const json now = parseUntrustedJson(after.optimizerSchedule->schedulerJson, "optimizer schedule");
    const json kind = now.value("kind", json());
    if (was.value("kind", json()) != kind || was.value("arguments", json()) != now.value("arguments", json()))
        return "its scheduler is " + kind.dump() + " with " + now.value("arguments", json()).dump() + ", the previous tape's " +
               was.value("kind", json()).dump() + " with " + was.value("arguments", json()).dump();
    if (kind != "ReduceLROnPlateau" && was.value("base", json()) != now.value("base", json()))
        return "its scheduler's base values are " + now.value("base", json()).dump() + ", the previous tape's " + was.value("base", json()).dump();
    const std::uint64_t reached = previous.lastScheduleEpoch.value_or(before.optimizerSchedule->epoch);
    if (after.optimizerSchedule->epoch < reached)
        return "its scheduler starts at epoch " + std::to_string(after.optimizerSchedule->epoch) + ", before epoch " + std::to_string(reached) +
               ", where the previous tape's last step had it: a scheduler steps forward";
    return {};
}

std::string gradScalerProblem(const TapeEnd& previous, const RootRecord& after)
{
    const RootRecord& before = previous.root;
    if (before.gradScaler.has_value() != after.gradScaler.has_value())
        return after.gradScaler ? "it scales losses with a GradScaler, the previous tape with none" : "it scales no loss, the previous tape with a GradScaler";
    if (!after.gradScaler)
        return {};
    const GradScalerRule& was = before.gradScaler->rule;
    const GradScalerRule& now = after.gradScaler->rule;
    if (was.growthFactor != now.growthFactor || was.backoffFactor != now.backoffFactor || was.growthInterval != now.growthInterval)
        return "its GradScaler's rule (growth_factor, backoff_factor, growth_interval) differs from the previous tape's";
    // The scale goes on as torch's scaler.update() moved it after the previous tape's last step.
    const GradScalerState expected = previous.lastGradScalerStep
                                         ? nextGradScalerState(previous.lastGradScalerStep->state, was, previous.lastGradScalerStep->skipped)
                                         : before.gradScaler->initial;
    if (after.gradScaler->initial != expected)
        return "its GradScaler starts at scale " + gradScaleText(after.gradScaler->initial.scale) + " and growth tracker " +
               std::to_string(after.gradScaler->initial.growthTracker) + ", where the previous tape's rule leaves scale " +
               gradScaleText(expected.scale) + " and growth tracker " + std::to_string(expected.growthTracker);
    return {};
}

}  // namespace

std::string resumeLinkProblem(const TapeEnd& previous, const RootRecord& next)
{
    if (!next.resumes)
        return "its root names no tape it resumes";
    const ResumedTape& link = *next.resumes;
    if (link.chainHead != previous.chainHead || link.size != previous.size)
        return "it resumes the tape of chain head " + toHex(link.chainHead) + " and " + std::to_string(link.size) + " bytes, not this one (" +
               toHex(previous.chainHead) + ", " + std::to_string(previous.size) + " bytes)";
    if (!previous.sealed)
        return "the tape it resumes is not sealed";
    if (!previous.finalStateDigest)
        return "the tape it resumes does not hold the state after its last transaction";
    if (*previous.finalStateDigest != link.stateDigest)
        return "it starts from the state of digest " + toHex(link.stateDigest) + ", but the tape it resumes ended in " +
               toHex(*previous.finalStateDigest);
    const std::uint64_t before = (previous.root.resumes ? previous.root.resumes->transactionsBefore : 0) + previous.transactions;
    if (link.transactionsBefore != before)
        return "it numbers its first transaction " + std::to_string(link.transactionsBefore) + " of the run, but the tapes before it hold " +
               std::to_string(before);
    const RootRecord& was = previous.root;
    for (const std::string& problem : {layoutProblem(was.parameters, next.parameters, "parameter"), layoutProblem(was.buffers, next.buffers, "buffer"),
                                       optimizerProblem(was, next)})
        if (!problem.empty())
            return problem;
    if (next.programKind != was.programKind || next.programSha256 != was.programSha256)
        return "it runs the " + next.programKind + " program " + toHex(next.programSha256) + ", the previous tape the " + was.programKind +
               " program " + toHex(was.programSha256) + ": not the same training step";
    for (const std::string& problem : {scheduleProblem(previous, next), gradScalerProblem(previous, next)})
        if (!problem.empty())
            return problem;
    return {};
}

}  // namespace zkdv
