#pragma once
// Where a replay run stands: one closed set for the store, the report, the CLI and the
// workstation, and one name for each state in every output. A run the auditor stopped is
// "stopped" everywhere; only the case's row keeps its older spelling "cancelled", because run
// seals sign the row as stored (docs/case-schema.md, "replay_runs").

#include <optional>
#include <string_view>

namespace zkdv {

enum class RunStatus {
    Running,      // still replaying (or its process died: see Interrupted)
    Finished,     // replayed everything it selected
    Stopped,      // stopped by the auditor: what it reached is kept
    Failed,       // ended by an error of the replay itself (a worker died, the case failed)
    Interrupted,  // its process ended before it finished (found when the case was next read)
};

// "running", "finished", "stopped", "failed", "interrupted": as JSON, reports and screens spell them.
std::string_view runStatusName(RunStatus status);
// As replay_runs.status stores it ("cancelled" for Stopped).
std::string_view storedRunStatusName(RunStatus status);
// From either spelling; nullopt for anything else (a case edited by hand).
std::optional<RunStatus> runStatusFromName(std::string_view name);
// What the state means, for a sentence: "was stopped by the auditor", "did not finish: …".
std::string_view runStatusSentence(RunStatus status);

}  // namespace zkdv
