#include "zkdv/store/run_seal.h"

#include <sqlite3.h>

#include <cstring>

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/utc_time.h"

namespace zkdv {

namespace {

// What a seal covers, by version. The columns are named, not `*`, so a later migration
// that adds a column leaves earlier seals valid; a seal over more columns gets a new tag.
// Version 2 adds the run's seed_source (case schema 9): a run that has one is sealed and
// checked with it, a run stored before has none and keeps its version 1 seal; since the tag
// is signed, a seed_source added to or removed from a sealed run breaks its seal.
constexpr std::string_view kSealTag1 = "zkdv replay run seal 1\n";
constexpr std::string_view kSealTag2 = "zkdv replay run seal 2\n";

constexpr const char* kTapeQuery =
    "SELECT t.chain_head, t.size, t.status, t.transaction_count, t.program_sha256"
    " FROM replay_runs r JOIN tapes t ON t.id = r.tape_id WHERE r.id = ?1";
constexpr const char* kRunQuery =
    "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
    " finished_at, status, intra_op_threads, selected_count, environment, problem FROM replay_runs WHERE id = ?1";
constexpr const char* kRunQuery2 =
    "SELECT id, tape_id, device, libtorch_version, zkdv_version, selection_spec, seed, tolerance, threads, started_at,"
    " finished_at, status, intra_op_threads, selected_count, environment, problem, seed_source FROM replay_runs WHERE id = ?1";
constexpr const char* kVerdictQuery =
    "SELECT idx, verdict, detail, segment, selected, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2, replay_ns"
    " FROM verdicts WHERE run_id = ?1 ORDER BY idx";
constexpr const char* kMetricQuery =
    "SELECT idx, tensor, slot, max_abs, rel_l2, cosine, max_ulp, mean_ulp, nan_mismatches, inf_mismatches, ulp_histogram,"
    " verdict, elements, bitwise_equal, note FROM metrics WHERE run_id = ?1 ORDER BY idx, tensor, slot";

void putU64(Sha256& hash, std::uint64_t value)
{
    std::uint8_t bytes[8];
    for (int i = 0; i < 8; ++i)
        bytes[i] = static_cast<std::uint8_t>(value >> (8 * i));
    hash.update(ByteSpan(bytes, sizeof bytes));
}

// Every value as SQLite holds it: a type byte, then the value (integers and the bits of a
// real as 8 little-endian bytes, text and blobs with their length first), so two different
// rows never hash alike.
void hashRows(Sha256& hash, Database& db, const char* sql, std::int64_t runId, char section)
{
    Statement rows = db.prepare(sql);
    rows.bind(1, runId);
    const int columns = rows.columnCount();
    std::uint64_t count = 0;
    hash.update(std::string_view(&section, 1));
    while (rows.step()) {
        ++count;
        for (int c = 0; c < columns; ++c) {
            sqlite3_stmt* stmt = rows.handle();
            const int type = sqlite3_column_type(stmt, c);
            const char tag = static_cast<char>('0' + type);
            hash.update(std::string_view(&tag, 1));
            switch (type) {
            case SQLITE_INTEGER: putU64(hash, static_cast<std::uint64_t>(sqlite3_column_int64(stmt, c))); break;
            case SQLITE_FLOAT: {
                const double value = sqlite3_column_double(stmt, c);
                std::uint64_t bits = 0;
                std::memcpy(&bits, &value, sizeof bits);
                putU64(hash, bits);
                break;
            }
            case SQLITE_TEXT:
            case SQLITE_BLOB: {
                const void* data = type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_column_text(stmt, c)) : sqlite3_column_blob(stmt, c);
                const auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt, c));
                putU64(hash, size);
                hash.update(ByteSpan(data, size));
                break;
            }
            default: break;  // NULL: the tag says it all
            }
        }
    }
    putU64(hash, count);
}

// The seal version of a run as its row stands: 2 when it records its seed's source.
std::string_view sealTagOf(Database& db, std::int64_t runId)
{
    const std::optional<std::int64_t> hasSource =
        db.queryInt64("SELECT seed_source IS NOT NULL FROM replay_runs WHERE id = " + std::to_string(runId));
    return hasSource.value_or(0) != 0 ? kSealTag2 : kSealTag1;
}

Digest runContentDigest(Database& db, std::int64_t runId, std::string_view tag)
{
    Sha256 hash;
    hash.update(tag);
    putU64(hash, static_cast<std::uint64_t>(runId));
    hashRows(hash, db, kTapeQuery, runId, 'T');
    hashRows(hash, db, tag == kSealTag2 ? kRunQuery2 : kRunQuery, runId, 'R');
    hashRows(hash, db, kVerdictQuery, runId, 'V');
    hashRows(hash, db, kMetricQuery, runId, 'M');
    return hash.finish();
}

