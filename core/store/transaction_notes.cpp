#include "zkdv/store/transaction_notes.h"

#include <cctype>
#include <cstdlib>

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"
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

TransactionNote noteFrom(const Statement& row)
{
    TransactionNote note;
    note.index = static_cast<std::uint64_t>(row.int64(0));
    // The schema's CHECK admits only the four names; a case is untrusted all the same.
    note.flag = transactionFlagFromName(row.text(1)).value_or(TransactionFlag::None);
    note.note = toValidUtf8(row.text(2));
    note.author = toValidUtf8(row.text(3));
    note.updatedAt = row.text(4);
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
    Statement row = db_.prepare("SELECT idx, flag, note, author, updated_at FROM transaction_notes WHERE tape_id = ?1 AND idx = ?2");
    row.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(index));
    if (!row.step())
        return std::nullopt;
    return noteFrom(row);
}

std::vector<TransactionNote> TransactionNotes::all()
{
    Statement rows = db_.prepare("SELECT idx, flag, note, author, updated_at FROM transaction_notes WHERE tape_id = ?1 ORDER BY idx");
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
    Statement store = db_.prepare(
        "INSERT INTO transaction_notes(tape_id, idx, flag, note, author, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"
        " ON CONFLICT(tape_id, idx) DO UPDATE SET flag = excluded.flag, note = excluded.note, author = excluded.author,"
        " updated_at = excluded.updated_at");
    store.bind(1, tapeId_)
        .bind(2, static_cast<std::int64_t>(index))
        .bind(3, transactionFlagName(flag))
        .bind(4, toValidUtf8(text))
        .bind(5, toValidUtf8(author.empty() ? defaultAuthor() : author))
        .bind(6, utcNow())
        .run();
}

std::string TransactionNotes::defaultAuthor()
{
    for (const char* variable : {"USER", "USERNAME", "LOGNAME"})
        if (const char* value = std::getenv(variable); value && *value)
            return value;
    return "auditor";
}

}  // namespace zkdv
