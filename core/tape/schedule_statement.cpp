#include "zkdv/tape/schedule_statement.h"

#include <nlohmann/json.hpp>

#include "zkdv/tape/root_record.h"

namespace zkdv {

std::string schedulerKind(const RootRecord& root)
{
    if (!root.optimizerSchedule || !root.optimizerSchedule->checked())
        return {};
    // The root parser checked that the scheduler is an object with a string kind.
    return nlohmann::json::parse(root.optimizerSchedule->schedulerJson)["kind"].get<std::string>();
}

std::string scheduleStatement(const RootRecord& root)
{
    if (!root.optimizerSchedule)
        return "static: every optimizer option is the root's for the whole tape";
    std::string options;
    for (const std::string& option : root.optimizerSchedule->options)
        options += (options.empty() ? "" : ", ") + option;
    const std::string kind = schedulerKind(root);
    if (kind.empty())
        return options + " as recorded, not checked against a schedule";
    // A scheduler whose description holds a state steps with metrics (spec 3.3, since 1.9),
    // which the trainer measured outside the transactions: the check stops at them.
    const bool readsMetrics = nlohmann::json::parse(root.optimizerSchedule->schedulerJson).contains("state");
    return options + " scheduled by " + kind + ", checked against its schedule at every replayed transaction" +
           (readsMetrics ? " from the metrics the tape records (the trainer's own, such as a validation loss, which no replay measures)" : "");
}

}  // namespace zkdv
