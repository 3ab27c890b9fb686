#include <cstdio>
#include <cstring>
#include <fstream>

#include "command_runner.h"
#include "commands.h"
#include "summary_json.h"
#include "terminal_progress.h"
#include "zkdv/store/audit_file.h"
#include "zkdv/workflow/file_ingest.h"
#include "zkdv/workflow/handed_files.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {


int runIngest(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit ingest FILE|FOLDER... --case CASE [--embed] [--allow-incomplete] [--sha256] [--json]",
                          "Verifies tapes and loads them into an audit case (created if missing), one SQLite\n"
                          "transaction per tape: a tape that fails leaves the case as it was. Files that are not\n"
                          "tapes are taken as sealed program files and stored when their SHA-256 matches a tape's\n"
                          "program. A tape is identified by its chain head and size; ingesting the same tape again\n"
                          "changes nothing (except storing a file SHA-256 asked for now). A folder stands for every\n"
                          "file under it, in the order of their paths.\n"
                          "Exit 0 when every file was ingested, 1 when a tape failed verification, 2 when a file\n"
                          "could not be read or matched nothing.");
    parser.setPositionals("FILE|FOLDER...", "tapes (*.zkdv) and sealed program files, or folders of them", 1, true);
    parser.addOption("case", "CASE", "the audit case file (*.zkaudit)");
    parser.addFlag("embed", "copy record payloads into the case, making it self-contained");
    parser.addFlag("allow-incomplete", "also ingest the readable part of truncated or unsealed tapes");
    parser.addFlag("sha256", "also store each tape file's SHA-256 (hashes every byte a second time)");
    parser.addFlag("json", "print JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("ingest", parser, argc, argv, [&]() {
        if (!parser.has("case"))
            throw UsageError("--case CASE is required");
        CaseStore store(parser.value("case"), CaseStore::Access::ReadWrite);
        TerminalProgress progress(!parser.has("quiet"));
        IngestOptions options;
        options.embed = parser.has("embed");
        options.allowIncomplete = parser.has("allow-incomplete");
        options.computeFileSha256 = parser.has("sha256");
        options.progress = &progress;

        const bool json = parser.has("json");
        int exitCode = kExitOk;
        nlohmann::json results = nlohmann::json::array();
        ingestFiles(store, expandFolders(parser.positionals()), options, [&](const IngestedFile& file) {
            progress.finish();
            nlohmann::json entry = {{"file", file.path}, {"result", std::string(fileIngestOutcomeName(file.outcome))}};
            if (file.kind)
                entry["kind"] = file.isTape() ? "tape" : "program";
            if (file.ok() && file.isTape()) {
                entry["tape_id"] = file.tapeId;
                if (!file.sealText.empty())
                    entry["seal"] = file.sealText;
            }
            if (file.summary)
                entry["tape"] = summaryJson(*file.summary);
            if (file.ok() && !file.isTape()) {
                entry["sha256"] = file.programSha256;
                entry["tape_ids"] = file.programTapes;
            }
            if (!file.ok()) {
                entry["error"] = file.error;
                std::fprintf(stderr, "%s\n", file.error.c_str());
                // A tape that failed verification is a finding (1); a file that could not be
                // read, or matched nothing, is the auditor's input (2).
                exitCode = std::max(exitCode, file.outcome == FileIngestOutcome::Rejected ? kExitCheckFailed : kExitUsage);
            } else if (!json) {
                std::printf("%s\n", file.describe().c_str());
            }
            results.push_back(entry);
        });
        if (parser.has("json"))
            std::printf("%s\n", toJsonText(nlohmann::json{{"case", parser.value("case")}, {"files", results}}, 2).c_str());
        return exitCode;
    });
}

}  // namespace zkdv::cli
