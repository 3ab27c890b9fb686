#include "zkdv/store/transaction_notes.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/utc_time.h"
#include "zkdv/util/utf8.h"

namespace zkdv {

namespace {

bool blank(const std::string& text)
{
    for (char c : text)
        if (!std::isspace(static_cast<unsigned char>(c)))
            return false;
    return true;
}

constexpr const char* kNoteColumns =
    "SELECT n.idx, n.flag, n.note, n.author, n.updated_at, n.public_key, n.signature, t.chain_head, t.size"
    " FROM transaction_notes n JOIN tapes t ON t.id = n.tape_id WHERE n.tape_id = ?1";

constexpr std::string_view kSealTag = "zkdv transaction note seal 1\n";

// What a note's signature covers: the tag, then the note as stored and the tape it is on (its
// identity, so a note moved to another tape no longer holds), as JSON with sorted keys.
std::string signedText(const std::string& chainHead, std::int64_t tapeSize, std::int64_t index, const std::string& flag,
                       const std::string& note, const std::string& author, const std::string& updatedAt)
{
    const nlohmann::json fields = {{"chain_head", chainHead}, {"tape_size", tapeSize}, {"index", index},         {"flag", flag},
                                   {"note", note},            {"author", author},      {"updated_at", updatedAt}};
    return std::string(kSealTag) + toJsonText(fields);
}

TransactionNote noteFrom(const Statement& row)
{
    TransactionNote note;
    note.index = static_cast<std::uint64_t>(row.int64(0));
    // The schema's CHECK admits only the four names; a case is untrusted all the same.
    note.flag = transactionFlagFromName(row.text(1)).value_or(TransactionFlag::None);
    note.note = toValidUtf8(row.text(2));
    note.author = toValidUtf8(row.text(3));
    note.updatedAt = row.text(4);
    const ByteSpan key = row.blob(5), signature = row.blob(6);
    PublicKey signer{};
    Signature bytes{};
    if (key.size == signer.size() && signature.size == bytes.size()) {
        std::memcpy(signer.data(), key.data, signer.size());
        std::memcpy(bytes.data(), signature.data, bytes.size());
        note.signer = signer;
        const std::string text =
            signedText(row.text(7), row.int64(8), row.int64(0), row.text(1), row.text(2), row.text(3), row.text(4));
        note.signatureHolds = verifySignature(signer, ByteSpan(std::string_view(text)), bytes);
    }
    return note;
}

}  // namespace

const char* transactionFlagName(TransactionFlag flag)
{
    switch (flag) {
    case TransactionFlag::Question: return "question";
    case TransactionFlag::Suspicious: return "suspicious";
    case TransactionFlag::Confirmed: return "confirmed";
    case TransactionFlag::None: break;
    }
    return "none";
}

std::optional<TransactionFlag> transactionFlagFromName(std::string_view name)
{
    for (TransactionFlag flag : transactionFlags())
        if (name == transactionFlagName(flag))
            return flag;
    return std::nullopt;
}

const std::vector<TransactionFlag>& transactionFlags()
{
    static const std::vector<TransactionFlag> flags{TransactionFlag::None, TransactionFlag::Question, TransactionFlag::Suspicious,
                                                    TransactionFlag::Confirmed};
    return flags;
}

std::optional<TransactionNote> TransactionNotes::note(std::uint64_t index)
{
    Statement row = db_.prepare(std::string(kNoteColumns) + " AND n.idx = ?2");
    row.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(index));
    if (!row.step())
        return std::nullopt;
    return noteFrom(row);
}

std::vector<TransactionNote> TransactionNotes::all()
{
    Statement rows = db_.prepare(std::string(kNoteColumns) + " ORDER BY n.idx");
    rows.bind(1, tapeId_);
    std::vector<TransactionNote> notes;
    while (rows.step())
        notes.push_back(noteFrom(rows));
    return notes;
}

void TransactionNotes::set(std::uint64_t index, TransactionFlag flag, const std::string& text, const std::string& author)
{
    if (text.size() > kMaxNoteBytes)
        throw Error("the note on transaction " + std::to_string(index) + " is " + std::to_string(text.size()) + " bytes long; at most " +
                    std::to_string(kMaxNoteBytes) + " are stored");
    Statement exists = db_.prepare("SELECT 1 FROM transactions WHERE tape_id = ?1 AND idx = ?2");
    exists.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(index));
    if (!exists.step())
        throw Error("case " + db_.path() + ": tape " + std::to_string(tapeId_) + " has no transaction " + std::to_string(index) +
                    " to note");
    if (flag == TransactionFlag::None && blank(text)) {
        Statement remove = db_.prepare("DELETE FROM transaction_notes WHERE tape_id = ?1 AND idx = ?2");
        remove.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(index)).run();
        return;
    }
    std::optional<AuditorKey> key;
    try {
        key = AuditorKey::loadOrCreate();
    } catch (const Error&) {
        // Stored unsigned: a report prints it as a note nobody vouches for.
    }
    const std::string flagName = transactionFlagName(flag), noteText = toValidUtf8(text),
                      noteAuthor = toValidUtf8(author.empty() ? defaultAuthor() : author), updatedAt = utcNow();
    Statement tape = db_.prepare("SELECT chain_head, size FROM tapes WHERE id = ?1");
    tape.bind(1, tapeId_);
    std::optional<Signature> signature;
    if (key && tape.step())
        signature = key->sign(ByteSpan(std::string_view(
            signedText(tape.text(0), tape.int64(1), static_cast<std::int64_t>(index), flagName, noteText, noteAuthor, updatedAt))));
    Statement store = db_.prepare(
        "INSERT INTO transaction_notes(tape_id, idx, flag, note, author, updated_at, public_key, signature) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"
        " ON CONFLICT(tape_id, idx) DO UPDATE SET flag = excluded.flag, note = excluded.note, author = excluded.author,"
        " updated_at = excluded.updated_at, public_key = excluded.public_key, signature = excluded.signature");
    store.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(index)).bind(3, flagName).bind(4, noteText).bind(5, noteAuthor).bind(6, updatedAt);
    if (signature) {
        store.bindBlob(7, ByteSpan(key->publicKey().data(), key->publicKey().size()));
        store.bindBlob(8, ByteSpan(signature->data(), signature->size()));
    } else {
        store.bindNull(7);
        store.bindNull(8);
    }
    store.run();
}

std::string TransactionNotes::defaultAuthor()
{
    for (const char* variable : {"USER", "USERNAME", "LOGNAME"})
        if (const char* value = std::getenv(variable); value && *value)
            return value;
    return "auditor";
}

}  // namespace zkdv
