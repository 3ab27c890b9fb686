#pragma once
// A run's seal: the signature zkdv puts on a replay run's rows when it finishes the run, so
// that a report is derived only from results this program wrote and can vouch for
// (docs/case-schema.md, "Run seals"). A case is a file people hand to each other; anyone can
// edit its rows with an SQLite shell, and without a seal a verdict changed by hand to
// `exact` reads like one a replay stored.
//
// What is signed: the tape's identity (chain head, size, status, transaction count, program
// digest), the run's row and every verdict and metric row of the run, as SQLite stores them,
// in key order; with the signer's Ed25519 key (zkdv/util/auditor_key.h). Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/util/auditor_key.h"

namespace zkdv {

class Database;

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

    bool vouched() const { return state == State::Vouched; }
};

// The name of a state as the JSON outputs spell it: vouched, untrusted-signer, altered, unsigned.
const char* runSealStateName(RunSealCheck::State state);

// Signs run `runId` as its rows stand now and stores the seal; call it inside the write
// transaction that stores the run's last rows.
void sealRun(Database& db, std::int64_t runId, const AuditorKey& key);

// Checks run `runId`'s seal against its rows. `ownKey`: the reader's own public key, if they
// have one; `trusted`: the other keys they trust (readTrustedKeys()).
RunSealCheck checkRunSeal(Database& db, std::int64_t runId, const std::optional<PublicKey>& ownKey,
                          const std::vector<TrustedKey>& trusted);

// The same with the reader's keys read from their settings folder (configFolder()). A
// trusted-keys file that cannot be read throws Error.
RunSealCheck checkRunSeal(Database& db, std::int64_t runId);

}  // namespace zkdv
