// The report as CSV (RFC 4180: CRLF line ends, fields quoted when they hold a comma, quote
// or line break): a header row, then one row per replayed transaction and comparison
// (docs/report-schema.md, "CSV").

#include <cmath>
#include <cstdio>
#include <map>

#include "zkdv/report/audit_report.h"
#include "zkdv/report/csv_text.h"
#include "zkdv/util/utf8.h"

namespace zkdv {

namespace {

std::string field(const std::string& stored) { return csvField(stored); }
std::string number(double value) { return csvNumber(value); }

}  // namespace

std::string csvField(const std::string& stored)
{
    const std::string text = toValidUtf8(stored);
    if (text.find_first_of(",\"\r\n") == std::string::npos)
        return text;
    std::string quoted = "\"";
    for (char c : text)
        quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
    return quoted + "\"";
}

std::string csvNumber(double value)
{
    if (std::isnan(value))
        return "nan";
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    char buffer[40];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

std::string renderReportCsv(const ReportData& report)
{
    std::string out =
        "index,segment,selected,transaction_verdict,tensor,slot,comparison_verdict,elements,bitwise_equal,max_abs,rel_l2,cosine,"
        "max_ulp,mean_ulp,nan_mismatches,inf_mismatches,flag,note\r\n";
    std::map<std::uint64_t, const TransactionNote*> notes;
    for (const TransactionNote& note : report.auditorNotes)
        notes[note.index] = &note;
    for (const ReportTransaction& t : report.transactions) {
        const auto noted = notes.find(t.index);
        // The auditor's flag and note, last (new columns only at the end): "none" and "" without one.
        const std::string tail = noted == notes.end() ? std::string(",none,")
                                                      : "," + std::string(transactionFlagName(noted->second->flag)) + "," + field(noted->second->note);
        const std::string lead =
            std::to_string(t.index) + "," + std::to_string(t.segment) + "," + (t.selected ? "1" : "0") + "," + field(std::string(verdictName(t.verdict))) + ",";
        if (t.comparisons.empty()) {  // nothing was compared (unverifiable): the transaction still gets its row
            out += lead + ",,,,,,,,,,," + tail + "\r\n";
            continue;
        }
        for (const ReportComparison& c : t.comparisons) {
            const DivergenceMetrics& m = c.metrics;
            out += lead + field(c.tensor) + "," + field(c.slot) + "," + field(std::string(verdictName(c.verdict))) + "," + std::to_string(m.elements) + "," +
                   (m.bitwiseEqual ? "1" : "0") + "," + number(m.maxAbs) + "," + number(m.relativeL2) + "," + number(m.cosine) + "," +
                   number(m.maxUlp) + "," + number(m.meanUlp) + "," + std::to_string(m.nanMismatches) + "," +
                   std::to_string(m.infMismatches) + tail + "\r\n";
        }
    }
    return out;
}

}  // namespace zkdv
