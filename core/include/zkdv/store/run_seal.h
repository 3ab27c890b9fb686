#pragma once
// A run's seal: the signature zkdv puts on a replay run's rows when it finishes the run, so
// that a report is derived only from results this program wrote and can vouch for
// (docs/case-schema.md, "Run seals"). A case is a file people hand to each other; anyone can
// edit its rows with an SQLite shell, and without a seal a verdict changed by hand to
// `exact` reads like one a replay stored.
//
// What is signed (payload version 2): the tape's ingested rows a report prints (its row but
// the path it may move from, its model layout, optimizer groups and every transaction's
// loss, learning rate and update norm), the run's row and every verdict (with its cause) and
// metric row of the run, as SQLite stores them, in key order; and beside that digest what the
// run found (RunFinding), so that a run whose rows were altered still says, under the
// signature, that it failed, and which earlier runs of the tape had failed when it was
// sealed, so that deleting one does not go unnoticed. With the signer's Ed25519 key
// (zkdv/util/auditor_key.h). Version 1 seals (before case schema 9) cover the tape's
// identity, the run's row and its verdict and metric rows without causes, and no finding;
// they keep verifying. Later versions add the run's seed source (3), program check (4), shard
// and the shards a merged run was merged from (5), and the planned audit a merged run was
// checked against (6), and the time it was sealed (7). Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/util/auditor_key.h"

namespace zkdv {

class Database;

// What a run found when it was sealed, as its seal signs it.
struct RunFinding {
    std::string status;  // the run's status then
    std::uint64_t replayed = 0, diverged = 0, unverifiable = 0, trainersFailures = 0;
    // Earlier runs of the same tape that had found it at fault (replayRunFailed) when this
    // run was sealed, as their own seals said then.
    std::vector<std::int64_t> earlierFailedRuns;

    bool failed() const;
};

struct RunSealCheck {
    enum class State {
        Vouched,          // signed by the reader's own key or a key they trust, rows unchanged
        UntrustedSigner,  // signed, rows unchanged, but by a key the reader does not trust
        Altered,          // rows or seal changed after the run was signed
        Unsigned,         // no seal: an older zkdv, a run that never finished, or no key then
    };
    State state = State::Unsigned;
    std::string signer;       // the key's fingerprint, and its trusted name in parentheses
    std::string sealedAt;     // UTC, ISO 8601
    std::string explanation;  // a sentence saying what the state means for the results
    int payloadVersion = 0;   // of the seal (1 to 7); 0 when unsigned
    // What the run found when it was sealed, when a key this reader trusts signed it and the
    // signature still holds over it: also for an Altered run whose rows changed since (the
    // finding survives an edit of the rows), never for an untrusted signer or a v1 seal.
    std::optional<RunFinding> finding;

    bool vouched() const { return state == State::Vouched; }
};

// The name of a state as the JSON outputs spell it: vouched, untrusted-signer, altered, unsigned.
const char* runSealStateName(RunSealCheck::State state);

// Signs run `runId` as its rows stand now (the latest payload version) and stores the seal; call it
// inside the write transaction that stores the run's last rows. `trusted`: the keys whose
// seals on the tape's earlier runs count, besides `key`'s own, for its earlierFailedRuns.
void sealRun(Database& db, std::int64_t runId, const AuditorKey& key, const std::vector<TrustedKey>& trusted = {});

// Checks run `runId`'s seal against its rows. `ownKey`: the reader's own public key, if they
// have one; `trusted`: the other keys they trust (readTrustedKeys()).
RunSealCheck checkRunSeal(Database& db, std::int64_t runId, const std::optional<PublicKey>& ownKey,
                          const std::vector<TrustedKey>& trusted);

// The same with the reader's keys read from their settings folder (configFolder()). A
// trusted-keys file that cannot be read throws Error.
RunSealCheck checkRunSeal(Database& db, std::int64_t runId);

}  // namespace zkdv
