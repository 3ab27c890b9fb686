#include "zkdv/store/tape_seal.h"

#include "row_digest.h"

#include <cstring>

#include "zkdv/store/database.h"
#include "zkdv/util/utc_time.h"

namespace zkdv {

namespace {

// Payload version 1 (case schema 18). The columns are named, not `*`, so a later migration that
// adds a column leaves earlier seals valid; a seal over more columns gets a new version and tag.
constexpr std::string_view kSealTagV1 = "zkdv tape seal 1\n";
constexpr int kLatestPayloadVersion = 1;

// Every column of the tape's row but its id and identity (signed beside the digest, so that two
// ingests of one tape, one of them rolled back, compare) and its path (a moved tape is located
// again).
constexpr const char* kTapeQuery =
    "SELECT file_sha256, status, format_major, format_minor, root_json, producer, optimizer_contract,"
    " snapshot_interval, program_sha256, program_kind, record_count, transaction_count, snapshot_count, embedded, ingested_at,"
    " first_state_digest, final_state_digest, last_schedule_epoch, last_grad_scaler, transactions_before, signer_key_id,"
    " signer_algorithm, signer_public_key FROM tapes WHERE id = ?1";
constexpr const char* kLayoutQuery = "SELECT kind, position, name, dtype, shape FROM tensors WHERE tape_id = ?1 ORDER BY kind, position";
constexpr const char* kGroupQuery = "SELECT group_index, options, parameters FROM optimizer_groups WHERE tape_id = ?1 ORDER BY group_index";
constexpr const char* kTransactionQuery =
    "SELECT idx, segment, loss, lr, update_norm, max_update, fingerprints, has_deltas, has_state_digest, state_digest, wall_time_ns,"
    " record_index, record_offset, record_length, record_digest, scheduled FROM transactions WHERE tape_id = ?1 ORDER BY idx";
constexpr const char* kSnapshotQuery =
    "SELECT before_transaction, record_index, record_offset, record_length, record_digest FROM snapshots WHERE tape_id = ?1"
    " ORDER BY before_transaction";

// The tag, the digest of the tape's id and identity (chain head and size) as its row holds them,
// the digest of its other rows, and the time of the seal.
std::vector<std::uint8_t> signedMessage(Database& db, std::int64_t tapeId, const Digest& content, std::string_view sealedAt)
{
    Sha256 identity;
    hashRows(identity, db, "SELECT id, chain_head, size FROM tapes WHERE id = ?1", tapeId, 'I');
    const Digest head = identity.finish();
    std::vector<std::uint8_t> message(kSealTagV1.begin(), kSealTagV1.end());
    message.insert(message.end(), head.begin(), head.end());
    message.insert(message.end(), content.begin(), content.end());
    message.insert(message.end(), sealedAt.begin(), sealedAt.end());
    return message;
}

}  // namespace

Digest tapeContentDigest(Database& db, std::int64_t tapeId)
{
    Sha256 hash;
    hash.update(kSealTagV1);
    hashRows(hash, db, kTapeQuery, tapeId, 'T');
    hashRows(hash, db, kLayoutQuery, tapeId, 'L');
    hashRows(hash, db, kGroupQuery, tapeId, 'G');
    hashRows(hash, db, kTransactionQuery, tapeId, 'X');
    hashRows(hash, db, kSnapshotQuery, tapeId, 'S');
    return hash.finish();
}

void sealTape(Database& db, std::int64_t tapeId, const AuditorKey& key)
{
    const Digest content = tapeContentDigest(db, tapeId);
    const std::string sealedAt = utcNow();
    const Signature signature = key.sign(ByteSpan(signedMessage(db, tapeId, content, sealedAt)));
    Statement insert = db.prepare(
        "INSERT OR REPLACE INTO tape_seals(tape_id, content_sha256, public_key, signature, sealed_at, payload_version)"
        " VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    insert.bind(1, tapeId)
        .bindBlob(2, ByteSpan(content.data(), content.size()))
        .bindBlob(3, ByteSpan(key.publicKey().data(), key.publicKey().size()))
        .bindBlob(4, ByteSpan(signature.data(), signature.size()))
        .bind(5, sealedAt)
        .bind(6, static_cast<std::int64_t>(kLatestPayloadVersion))
        .run();
}

TapeSealCheck checkTapeSeal(Database& db, std::int64_t tapeId, const std::optional<PublicKey>& ownKey, const std::vector<TrustedKey>& trusted)
{
    TapeSealCheck check;
    check.tapeId = tapeId;
    const std::string tape = "tape " + std::to_string(tapeId);
    Statement row = db.prepare("SELECT content_sha256, public_key, signature, sealed_at, payload_version FROM tape_seals WHERE tape_id = ?1");
    row.bind(1, tapeId);
    if (!row.step()) {
        check.explanation = tape + "'s rows in the case carry no seal (it was ingested by a zkdv older than case schema 18, or with no "
                                   "signing key), so nothing the case says about it can be vouched for; ingest the tape again (zkdv-audit ingest TAPE "
                                   "--case CASE seals rows that are exactly what the tape gives)";
        return check;
    }
    const ByteSpan storedContent = row.blob(0), storedKey = row.blob(1), storedSignature = row.blob(2);
    check.sealedAt = row.text(3);
    const std::int64_t version = row.int64(4);
    PublicKey key{};
    Signature signature{};
    Digest stored{};
    const bool wellFormed = storedContent.size == stored.size() && storedKey.size == key.size() && storedSignature.size == signature.size() &&
                            version == kLatestPayloadVersion;
    if (wellFormed) {
        std::memcpy(key.data(), storedKey.data, key.size());
        std::memcpy(signature.data(), storedSignature.data, signature.size());
        std::memcpy(stored.data(), storedContent.data, stored.size());
        check.signer = keyFingerprint(key);
    }
    const bool holds = wellFormed && verifySignature(key, ByteSpan(signedMessage(db, tapeId, stored, check.sealedAt)), signature) &&
                       tapeContentDigest(db, tapeId) == stored;
    if (!holds) {
        check.state = RunSealCheck::State::Altered;
        check.explanation = tape + "'s rows in the case were changed after zkdv " +
                            (check.signer.empty() ? std::string("sealed them") : "sealed them with key " + check.signer) +
                            " at ingest (its rows or its seal no longer match the signature), so nothing the case says about it can be trusted";
        return check;
    }
    if (const std::optional<std::string> note = trustedSignerNote(key, ownKey, trusted)) {
        check.state = RunSealCheck::State::Vouched;
        check.signer += *note;
        check.explanation = tape + "'s rows were sealed when it was ingested, and are unchanged since";
        return check;
    }
    check.state = RunSealCheck::State::UntrustedSigner;
    check.explanation = tape + "'s rows were sealed at ingest by key " + check.signer +
                        ", which is not this user's and not in their trusted-keys file, so nothing the case says about it can be vouched "
                        "for; ingest the tape into a case of your own, or trust that auditor's key";
    return check;
}

std::vector<TapeSealCheck> unvouchedTapes(Database& db, const std::optional<PublicKey>& ownKey, const std::vector<TrustedKey>& trusted)
{
    std::vector<std::int64_t> ids;
    Statement tapes = db.prepare("SELECT id FROM tapes ORDER BY id");
    while (tapes.step())
        ids.push_back(tapes.int64(0));
    std::vector<TapeSealCheck> unvouched;
    for (std::int64_t id : ids) {
        TapeSealCheck check = checkTapeSeal(db, id, ownKey, trusted);
        if (!check.vouched())
            unvouched.push_back(std::move(check));
    }
    return unvouched;
}

}  // namespace zkdv
