#include "zkdv/audit/run_status.h"

namespace zkdv {

namespace {

constexpr RunStatus kEvery[] = {RunStatus::Running, RunStatus::Finished, RunStatus::Stopped, RunStatus::Failed, RunStatus::Interrupted};

}  // namespace

std::string_view runStatusName(RunStatus status)
{
    switch (status) {
    case RunStatus::Running: return "running";
    case RunStatus::Finished: return "finished";
    case RunStatus::Stopped: return "stopped";
    case RunStatus::Failed: return "failed";
    case RunStatus::Interrupted: return "interrupted";
    }
    return "failed";
}

std::string_view storedRunStatusName(RunStatus status)
{
    return status == RunStatus::Stopped ? "cancelled" : runStatusName(status);
}

std::optional<RunStatus> runStatusFromName(std::string_view name)
{
    for (RunStatus status : kEvery)
        if (runStatusName(status) == name || storedRunStatusName(status) == name)
            return status;
    return std::nullopt;
}

std::string_view runStatusSentence(RunStatus status)
{
    switch (status) {
    case RunStatus::Running: return "was still running when this was read";
    case RunStatus::Finished: return "finished";
    case RunStatus::Stopped: return "was stopped by the auditor";
    case RunStatus::Failed: return "failed";
    case RunStatus::Interrupted: return "was interrupted (its process ended before it finished)";
    }
    return "failed";
}

}  // namespace zkdv
