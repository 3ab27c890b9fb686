#include "zkdv/workflow/file_ingest.h"

#include "zkdv/store/tape_link.h"
#include "zkdv/util/progress.h"
#include "zkdv/workflow/tape_summary_text.h"

namespace zkdv {

namespace {

std::string fileNameOf(const std::string& path)
{
    const std::size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

IngestedFile ingestTapeFile(CaseStore& store, const std::string& path, const IngestOptions& options)
{
    IngestedFile file;
    file.path = path;
    file.kind = AuditFileKind::Tape;
    try {
        const IngestResult result = store.ingestTape(path, options);
        file.outcome = result.alreadyPresent ? FileIngestOutcome::AlreadyPresent : FileIngestOutcome::Ingested;
        file.tapeId = result.tapeId;
        file.summary = result.summary;
        if (result.resealed)
            file.sealText = "its rows in the case are exactly what the tape gives, and are sealed anew with this user's key";
        else if (result.rowsDiffer)
            file.sealText = "its rows in the case DIFFER from the tape (changed since they were ingested): left as they are, unsealed by "
                            "this user; reports of this case read NOT VOUCHED; ingest the tape into a new case";
        else if (!result.sealProblem.empty())
            file.sealText = "its rows are stored unsealed (" + result.sealProblem + "): reports of this case read NOT VOUCHED";
        // A tape of a resumed run: whether it continues the tape it names (checked again
        // whenever the case is read, so a predecessor ingested later counts).
        if (result.summary.root && result.summary.root->resumes)
            if (const std::optional<CaseTape> tape = store.tape(result.tapeId))
                file.linkText = tape->link.describe();
    } catch (const IngestError& error) {
        file.outcome = FileIngestOutcome::Rejected;
        file.error = error.what();
        file.summary = error.summary();
    }
    return file;
}

IngestedFile ingestProgramFile(CaseStore& store, const std::string& path)
{
    IngestedFile file;
    file.path = path;
    file.kind = AuditFileKind::Other;
    try {
        const ProgramFileResult result = store.addProgramFile(path);
        file.outcome = result.alreadyPresent ? FileIngestOutcome::AlreadyPresent : FileIngestOutcome::Ingested;
        file.programSha256 = result.sha256;
        file.programTapes = result.matchingTapes;
    } catch (const OperationCancelled&) {
        throw;
    } catch (const Error& error) {
        file.outcome = FileIngestOutcome::Unreadable;
        file.error = path + ": not a ZKDV tape, and not a sealed program of a tape in this case (" + error.what() + ")";
    }
    return file;
}

}  // namespace

std::string_view fileIngestOutcomeName(FileIngestOutcome outcome)
{
    switch (outcome) {
    case FileIngestOutcome::Ingested: return "ingested";
    case FileIngestOutcome::AlreadyPresent: return "already-present";
    case FileIngestOutcome::Rejected: return "rejected";
    case FileIngestOutcome::Unreadable: return "unreadable";
    }
    return "unreadable";
}

std::string IngestedFile::describe() const
{
    if (!ok())
        return error;
    const std::string name = fileNameOf(path);
    if (!isTape())
        return name + ": sealed program " + programSha256 + (outcome == FileIngestOutcome::AlreadyPresent ? " already in the case" : " stored") +
               " for " + std::to_string(programTapes.size()) + " tape(s)";
    std::string line = name + ": " + (outcome == FileIngestOutcome::AlreadyPresent ? "already in the case" : "ingested") + " as tape " +
                       std::to_string(tapeId);
    if (summary) {
        line += " (" + tapeCountsText(*summary) + ")";
        if (!summary->complete())
            line += ": its readable part, up to transaction " + std::to_string(summary->transactionCount);
    }
    if (!linkText.empty())
        line += "; " + linkText;
    if (!sealText.empty())
        line += "; " + sealText;
    return line;
}

std::vector<IngestedFile> ingestFiles(CaseStore& store, const std::vector<std::string>& paths, const IngestOptions& options,
                                      const std::function<void(const IngestedFile&)>& onFile)
{
    std::vector<IngestedFile> results;
    auto report = [&](IngestedFile file) {
        if (onFile)
            onFile(file);
        results.push_back(std::move(file));
    };
    std::vector<std::string> programs;
    for (const std::string& path : paths) {
        AuditFileKind kind = AuditFileKind::Other;
        try {
            kind = sniffAuditFile(path);
        } catch (const Error& error) {
            IngestedFile file;
            file.path = path;
            file.error = error.what();
            report(std::move(file));
            continue;
        }
        if (kind == AuditFileKind::Tape) {
            try {
                report(ingestTapeFile(store, path, options));
            } catch (const OperationCancelled&) {
                throw;
            } catch (const Error& error) {
                IngestedFile file;
                file.path = path;
                file.kind = AuditFileKind::Tape;
                file.error = error.what();
                report(std::move(file));
            }
        } else {
            programs.push_back(path);
        }
    }
    for (const std::string& path : programs)
        report(ingestProgramFile(store, path));
    return results;
}

}  // namespace zkdv
