#include "zkdv/audit/planned_audit.h"

#include "zkdv/audit/tolerance.h"

namespace zkdv {

namespace {

std::string tapeName(const PlannedAudit& audit)
{
    return "chain head " + audit.chainHead.substr(0, 16) + "… (" + std::to_string(audit.tapeSize) + " bytes)";
}

std::string calibrationName(const std::string& sha256)
{
    return sha256.empty() ? std::string("none") : "sha256 " + sha256.substr(0, 16) + "…";
}

std::string programCheckText(const std::optional<ProgramCheck>& check)
{
    return check ? std::string(programCheckName(*check)) : std::string("unknown");
}

// The bounds compare as numbers (the stored text is Tolerance::toString's); text that does not
// parse matches nothing.
bool sameTolerance(const std::string& planned, const std::string& shard, bool calibrated)
{
    try {
        const Tolerance a = Tolerance::parse(planned), b = Tolerance::parse(shard);
        return a.maxUlp == b.maxUlp && a.relativeL2 == b.relativeL2 && a.fingerprintRelative == b.fingerprintRelative &&
               (calibrated || a.envelope == b.envelope);
    } catch (const ToleranceError&) {
        return false;
    }
}

}  // namespace

std::string plannedAuditDifference(const PlannedAudit& planned, const PlannedAudit& shard)
{
    auto differs = [](const std::string& what, const std::string& theirs, const std::string& ours) {
        return what + " " + theirs + ", the planned audit's is " + ours;
    };
    if (shard.chainHead != planned.chainHead || shard.tapeSize != planned.tapeSize)
        return differs("tape", tapeName(shard), tapeName(planned));
    if (shard.selection != planned.selection)
        return differs("selection", shard.selection, planned.selection);
    if (shard.seed != planned.seed)
        return differs("seed", std::to_string(shard.seed), std::to_string(planned.seed));
    if (shard.shardCount != planned.shardCount)
        return differs("shard count", std::to_string(shard.shardCount), std::to_string(planned.shardCount));
    if (!sameTolerance(planned.tolerance, shard.tolerance, !planned.calibrationSha256.empty()))
        return differs("tolerance", shard.tolerance, planned.tolerance);
    if (shard.calibrationSha256 != planned.calibrationSha256)
        return differs("calibration", calibrationName(shard.calibrationSha256), calibrationName(planned.calibrationSha256));
    if (shard.programCheck != planned.programCheck)
        return differs("program check", programCheckText(shard.programCheck), programCheckText(planned.programCheck));
    return "";
}

}  // namespace zkdv
