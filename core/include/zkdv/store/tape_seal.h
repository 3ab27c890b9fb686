#pragma once
// A tape's seal: the signature zkdv puts on the rows an ingest wrote for a tape, so that a
// report states facts about the tape only from rows this program derived from the tape
// (docs/case-schema.md, "Tape seals"). A run's seal (zkdv/store/run_seal.h) covers what a
// replay found and the tape rows it judged; the tape's seal covers every row the ingest
// wrote — the tape's row (its signer, state digests, resume link, counts) but the path it may
// move from, its model layout, optimizer groups, transactions and snapshots — which reports
// and `info` print, the resume-link rule reads and the tape's sampling check counts. A case
// is a file people hand to each other; without it, a signer's key id rewritten to a trusted
// trainer's, or a predecessor's final state digest rewritten so a broken link reads
// `continues`, would print as fact. Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/store/run_seal.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

class Database;

// What a reader may take from a tape's rows, as a run seal's states say it: Vouched (sealed by
// a key they trust, unchanged), UntrustedSigner, Altered, Unsigned (ingested by a zkdv before
// case schema 18, or with no signing key).
struct TapeSealCheck {
    std::int64_t tapeId = 0;
    RunSealCheck::State state = RunSealCheck::State::Unsigned;
    std::string signer;       // the key's fingerprint, and its trusted name in parentheses
    std::string sealedAt;     // UTC, ISO 8601
    std::string explanation;  // a sentence naming the tape and saying what the state means

    bool vouched() const { return state == RunSealCheck::State::Vouched; }
};

// The digest of the rows the ingest wrote for tape `tapeId` but its id, identity (chain head and
// size, signed beside it), path and seal: two ingests of the same tape give the same digest but
// for ingested_at (the encoding of zkdv/store/row_digest.h).
Digest tapeContentDigest(Database& db, std::int64_t tapeId);

// Signs tape `tapeId`'s rows as they stand now and stores the seal (replacing any); call it
// inside the write transaction that stores the tape's last rows.
void sealTape(Database& db, std::int64_t tapeId, const AuditorKey& key);

// Checks tape `tapeId`'s seal against its rows. `ownKey`: the reader's own public key, if they
// have one; `trusted`: the other keys they trust (readTrustedKeys()).
TapeSealCheck checkTapeSeal(Database& db, std::int64_t tapeId, const std::optional<PublicKey>& ownKey,
                            const std::vector<TrustedKey>& trusted);

// Every tape of the case whose seal the reader cannot vouch for, ascending by id: a report about
// any tape reads the others too (the resume link, the run's tapes and forks are derived from
// their rows).
std::vector<TapeSealCheck> unvouchedTapes(Database& db, const std::optional<PublicKey>& ownKey, const std::vector<TrustedKey>& trusted);

}  // namespace zkdv
