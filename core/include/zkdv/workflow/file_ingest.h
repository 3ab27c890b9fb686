#pragma once
// Ingest of the files an auditor hands over (named on zkdv-audit ingest's command line, or
// dropped on the workstation): the one workflow both frontends run. Tapes go first, so that
// program files given alongside find the tapes they belong to; every file gets a result, and
// one that fails never stops the others.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/store/audit_file.h"
#include "zkdv/store/case_store.h"
#include "zkdv/tape/tape_scanner.h"

namespace zkdv {

enum class FileIngestOutcome {
    Ingested,        // a new tape or program is in the case
    AlreadyPresent,  // the same tape (chain head and size) or program was in the case already
    Rejected,        // a tape that failed verification: a finding about the tape
    Unreadable,      // a file that could not be read, or is neither a tape nor a program of the case's tapes
};

// "ingested", "already-present", "rejected", "unreadable": as zkdv-audit ingest --json spells them.
std::string_view fileIngestOutcomeName(FileIngestOutcome outcome);

struct IngestedFile {
    std::string path;
    // Tape, or Other for a (would-be) program file; nullopt when the file could not be read at all.
    std::optional<AuditFileKind> kind;
    bool isTape() const { return kind == AuditFileKind::Tape; }
    FileIngestOutcome outcome = FileIngestOutcome::Unreadable;
    std::string error;                  // why, when Rejected or Unreadable
    std::int64_t tapeId = 0;            // a tape's id in the case, when ingested or present
    std::optional<TapeSummary> summary; // a tape's verified summary (also of a rejected one, when it got that far)
    std::string linkText;               // a tape of a resumed run: its link to the tape before (tape_link.h)
    // What became of the seal over the tape's rows (zkdv/store/tape_seal.h), when not the usual
    // (sealed at ingest, or already sealed): sealed anew, rows that differ from the tape, no key.
    std::string sealText;
    std::string programSha256;          // a program's SHA-256
    std::vector<std::int64_t> programTapes;  // the tapes a program belongs to

    bool ok() const { return outcome == FileIngestOutcome::Ingested || outcome == FileIngestOutcome::AlreadyPresent; }
    // One line saying what happened to the file, the same in the CLI and the workstation.
    std::string describe() const;
};

// Ingests `paths` into `store`: tapes first (each in its own SQLite transaction), then the
// others as sealed program files. `onFile` hears each result as it is known. Only
// OperationCancelled (from options.progress) ends the batch early; it propagates.
std::vector<IngestedFile> ingestFiles(CaseStore& store, const std::vector<std::string>& paths, const IngestOptions& options,
                                      const std::function<void(const IngestedFile&)>& onFile = {});

}  // namespace zkdv
