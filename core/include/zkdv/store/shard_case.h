#pragma once
// The case a shard of a sharded replay writes its results into (docs/replay.md, "Sharded
// replays"). A shard runs on a cluster node, often with the auditor's case on a network file
// system, where SQLite's locking cannot be trusted; so every shard writes a small case file
// of its own, and `zkdv-audit merge` joins them into the auditor's case afterwards.
// Audit-side: no torch.

#include <cstdint>
#include <string>

namespace zkdv {

class CaseStore;

// Writes at `path` a case holding tape `tapeId` of `source` as it was ingested (its rows,
// embedded payloads and program) and nothing else: no other tape, run, note or check. The
// copy is taken in one read transaction of `source`, which stays unchanged. Throws Error
// when `path` exists (a shard's results are never written over) or cannot be written; no
// file is left behind then.
void writeShardCase(CaseStore& source, std::int64_t tapeId, const std::string& path);

// Drops from a shard case whose run is stored what only its replay needed: the embedded
// payloads, the program, the snapshots' and sort orders' rows and the transactions'
// fingerprints and digests. What stays is what the merge reads and the run's seal covers
// (the tape's identity, layout, groups, every transaction's loss, learning rate and update
// norm, and the run's rows), so the file that travels back from a node is small.
void trimShardCase(const std::string& path);

}  // namespace zkdv
