#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "command_runner.h"
#include "case_access.h"
#include "commands.h"
#include "trusted_key_options.h"
#include "zkdv/report/audit_attestation.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/report/report_file.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/signing_key.h"
#include "zkdv/workflow/report_export.h"
#include "zkdv/store/audit_file.h"
#include "zkdv/store/case_store.h"

#ifdef ZKDV_WITH_REPORT_DOCUMENTS
#include "report_documents.h"
#endif

namespace zkdv::cli {

int runReport(int argc, char** argv)
{
    ArgumentParser parser(
        "zkdv-audit report CASE -o FILE [--format json|csv|pdf|html | --attest KEY] [--tape ID] [--run ID]\n"
        "                  [--trusted-key KEY]... [--require-trusted]",
        "Writes the audit report of one replay run: the tape's identity and completeness, the\n"
        "program check, model and optimizer, the replay environment, the selection and seed that\n"
        "redo the audit, verdict counts, the worst divergences, every replayed transaction and,\n"
        "for random selections, an exact upper confidence bound on the fraction of bad\n"
        "transactions (docs/report.md). json and csv are for machines (docs/report-schema.md);\n"
        "pdf and html for people.\n"
        "With --attest KEY, FILE is instead the report's verdict signed with KEY (PEM, ECDSA P-256\n"
        "or Ed25519; the auditor's own signing-key.pem works): an in-toto statement whose predicate\n"
        "is a SLSA verification summary about the tape, in a Sigstore bundle (docs/signing.md);\n"
        "zkdv-audit verify-attestation checks it.\n"
        "The tape's signer is judged with the trainer keyring (--trusted-key and the trainer-keys\n"
        "folder, docs/signing.md): with --require-trusted, a tape no trusted key signed cannot pass.\n"
        "Exit 0 when the report is written (whatever it concludes), 1 when it is written but\n"
        "--require-trusted found no trusted signer, 2 on usage errors, an unreadable case or\n"
        "keyring, or a case without a replay run.");
    parser.setPositionals("CASE", "the audit case (*.zkaudit)", 1, false);
    parser.addOption("out", "FILE", "where to write the report (also -o FILE; required)");
    parser.addOption("format", "FMT", "json, csv, pdf or html (default: from the extension of FILE)");
    parser.addOption("tape", "ID", "the tape when the case holds several (default: the only one)");
    parser.addOption("run", "ID", "the replay run (default: the newest of the tape)");
    parser.addOption("attest", "KEY", "write the signed verdict (a Sigstore bundle, *.intoto.json) signed with this PEM private key");
    addTrustedKeyOptions(parser, "write the report, concluding NOT VERIFIED, and exit 1");
    parser.addFlag("quiet", "print nothing on success");

    parser.addShortAlias('o', "out");

    return runCommand("report", parser, argc, argv, [&]() {
        if (!parser.has("out") || parser.value("out").empty())
            throw UsageError("-o FILE is required (the report's format follows its extension: .json, .csv, .pdf, .html)");
        const std::string out = parser.value("out");
        if (parser.has("attest") && parser.has("format"))
            throw UsageError("--attest writes the signed verdict; it takes no --format");
        std::optional<SigningKey> attestKey;
        if (parser.has("attest")) {
            try {
                attestKey.emplace(SigningKey::fromPemFile(parser.value("attest")));
            } catch (const std::exception& error) {
                throw UsageError(error.what());
            }
        }
        const std::optional<ReportFormat> format = attestKey ? std::optional<ReportFormat>(ReportFormat::Json) :
            (parser.has("format") ? reportFormatFromName(parser.value("format")) : reportFormatOfPath(out));
        if (!format)
            throw UsageError(parser.has("format") ? "unknown --format \"" + parser.value("format") + "\" (json, csv, pdf or html)"
                                                  : "cannot tell the format from \"" + out + "\"; give --format json|csv|pdf|html");

        const std::string& casePath = parser.positionals().front();
        if (access(casePath.c_str(), F_OK) != 0)
            throw UsageError("case " + casePath + " does not exist");
        if (sniffAuditFile(casePath) != AuditFileKind::Case)
            throw UsageError(casePath + " is not an audit case; make one with `zkdv-audit ingest TAPE --case CASE`");
        ReportOptions options;
        options.tapeId = static_cast<std::int64_t>(parser.unsignedValue("tape", 0));
        options.runId = static_cast<std::int64_t>(parser.unsignedValue("run", 0));
        const TrustedKeyOptions trust = readTrustedKeyOptions(parser);  // a keyring that cannot be used: exit 2
        options.trustedKeyFiles = trust.files;
        options.requireTrustedSigner = trust.required;

#ifdef ZKDV_WITH_REPORT_DOCUMENTS
        const HeadlessReportDocuments qtDocuments;  // the workstation's renderer (report_documents.h)
        const ReportDocumentRenderer* documents = &qtDocuments;
#else
        const ReportDocumentRenderer* documents = nullptr;
        if (isDocumentFormat(*format))
            throw UsageError("PDF and HTML reports need the workstation build (Qt report library); this zkdv-audit writes json and csv");
#endif

        std::unique_ptr<CaseStore> opened = openCaseForReading(casePath);
        CaseStore& store = *opened;
        ReportData report;
        try {
            report = buildAuditReport(store, options);
        } catch (const ReportError& error) {
            throw UsageError(error.what());
        }
        if (attestKey)
            writeReportFile(out, toJsonText(signAuditAttestation(report, *attestKey), 2) + "\n");
        else
            writeReport(report, *format, out, documents);  // an Error (cannot write) is exit 2 too
        if (!parser.has("quiet")) {
            if (attestKey)
                std::printf("verdict of replay run %lld (%s) signed with key %s, written to %s\n", static_cast<long long>(report.runId),
                            std::string(auditOutcomeName(report.outcome)).c_str(), attestKey->publicKey().keyId().c_str(), out.c_str());
            else
                std::printf("%s report of replay run %lld written to %s\n", std::string(reportFormatName(*format)).c_str(), static_cast<long long>(report.runId), out.c_str());
            for (const std::string& warning : report.warnings)
                std::printf("  warning: %s\n", warning.c_str());
            std::printf("  %s\n", report.headline.c_str());
        }
        // The report is written either way: it says why no trusted key vouches for the tape.
        if (options.requireTrustedSigner && report.signatureTrust != SignatureTrust::Trusted) {
            std::fprintf(stderr, "zkdv-audit report: %s, and --require-trusted requires a trusted signer\n",
                         untrustedSignerText(report.signatureTrust, report.signerKeyId).c_str());
            return kExitCheckFailed;
        }
        return kExitOk;
    });
}

}  // namespace zkdv::cli
