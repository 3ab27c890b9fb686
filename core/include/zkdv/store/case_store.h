#pragma once
// An audit case: one SQLite file (*.zkaudit) holding ingested tapes, programs and, later,
// replay results. Every reader and writer of a case goes through this class, and every
// frontend opens a case through its constructor: one policy for schemas and migrations.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/store/tape_link.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/progress.h"

namespace zkdv {

class Database;

// A tape that could not be ingested (corrupt, or incomplete without permission); the case
// is unchanged.
class IngestError : public Error {
public:
    IngestError(const std::string& message, std::optional<TapeSummary> summary)
        : Error(message), summary_(std::move(summary)) {}
    const std::optional<TapeSummary>& summary() const { return summary_; }

private:
    std::optional<TapeSummary> summary_;
};

struct IngestOptions {
    bool embed = false;            // copy every record payload into the case
    bool allowIncomplete = false;  // accept truncated and unsealed tapes (their readable part)
    // Also hash the whole file (a second SHA-256 pass over every byte) and store it with the
    // tape; the tape's identity is its chain head and size either way.
    bool computeFileSha256 = false;
    ProgressSink* progress = nullptr;
};

struct IngestResult {
    std::int64_t tapeId = 0;
    // The same tape (same chain head and size) was ingested before: nothing changed, except
    // a file SHA-256 computed now is stored when the case had none for it.
    bool alreadyPresent = false;
    // The tape's rows are sealed with this user's key when it is ingested (zkdv/store/tape_seal.h).
    // Ingested again, rows that are exactly what the tape gives are sealed anew (resealed); rows
    // that are not were changed since their ingest (rowsDiffer), and are left as they are.
    bool resealed = false;
    bool rowsDiffer = false;
    std::string sealProblem;  // why the rows were stored unsealed: no signing key could be had
    TapeSummary summary;
};

// One ingested tape, as the case lists it.
struct CaseTape {
    std::int64_t id = 0;
    std::string path;
    std::string chainHead;    // with size: the tape's identity in the case
    std::string fileSha256;   // empty unless computed at ingest (IngestOptions::computeFileSha256)
    std::uint64_t size = 0;
    std::string status;
    std::string producer;
    std::string optimizerContract;
    std::string programSha256;
    std::string programKind;
    bool programPresent = false;  // the program's bytes are in the case (embedded or supplied)
    int snapshotInterval = 0;
    std::uint64_t recordCount = 0;
    std::uint64_t transactionCount = 0;
    std::uint64_t snapshotCount = 0;
    bool embedded = false;
    std::string ingestedAt;
    std::string rootJson;
    // A run resumed from checkpoints spans tapes (tape format 1.10): the run's transactions on
    // the tapes before this one (its transaction i is the run's transactionsBefore + i), and
    // whether it continues the tape its root names.
    std::uint64_t transactionsBefore = 0;
    TapeLink link;
    // Who signed the tape (format 1.11, section 7.1), verified at ingest: the key id (hex
    // SHA-256 of the public key) and keyAlgorithmName(); both empty for an unsigned tape.
    std::string signerKeyId;
    std::string signerAlgorithm;
    bool isSigned() const { return !signerKeyId.empty(); }
};

struct ProgramFileResult {
    std::string sha256;
    std::vector<std::int64_t> matchingTapes;
    bool alreadyPresent = false;
};

class CaseStore {
public:
    enum class Access { ReadOnly, ReadWrite };

    // Opens (ReadWrite creates when missing), checks the schema objects and brings the schema
    // up to date. ReadOnly access to a case of an older schema migrates it once through a
    // writing connection (migratedFromVersion() says so), then reads it; when the file cannot
    // be written it throws SchemaUpgradeNeeded saying why and what to do. Throws
    // DatabaseError/Error with the path when the file is not a case or is too new, and
    // UnexpectedCaseSchema when it carries schema objects ZKDV did not create.
    CaseStore(const std::string& path, Access access);
    ~CaseStore();
    CaseStore(const CaseStore&) = delete;
    CaseStore& operator=(const CaseStore&) = delete;

    // Verifies and ingests one tape in a single transaction. Throws IngestError when the
    // tape is corrupt (or incomplete without allowIncomplete), NotATapeError/IoError when
    // it cannot be read; in every failure the case is left as it was.
    IngestResult ingestTape(const std::string& tapePath, const IngestOptions& options = {});

    // Stores a sealed program file supplied apart from its tape. Throws Error when its
    // digest matches no tape in the case.
    ProgramFileResult addProgramFile(const std::string& programPath);

    std::vector<CaseTape> tapes();
    std::optional<CaseTape> tape(std::int64_t id);

    const std::string& path() const { return path_; }
    Database& database() { return *db_; }
    // The schema version the case had before this open migrated it; empty when it needed none.
    std::optional<int> migratedFromVersion() const { return migratedFrom_; }

private:
    std::string path_;
    std::unique_ptr<Database> db_;
    std::optional<int> migratedFrom_;
};

}  // namespace zkdv