std::vector<std::uint8_t> signedMessage(std::string_view tag, const Digest& content)
{
    std::vector<std::uint8_t> message(tag.begin(), tag.end());
    message.insert(message.end(), content.begin(), content.end());
    return message;
}

}  // namespace

const char* runSealStateName(RunSealCheck::State state)
{
    switch (state) {
    case RunSealCheck::State::Vouched: return "vouched";
    case RunSealCheck::State::UntrustedSigner: return "untrusted-signer";
    case RunSealCheck::State::Altered: return "altered";
    case RunSealCheck::State::Unsigned: return "unsigned";
    }
    return "unsigned";
}

void sealRun(Database& db, std::int64_t runId, const AuditorKey& key)
{
    const std::string_view tag = sealTagOf(db, runId);
    const Digest content = runContentDigest(db, runId, tag);
    const Signature signature = key.sign(ByteSpan(signedMessage(tag, content)));
    Statement insert = db.prepare(
        "INSERT OR REPLACE INTO run_seals(run_id, content_sha256, public_key, signature, sealed_at) VALUES(?1, ?2, ?3, ?4, ?5)");
    insert.bind(1, runId)
        .bindBlob(2, ByteSpan(content.data(), content.size()))
        .bindBlob(3, ByteSpan(key.publicKey().data(), key.publicKey().size()))
        .bindBlob(4, ByteSpan(signature.data(), signature.size()))
        .bind(5, utcNow())
        .run();
}

RunSealCheck checkRunSeal(Database& db, std::int64_t runId, const std::optional<PublicKey>& ownKey, const std::vector<TrustedKey>& trusted)
{
    RunSealCheck check;
    Statement row = db.prepare("SELECT content_sha256, public_key, signature, sealed_at FROM run_seals WHERE run_id = ?1");
    row.bind(1, runId);
    if (!row.step()) {
        check.state = RunSealCheck::State::Unsigned;
        check.explanation = "run " + std::to_string(runId) +
                            " carries no seal (it was stored by a zkdv older than case schema 7, did not finish, or its replay had no signing key), "
                            "so its results cannot be vouched for; replay the selection again to check the tape";
        return check;
    }
    const ByteSpan storedContent = row.blob(0), storedKey = row.blob(1), storedSignature = row.blob(2);
    check.sealedAt = row.text(3);
    PublicKey key{};
    Signature signature{};
    const bool wellFormed = storedContent.size == 32 && storedKey.size == key.size() && storedSignature.size == signature.size();
    if (wellFormed) {
        std::memcpy(key.data(), storedKey.data, key.size());
        std::memcpy(signature.data(), storedSignature.data, signature.size());
        check.signer = keyFingerprint(key);
    }
    const std::string_view tag = sealTagOf(db, runId);
    const Digest content = runContentDigest(db, runId, tag);
    if (!wellFormed || std::memcmp(content.data(), storedContent.data, content.size()) != 0 ||
        !verifySignature(key, ByteSpan(signedMessage(tag, content)), signature)) {
        check.state = RunSealCheck::State::Altered;
        check.explanation = "run " + std::to_string(runId) + "'s results in the case were changed after zkdv " +
                            (check.signer.empty() ? std::string("sealed them") : "sealed them with key " + check.signer) +
                            " (its rows or its seal no longer match the signature), so none of them can be trusted";
        return check;
    }
    if (ownKey && *ownKey == key) {
        check.state = RunSealCheck::State::Vouched;
        check.signer += " (this user's key)";
        check.explanation = "sealed by this user's zkdv when the run ended, and unchanged since";
        return check;
    }
    for (const TrustedKey& candidate : trusted) {
        if (candidate.key == key) {
            check.state = RunSealCheck::State::Vouched;
            check.signer += candidate.name.empty() ? " (trusted)" : " (trusted: " + candidate.name + ")";
            check.explanation = "sealed by a trusted auditor's zkdv when the run ended, and unchanged since";
            return check;
        }
    }
    check.state = RunSealCheck::State::UntrustedSigner;
    check.explanation = "run " + std::to_string(runId) + " was sealed by key " + check.signer +
                        ", which is not this user's and not in their trusted-keys file (" + (configFolder() / "trusted-keys").string() +
                        "), so its results cannot be vouched for; replay the selection here, or trust that auditor's key";
    return check;
}

RunSealCheck checkRunSeal(Database& db, std::int64_t runId)
{
    return checkRunSeal(db, runId, AuditorKey::existingPublicKey(), readTrustedKeys());
}

}  // namespace zkdv
