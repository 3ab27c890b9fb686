#pragma once
// An auditor's flags and notes on a tape's transactions (table transaction_notes, case
// schema version 8): the auditor's own judgement beside the replay results, shown in the
// workstation's table, filterable (`flag == suspicious`, `note contains "lr"`) and printed in
// the report. Not part of any run's seal (a note is not a result): each note is signed by its
// author's auditor key when it is stored (case schema 18), so that a note a report prints is
// one a known auditor wrote, unchanged. Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/util/auditor_key.h"

namespace zkdv {

class Database;

enum class TransactionFlag { None, Question, Suspicious, Confirmed };

// none, question, suspicious, confirmed: as the case, the filters and the reports spell them.
const char* transactionFlagName(TransactionFlag flag);
std::optional<TransactionFlag> transactionFlagFromName(std::string_view name);
// Every flag, in the order above.
const std::vector<TransactionFlag>& transactionFlags();

struct TransactionNote {
    std::uint64_t index = 0;
    TransactionFlag flag = TransactionFlag::None;
    std::string note;
    std::string author;
    std::string updatedAt;  // UTC, ISO 8601
    // The key that signed the note, when it carries a well-formed signature, and whether that
    // signature holds over the note as stored now (it does not for a note edited by hand).
    std::optional<PublicKey> signer;
    bool signatureHolds = false;
};

// The notes of one tape. Not thread-safe; the Database must outlive it. Throws DatabaseError.
class TransactionNotes {
public:
    // A note longer than this is refused: it is typed by a person, and a case is untrusted.
    static constexpr std::size_t kMaxNoteBytes = 64 * 1024;

    TransactionNotes(Database& db, std::int64_t tapeId) : db_(db), tapeId_(tapeId) {}

    // The transaction's note, or nullopt when it has none.
    std::optional<TransactionNote> note(std::uint64_t index);
    // Every note of the tape, ascending by index.
    std::vector<TransactionNote> all();
    // Stores the note (replacing any), stamped with `author` and the time now and signed with
    // this user's auditor key (unsigned when it cannot be had); flag None with a blank text
    // removes it. Needs a writable connection. Throws Error when the tape
    // has no such transaction or the text is longer than kMaxNoteBytes.
    void set(std::uint64_t index, TransactionFlag flag, const std::string& text, const std::string& author = defaultAuthor());

    // Who the notes are by unless named: $USER (or $USERNAME), else "auditor".
    static std::string defaultAuthor();

private:
    Database& db_;
    std::int64_t tapeId_;
};

}  // namespace zkdv
