#pragma once
// The one tape reader: reads a tape once, in order (positioned reads into a few reused
// windows; a memory map only for frames larger than a window), checking framing, digests,
// the hash chain, record order and payloads, and hands each valid record to a visitor.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/sampling_plausibility.h"
#include "zkdv/tape/seal_record.h"
#include "zkdv/tape/tape_signature.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/error.h"
#include "zkdv/util/progress.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

enum class TapeStatus { Sealed, Unsealed, Truncated, Corrupt };
std::string_view tapeStatusName(TapeStatus status);  // "sealed", "unsealed", "truncated", "corrupt"

// The file is not a tape at all (wrong magic, unsupported major version, too short to
// tell). Distinct from a damaged tape, which scans to a Corrupt summary.
class NotATapeError : public FormatError {
public:
    using FormatError::FormatError;
};

// The first thing wrong with a tape: which record, where in the file, what and why.
struct TapeProblem {
    TapeProblem() = default;
    TapeProblem(std::uint64_t recordIndex, std::uint64_t byteOffset, std::string message)
        : recordIndex(recordIndex), byteOffset(byteOffset), message(std::move(message))
    {
    }

    std::uint64_t recordIndex = 0;  // the record at fault (the one that would come next when truncated)
    std::uint64_t byteOffset = 0;   // file offset of the field at fault
    std::string message;            // says what was expected and what was found
    // What the record at fault says it is: its type, when its frame header is whole and its
    // header check matches (a type behind a failed check may be the damage itself); and,
    // when that type is a transaction, the transaction index it holds by its place (the
    // valid transactions before it), which the auditor knows the transaction by.
    std::optional<std::uint32_t> recordType;
    std::optional<std::uint64_t> transactionIndex;
    // The start of the frame of the record at fault, when the problem lies in a frame rather
    // than the file header: where the record can be read again (the workstation's bytes pane).
    std::optional<std::uint64_t> frameOffset;

    std::string describe() const;   // "record 17 (transaction 14) at byte 40312: …"
    // "transaction 14", "snapshot", "unknown type 77"; empty when the type is not known.
    std::string recordText() const;
};

// Where one record sits and what it holds; payload points into the reader's window (or
// the mapped file) and is valid only during the visitor call.
struct RecordLocation {
    std::uint64_t index = 0;
    std::uint32_t type = 0;
    std::uint64_t offset = 0;  // start of the frame
    std::uint64_t frameSize = 0;
    ByteSpan payload;
    Digest digest{};
};

struct TapeSummary {
    std::string path;
    TapeStatus status = TapeStatus::Corrupt;
    std::uint16_t formatMajor = 0;
    std::uint16_t formatMinor = 0;
    std::uint64_t fileSize = 0;
    std::uint64_t validBytes = 0;  // end of the last whole valid record
    std::uint64_t recordCount = 0; // whole valid records
    std::uint64_t transactionCount = 0;
    std::uint64_t snapshotCount = 0;
    std::uint64_t unknownRecordCount = 0;  // non-critical records of later minor versions, skipped
    // The last valid snapshot holds the state after the last valid transaction (spec 2.4: every
    // sealed 1.5 tape; before 1.5 only when the count is a multiple of the interval).
    bool finalStateOnTape = false;
    // The state digests (spec section 8) of snapshot 0 and, when finalStateOnTape, of the
    // last snapshot: what a resumed tape's start is checked against (spec 3.4).
    std::optional<Digest> firstStateDigest;
    std::optional<Digest> finalStateDigest;
    // What the last valid transaction recorded of its scheduler's epoch and its GradScaler's
    // step (spec 3.3, 5.6), where the root declares them: where a resumed tape goes on from.
    std::optional<std::uint64_t> lastScheduleEpoch;
    std::optional<GradScalerStep> lastGradScalerStep;
    DrawnCheckCounts drawnChecks;          // of the valid transactions
    Digest chainHead{};
    std::optional<Digest> fileSha256;  // when ScanOptions::computeFileSha256
    std::optional<TapeProblem> problem;
    std::optional<RootRecord> root;
    std::optional<SealRecord> seal;
    std::optional<Digest> embeddedProgramSha256;
    // Who signed the tape (spec 7.1, since 1.11), the signature verified against the tape as
    // read; nullopt for an unsigned tape (and for every tape before 1.11). Whether the key is
    // trusted is the auditor's question (TrustedKeys).
    std::optional<TapeSigner> signer;

    bool complete() const { return status == TapeStatus::Sealed; }
    // Whether the checks are as many as the root's probabilities make likely; none without a root.
    std::optional<SamplingPlausibility> samplingPlausibility() const;
};

// Receives every valid record, in file order, after its digest and chain link were
// checked. The views are valid only during the call. Throwing stops the scan.
class TapeVisitor {
public:
    virtual ~TapeVisitor() = default;
    virtual void onRoot(const RootRecord&, const RecordLocation&) {}
    virtual void onProgram(const RecordLocation&) {}
    virtual void onSnapshot(const SnapshotRecord&, const RecordLocation&) {}
    virtual void onTransaction(const TransactionRecord&, const RecordLocation&) {}
    virtual void onSeal(const SealRecord&, const RecordLocation&) {}
};

struct ScanOptions {
    bool computeFileSha256 = false;
    ProgressSink* progress = nullptr;  // reports bytes; may cancel (OperationCancelled)
    unsigned hashThreads = 0;          // 0: as many as the machine has, at most 4
    // Stop after the root (and program) record: enough for a quick look at a tape.
    bool headerOnly = false;
};

// Scans the tape at `path`. Damage is reported in the summary (Corrupt/Truncated with a
// problem), not thrown; throws IoError when the file cannot be read, NotATapeError when
// it is not a tape, OperationCancelled when the progress sink asks to stop.
TapeSummary scanTape(const std::string& path, TapeVisitor* visitor = nullptr, const ScanOptions& options = {});

// Scans a tape already in memory (`name` stands for its path in the summary and messages)
// through the same code as scanTape; the fuzz target uses it to skip a file per input.
TapeSummary scanTapeBytes(ByteSpan bytes, const std::string& name, TapeVisitor* visitor = nullptr, const ScanOptions& options = {});

}  // namespace zkdv
