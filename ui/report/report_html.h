#pragma once
// The words and tables of an audit report as HTML, in two flavours: a self-contained file
// (inline CSS, charts as data URIs, nothing fetched from anywhere) and the rich-text subset
// a QTextDocument lays out onto PDF pages (charts go on their own page there).

#include <QString>

namespace zkdv {
struct ReportData;
}

namespace zkdv::ui {

class ReportCharts;

class ReportHtml {
public:
    enum class Target { File, TextDocument };

    // The per-transaction table shows at most this many rows; the CSV export has them all.
    static constexpr std::size_t kMaxTableRows = 2000;

    ReportHtml(const ReportData& report, Target target);

    // The report's outcome in words (auditOutcomeName): PASSED, CONSISTENT WITHIN ROUNDING, FAILED, …
    QString verdictWord() const;
    // Title, verdict, headline and warnings (first thing on page one), counts, sampling
    // statement, tape and program identity, model, optimizer, environment, redo command,
    // worst divergences, auditor notes.
    QString summary() const;
    // The auditor's flags and notes (part of summary()).
    QString auditorNotes() const;
    // The per-transaction table (capped at kMaxTableRows with a note pointing to the CSV).
    QString transactions() const;
    // Every chart as an embedded PNG with its caption (Target::File only).
    static QString charts(const ReportCharts& charts);
    // A complete HTML document around `body`.
    QString document(const QString& body) const;

private:
    QString table(const QString& headerRow, const QString& rows) const;
    QString keyValues(const QStringList& pairs) const;
    QString heading(const QString& text) const;
    // The redo command: one unbroken line on a PDF page (shrunk to fit), wrapped only at
    // spaces in an HTML file.
    QString redoCommand() const;

    const ReportData& report_;
    Target target_;
};

}  // namespace zkdv::ui
