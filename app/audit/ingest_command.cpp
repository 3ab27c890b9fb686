#include <cstdio>
#include <cstring>
#include <fstream>

#include "command_runner.h"
#include "commands.h"
#include "summary_json.h"
#include "terminal_progress.h"
#include "zkdv/store/audit_file.h"
#include "zkdv/util/json_text.h"

namespace zkdv::cli {


int runIngest(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit ingest FILE... --case CASE [--embed] [--allow-incomplete] [--sha256] [--json]",
                          "Verifies tapes and loads them into an audit case (created if missing), one SQLite\n"
                          "transaction per tape: a tape that fails leaves the case as it was. Files that are not\n"
                          "tapes are taken as sealed program files and stored when their SHA-256 matches a tape's\n"
                          "program. A tape is identified by its chain head and size; ingesting the same tape again\n"
                          "changes nothing (except storing a file SHA-256 asked for now).\n"
                          "Exit 0 when every file was ingested, 1 when a tape failed verification, 2 when a file\n"
                          "could not be read or matched nothing.");
    parser.setPositionals("FILE...", "tapes (*.zkdv) and sealed program files", 1, true);
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

        int exitCode = kExitOk;
        auto worsen = [&](int code) { exitCode = std::max(exitCode, code); };
        nlohmann::json results = nlohmann::json::array();
        std::vector<std::string> programs;
        // Tapes first, so that program files given alongside find the tapes they belong to.
        for (const std::string& path : parser.positionals()) {
            AuditFileKind kind = AuditFileKind::Other;
            try {
                kind = sniffAuditFile(path);
            } catch (const Error& error) {
                results.push_back({{"file", path}, {"result", "unreadable"}, {"error", error.what()}});
                std::fprintf(stderr, "%s\n", error.what());
                worsen(kExitUsage);
                continue;
            }
            if (kind != AuditFileKind::Tape) {
                programs.push_back(path);
                continue;
            }
            nlohmann::json entry = {{"file", path}, {"kind", "tape"}};
            try {
                IngestResult result = store.ingestTape(path, options);
                progress.finish();
                entry["result"] = result.alreadyPresent ? "already-present" : "ingested";
                entry["tape_id"] = result.tapeId;
                entry["tape"] = summaryJson(result.summary);
                if (!parser.has("json"))
                    std::printf("%s: %s as tape %lld (%s)\n", path.c_str(), result.alreadyPresent ? "already in the case" : "ingested",
                                static_cast<long long>(result.tapeId), summaryLine(result.summary).c_str());
                // A tape of a resumed run: whether it continues the tape it names (its link is
                // checked again whenever the case is read, so a predecessor ingested later counts).
                if (result.summary.root && result.summary.root->resumes && !parser.has("json"))
                    if (const std::optional<CaseTape> tape = store.tape(result.tapeId))
                        std::printf("  %s\n", tape->link.describe().c_str());
            } catch (const IngestError& error) {
                progress.finish();
                entry["result"] = "rejected";
                entry["error"] = error.what();
                if (error.summary())
                    entry["tape"] = summaryJson(*error.summary());
                std::fprintf(stderr, "%s\n", error.what());
                worsen(kExitCheckFailed);
            } catch (const Error& error) {
                progress.finish();
                entry["result"] = "unreadable";
                entry["error"] = error.what();
                std::fprintf(stderr, "%s\n", error.what());
                worsen(kExitUsage);
            }
            results.push_back(entry);
        }
        for (const std::string& path : programs) {
            nlohmann::json entry = {{"file", path}, {"kind", "program"}};
            try {
                ProgramFileResult result = store.addProgramFile(path);
                entry["result"] = result.alreadyPresent ? "already-present" : "ingested";
                entry["sha256"] = result.sha256;
                entry["tape_ids"] = result.matchingTapes;
                if (!parser.has("json"))
                    std::printf("%s: program %s %s for %zu tape(s)\n", path.c_str(), result.sha256.c_str(),
                                result.alreadyPresent ? "already in the case" : "stored", result.matchingTapes.size());
            } catch (const Error& error) {
                entry["result"] = "unreadable";
                entry["error"] = std::string(error.what()) + " (not a ZKDV tape either)";
                std::fprintf(stderr, "%s: not a ZKDV tape, and as a program file: %s\n", path.c_str(), error.what());
                worsen(kExitUsage);
            }
            results.push_back(entry);
        }
        if (parser.has("json"))
            std::printf("%s\n", toJsonText(nlohmann::json{{"case", parser.value("case")}, {"files", results}}, 2).c_str());
        return exitCode;
    });
}

}  // namespace zkdv::cli
