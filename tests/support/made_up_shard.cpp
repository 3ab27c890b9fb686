#include "made_up_shard.h"

#include <algorithm>
#include <stdexcept>

#include "zkdv/replay/planned_audit_request.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/planned_audits.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/shard_case.h"
#include "zkdv/util/auditor_key.h"

namespace zkdv::test {

namespace {

TransactionOutcome outcome(std::uint64_t index, bool selected, Verdict verdict)
{
    TransactionOutcome o;
    o.index = index;
    o.segment = index / 12;
    o.selected = selected;
    o.verdict = verdict;
    o.detail = verdict == Verdict::Exact ? "replayed bit for bit" : "parameter w differs after the step (max 3 ULP)";
    TensorComparison comparison;
    comparison.tensor = "w";
    comparison.slot = "param";
    comparison.verdict = verdict;
    comparison.metrics.elements = 12;
    comparison.metrics.bitwiseEqual = verdict == Verdict::Exact;
    comparison.metrics.maxUlp = verdict == Verdict::Exact ? 0 : 3;
    o.comparisons.push_back(comparison);
    return o;
}

}  // namespace

void writeMadeUpShard(const std::string& casePath, const std::string& shardPath, unsigned index, const MadeUpShard& options)
{
    {
        CaseStore source(casePath, CaseStore::Access::ReadOnly);
        writeShardCase(source, source.tapes().front().id, shardPath);
    }
    {
        CaseStore shard(shardPath, CaseStore::Access::ReadWrite);
        ReplayRequest request;
        request.selection = SelectionSpec::parse(options.selection);
        request.seed = options.seed;
        const ShardedReplay sharded = planShardedReplay(shard, request, options.count);
        const unsigned part = options.partOf.value_or(index);
        const ReplayPlan plan = sharded.shards.shardPlan(sharded.plan, part);
        ReplayStore replay(shard.database());
        ReplayRunInfo info;
        info.tapeId = sharded.tapeId;
        info.device = "cpu";
        info.libtorchVersion = "1.13.1";
        info.selection = request.selection.toString();
        info.seed = options.seed;
        info.tolerance = (options.tolerance.empty() ? Tolerance::defaults() : Tolerance::parse(options.tolerance)).toString();
        if (!options.calibrationSha256.empty())
            info.environmentJson = R"({"calibration": {"path": "cal.json", "sha256": ")" + options.calibrationSha256 + R"(", "used": false}})";
        info.selectedCount = sharded.shardSelected(part).size();
        info.programCheck = options.programCheck;
        info.shard = ShardSpec{index, options.count};
        const std::int64_t runId = replay.beginRun(info);
        std::vector<TransactionOutcome> outcomes;
        for (const ReplaySegment& segment : plan.segments)
            for (std::uint64_t t = segment.snapshot; t <= segment.lastTransaction; ++t) {
                const bool selected = std::binary_search(segment.selected.begin(), segment.selected.end(), t);
                outcomes.push_back(outcome(t, selected, t == options.divergedAt ? Verdict::Diverged : Verdict::Exact));
            }
        replay.storeOutcomes(runId, outcomes);
        const std::string sealProblem = replay.finishRun(runId, options.status, "");
        if (!sealProblem.empty())
            throw std::runtime_error("the made-up shard " + shardPath + " could not be sealed: " + sealProblem);
    }
    trimShardCase(shardPath);
}

std::int64_t recordMadeUpPlan(const std::string& casePath, const MadeUpShard& options)
{
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    ReplayRequest request;
    request.selection = SelectionSpec::parse(options.selection);
    request.seed = options.seed;
    if (!options.tolerance.empty())
        request.tolerance = Tolerance::parse(options.tolerance);
    PlannedAudit audit = plannedAuditOf(store, request, options.count);
    audit.programCheck = options.programCheck;
    audit.calibrationSha256 = options.calibrationSha256;
    const AuditorKey key = AuditorKey::loadOrCreate();
    SqlTransaction transaction(store.database());
    storePlannedAudit(store.database(), audit, &key);
    transaction.commit();
    return audit.id;
}

}  // namespace zkdv::test
