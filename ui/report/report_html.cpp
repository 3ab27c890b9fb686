#include "report/report_html.h"

#include <QObject>
#include <QStringList>

#include <algorithm>
#include <cmath>

#include "plots/chart_style.h"
#include "plots/verdict_palette.h"
#include "report/report_charts.h"
#include "zkdv/report/audit_report.h"

namespace zkdv::ui {

namespace {

constexpr std::size_t kMaxLayoutLines = 300;
// The width a PDF page gives text (A4 less 15 mm margins at 96 dpi, less the document's
// margins), and the smallest size the redo command is shrunk to.
constexpr double kPageTextWidthPx = 180.0 / 25.4 * 96.0 - 12.0;
constexpr double kMinRedoPoints = 4.0;
// Passing and failing take the verdict colours, as printed.
const QString kFailRed = VerdictPalette::printText(Verdict::Diverged).name();
const QString kPassGreen = VerdictPalette::printText(Verdict::Exact).name();

QString esc(const std::string& text) { return QString::fromStdString(text).toHtmlEscaped(); }
QString esc(const QString& text) { return text.toHtmlEscaped(); }
QString mono(const QString& escaped) { return QStringLiteral("<span style=\"font-family: monospace;\">%1</span>").arg(escaped); }
QString orDash(const std::string& text) { return text.empty() ? QStringLiteral("—") : esc(text); }
QString number(double value) { return ChartStyle::formatValue(value); }
QString percent(double fraction) { return QString::number(fraction * 100.0, 'g', 4) + QStringLiteral(" %"); }

QString verdictSpan(Verdict verdict)
{
    return QStringLiteral("<span style=\"color: %1; font-weight: bold;\">%2</span>")
        .arg(VerdictPalette::printText(verdict).name(), VerdictPalette::label(verdict));
}

QString cell(const QString& html, bool header = false)
{
    return header ? QStringLiteral("<th style=\"background-color: #e8eaf0; text-align: left;\">%1</th>").arg(html)
                  : QStringLiteral("<td>%1</td>").arg(html);
}

// A number or short word that must not break across lines.
QString tight(const QString& html) { return QStringLiteral("<td style=\"white-space: nowrap;\">%1</td>").arg(html); }

// Header cells; `widths` (percent of the table, optional) keep narrow numeric columns from
// being squeezed by a long text column.
QString headerRow(const QStringList& titles, const QList<int>& widths = {})
{
    QString row = QStringLiteral("<tr>");
    for (int i = 0; i < titles.size(); ++i)
        row += i < widths.size() ? QStringLiteral("<th width=\"%1%\" style=\"background-color: #e8eaf0; text-align: left;\">%2</th>")
                                       .arg(widths[i])
                                       .arg(esc(titles[i]))
                                 : cell(esc(titles[i]), true);
    return row + QStringLiteral("</tr>");
}

QString worstOf(const ReportTransaction& t, bool ulp)
{
    if (t.comparisons.empty())
        return QStringLiteral("—");
    double worst = 0.0;
    for (const ReportComparison& c : t.comparisons)
        worst = std::max(worst, ulp ? c.metrics.maxUlp : c.metrics.relativeL2);
    return number(worst);
}

}  // namespace

ReportHtml::ReportHtml(const ReportData& report, Target target) : report_(report), target_(target) {}

QString ReportHtml::verdictWord() const
{
    return QString::fromStdString(std::string(auditOutcomeName(report_.outcome)));
}

QString ReportHtml::heading(const QString& text) const
{
    return QStringLiteral("<h2 style=\"font-size: 14pt; color: #1f3a93; margin-top: 14px;\">%1</h2>").arg(esc(text));
}

QString ReportHtml::table(const QString& header, const QString& rows) const
{
    return QStringLiteral("<table border=\"1\" cellspacing=\"0\" cellpadding=\"3\" width=\"100%\" "
                          "style=\"border-collapse: collapse; border-color: #9a9a9a; font-size: 8pt;\">%1%2</table>")
        .arg(header, rows);
}

QString ReportHtml::keyValues(const QStringList& pairs) const
{
    QString rows;
    for (int i = 0; i + 1 < pairs.size(); i += 2)
        rows += QStringLiteral("<tr><th style=\"background-color: #f0f1f5; text-align: left; width: 28%;\">%1</th><td>%2</td></tr>")
                    .arg(esc(pairs[i]), pairs[i + 1]);
    return table(QString(), rows);
}

QString ReportHtml::summary() const
{
    const ReportData& r = report_;
    // Green passed, red failed; amber when the audit proved nothing either way (not verified,
    // not vouched, incomplete): that is not a failure of the tape.
    // CONSISTENT WITHIN ROUNDING is the within-tolerance colour too: confirmed, not bit for bit.
    const QString verdictColour = r.passed()                             ? kPassGreen
                                  : r.outcome == AuditOutcome::Failed ? kFailRed
                                                                      : VerdictPalette::printText(Verdict::WithinTolerance).name();
    const bool replayed = r.runStatus.has_value();
    QString html;

    // Page one, top: what a non-engineer needs, large, red when the audit failed.
    html += QStringLiteral("<h1 style=\"font-size: 18pt; margin-bottom: 2px;\">%1</h1>").arg(QObject::tr("ZKDV audit report"));
    QString origin = QObject::tr("Tape %1 · generated %2 by ZKDV %3")
                         .arg(QString::fromStdString(r.tapePath), QString::fromStdString(r.generatedAt), QString::fromStdString(r.zkdvVersion));
    if (!r.casePath.empty())
        origin += QObject::tr(" · case %1").arg(QString::fromStdString(r.casePath));
    html += QStringLiteral("<p style=\"color: #555555; font-size: 8pt;\">%1</p>").arg(esc(origin));
    html += QStringLiteral("<p style=\"font-size: 26pt; font-weight: bold; color: %1; margin-bottom: 4px;\">%2 %3</p>")
                .arg(verdictColour, esc(QObject::tr("Audit")), verdictWord());
    if (!r.headline.empty())
        html += QStringLiteral("<p style=\"font-size: 16pt; font-weight: bold; color: %1;\">%2</p>").arg(verdictColour, esc(r.headline));
    if (!r.warnings.empty()) {
        html += QStringLiteral("<ul style=\"font-size: 13pt; color: %1;\">").arg(kFailRed);
        for (const std::string& warning : r.warnings)
            html += QStringLiteral("<li><b>%1</b></li>").arg(esc(warning));
        html += QStringLiteral("</ul>");
    }

    // No run (a finding report): no verdict counts, which would read as zero of everything.
    if (replayed) {
    html += heading(QObject::tr("Verdicts"));
    html += table(headerRow({QObject::tr("Selected"), QObject::tr("Replayed"), QObject::tr("Exact"), QObject::tr("Within tolerance"),
                             QObject::tr("Diverged"), QObject::tr("Unverifiable")}),
                  QStringLiteral("<tr>%1%2%3%4%5%6</tr>")
                      .arg(cell(QString::number(r.selectedCount)), cell(QString::number(r.replayedCount)),
                           cell(QString::number(r.exact)), cell(QString::number(r.withinTolerance)),
                           cell(r.diverged ? QStringLiteral("<b style=\"color: %1;\">%2</b>").arg(kFailRed).arg(r.diverged)
                                           : QStringLiteral("0")),
                           cell(r.unverifiable ? QStringLiteral("<b style=\"color: %1;\">%2</b>").arg(kFailRed).arg(r.unverifiable)
                                               : QStringLiteral("0"))));
    }
    if (!r.runProblem.empty())
        html += QStringLiteral("<p style=\"color: %1;\"><b>%2</b> %3</p>").arg(kFailRed, esc(QObject::tr("Run problem:")), esc(r.runProblem));
    if (!r.otherRuns.empty()) {
        html += heading(QObject::tr("Other replay runs of this tape"));
        QString rows;
        for (const ReportOtherRun& other : r.otherRuns)
            rows += QStringLiteral("<tr>%1%2%3%4%5%6%7%8</tr>")
                        .arg(cell(QStringLiteral("#%1").arg(other.id)), cell(esc(std::string(runStatusName(other.status)))), cell(mono(esc(other.selection))),
                             cell(QString::number(other.replayed)), cell(QString::number(other.exact + other.withinTolerance)),
                             cell(other.diverged ? QStringLiteral("<b style=\"color: %1;\">%2</b>").arg(kFailRed).arg(other.diverged)
                                                 : QStringLiteral("0")),
                             cell(QString::number(other.unverifiable)),
                             cell(other.vouched ? QObject::tr("vouched") : QObject::tr("not vouched")));
        html += table(headerRow({QObject::tr("Run"), QObject::tr("Status"), QObject::tr("Selection"), QObject::tr("Replayed"),
                                 QObject::tr("Passed"), QObject::tr("Diverged"), QObject::tr("Unverifiable"), QObject::tr("Seal")}),
                      rows);
    }

    if (r.sampling) {
        const SamplingStatement& s = *r.sampling;
        html += heading(QObject::tr("What the sample says about the whole tape"));
        html += QStringLiteral("<p style=\"font-size: 11pt;\"><b>%1</b></p>").arg(esc(s.sentence));
        html += keyValues({QObject::tr("Transactions in the tape (N)"), QString::number(s.population),
                           QObject::tr("Replayed at random (n)"), QString::number(s.sampled),
                           QObject::tr("Failures found (k)"), QString::number(s.failures),
                           QObject::tr("Bad fraction, 95 % upper bound"), percent(s.upper95),
                           QObject::tr("Bad fraction, 99 % upper bound"), percent(s.upper99),
                           QObject::tr("Method"), orDash(s.method)});
    } else if (!r.samplingNote.empty()) {
        html += heading(QObject::tr("What the replay says about the whole tape"));
        html += QStringLiteral("<p>%1</p>").arg(esc(r.samplingNote));
    }

    html += heading(QObject::tr("The tape"));
    const bool sealed = r.tapeStatus == "sealed";
    // Who signed it is known of a tape in a case (verified at ingest), not of a refused one.
    const QString signedBy =
                       r.signatureTrust == SignatureTrust::UnsignedExpected
                           ? QStringLiteral("<b style=\"color: %1;\">%2</b>")
                                 .arg(kFailRed, esc(QObject::tr("not signed, though your trainer keyring expects a signature").toStdString()))
                       : r.signerKeyId.empty() ? QObject::tr("not signed")
                       : r.signatureTrust == SignatureTrust::Trusted
                           ? QStringLiteral("<span style=\"color: %1;\">%2</span>")
                                 .arg(kPassGreen, esc(QObject::tr("a trusted trainer key (%1), %2 key %3")
                                                          .arg(QString::fromStdString(r.trustedKeyFile), QString::fromStdString(r.signerAlgorithm),
                                                               QString::fromStdString(r.signerKeyId))
                                                          .toStdString()))
                           : QStringLiteral("<b style=\"color: %1;\">%2</b>")
                                 .arg(kFailRed, esc(QObject::tr("a key not in the trainer keyring: %1 key %2")
                                                        .arg(QString::fromStdString(r.signerAlgorithm), QString::fromStdString(r.signerKeyId))
                                                        .toStdString()));
    // A tape that is in no case has no id: its path alone names it.
    QStringList tapeRows = {QObject::tr("Tape"), r.tapeId ? QStringLiteral("#%1 %2").arg(r.tapeId).arg(esc(r.tapePath)) : esc(r.tapePath),
                       QObject::tr("Hash-chain head"), r.chainHead.empty() ? QStringLiteral("—") : mono(esc(r.chainHead)),
                       QObject::tr("File SHA-256"),
                       r.fileSha256.empty() ? QObject::tr("not computed (zkdv-audit ingest --sha256)") : mono(esc(r.fileSha256)),
                       QObject::tr("Status"),
                       sealed ? esc(r.tapeStatus) : QStringLiteral("<b style=\"color: %1;\">%2</b>").arg(kFailRed, orDash(r.tapeStatus)),
                       QObject::tr("Transactions"), QString::number(r.transactionCount),
                       QObject::tr("Snapshots"), QString::number(r.snapshotCount),
                       QObject::tr("Intact records"), QString::number(r.recordCount),
                       QObject::tr("Resumed run"),
                       r.runLink == TapeLinkStatus::StartsRun
                           ? (r.runTapes.size() > 1 ? QObject::tr("starts a run of %1 tapes in this case").arg(r.runTapes.size()) : QObject::tr("—"))
                           : QStringLiteral("<span style=\"color: %1;\">%2</span>")
                                 .arg(r.runLink == TapeLinkStatus::Continues && r.forkedWith.empty() ? kPassGreen : kFailRed,
                                      esc(QObject::tr("transactions %1–%2 of the run; ").arg(r.runTransactionsBefore).arg(r.runTransactionsBefore + std::max<std::uint64_t>(r.transactionCount, 1) - 1).toStdString() +
                                          r.runLinkText)),
                       QObject::tr("Recorded by"), orDash(r.producer),
                       QObject::tr("Trained on"), orDash(r.trainedOn),
                       QObject::tr("Sampled checks"),
                       !r.tapeSampling ? QStringLiteral("—")
                       : r.tapeSampling->implausible()
                           ? QStringLiteral("<b style=\"color: %1;\">%2</b>").arg(kFailRed, esc(r.tapeSampling->text() + " — implausibly few"))
                           : esc(r.tapeSampling->text() + " (the sampled checks bind an honest recorder only: a forger who rewrites "
                                                           "records can steer them, so the outcome rests on the replay)")};
    if (!r.casePath.empty())
        tapeRows << QObject::tr("Signed by") << signedBy;
    html += keyValues(tapeRows);

    html += heading(QObject::tr("The training program"));
    const bool matched = r.programCheck == ProgramCheck::Matched;
    const QString check = r.programCheck ? esc(std::string(programCheckName(*r.programCheck))) +
                                               (r.programCheckDetail.empty() ? QString() : QStringLiteral(": ") + esc(r.programCheckDetail))
                                         : orDash(r.programCheckDetail);
    QStringList program = {QObject::tr("Kind"), orDash(r.programKind),
                           QObject::tr("Program SHA-256"), r.programSha256.empty() ? QStringLiteral("—") : mono(esc(r.programSha256))};
    if (!r.casePath.empty())
        program << QObject::tr("In the case") << (r.programPresent ? QObject::tr("yes") : QObject::tr("no"));
    program << QObject::tr("Digest check") << QStringLiteral("<b style=\"color: %1;\">%2</b>").arg(matched ? kPassGreen : kFailRed, check);
    html += keyValues(program);

    html += heading(QObject::tr("Model and optimizer"));
    QString layout;
    for (std::size_t i = 0; i < std::min(r.layout.size(), kMaxLayoutLines); ++i)
        layout += esc(r.layout[i]) + QStringLiteral("<br>");
    if (r.layout.size() > kMaxLayoutLines)
        layout += esc(QObject::tr("… and %1 more (see the JSON report)").arg(r.layout.size() - kMaxLayoutLines));
    QString groups;
    for (std::size_t i = 0; i < r.optimizerGroups.size(); ++i)
        groups += QStringLiteral("%1 %2: %3<br>").arg(esc(QObject::tr("group"))).arg(i).arg(mono(esc(r.optimizerGroups[i])));
    // Counts only where known: a tape whose root was not read has no model to describe.
    const QString parameters = r.parameterCount == 0     ? QStringLiteral("—")
                               : r.parameterElements == 0 ? QObject::tr("%1 tensors").arg(r.parameterCount)
                                                          : QObject::tr("%1 tensors, %2 elements").arg(r.parameterCount).arg(r.parameterElements);
    html += keyValues({QObject::tr("Parameters"), parameters,
                       QObject::tr("Buffers"), r.parameterCount == 0 && r.bufferCount == 0 ? QStringLiteral("—") : QString::number(r.bufferCount),
                       QObject::tr("Layout"), layout.isEmpty() ? QStringLiteral("—") : mono(layout),
                       QObject::tr("Optimizer contract"), orDash(r.optimizerContract),
                       QObject::tr("Options"), groups.isEmpty() ? QStringLiteral("—") : groups,
                       QObject::tr("Schedule"), orDash(r.scheduleStatement)});

    html += heading(QObject::tr("The replay"));
    if (!replayed) {
        // No run: no run number, selection, seed or environment to state, only that.
        html += QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("The tape was not replayed.")));
        html += keyValues({QObject::tr("ZKDV that wrote this report"), orDash(r.zkdvVersion)});
    } else {
    html += keyValues({QObject::tr("Run"), QStringLiteral("#%1 (%2)").arg(r.runId).arg(esc(std::string(runStatusName(*r.runStatus)))),
                       QObject::tr("Selection"), mono(orDash(r.selection)),
                       QObject::tr("Seed"), QStringLiteral("%1 (%2)").arg(r.seed).arg(r.seedSource == SeedSource::Drawn ? QObject::tr("drawn at audit time")
                                                                             : r.seedSource == SeedSource::Given ? QObject::tr("chosen by the auditor")
                                                                                                                 : QObject::tr("origin not recorded")),
                       QObject::tr("Tolerance"), orDash(r.tolerance),
                       QObject::tr("Device"), orDash(r.device),
                       QObject::tr("libtorch"), orDash(r.libtorchVersion),
                       QObject::tr("CUDA"), orDash(r.cudaVersion),
                       QObject::tr("Operating system"), orDash(r.operatingSystem),
                       QObject::tr("Numerical regime"),
                       orDash(r.numericRegimeReason.empty() ? r.numericRegime : r.numericRegime + " (" + r.numericRegimeReason + ")"),
                       QObject::tr("Kernel settings"), orDash(r.kernelProfile),
                       QObject::tr("Determinism profile of the replay"), orDash(r.replayDeterminism),
                       QObject::tr("Determinism profile of the training"), orDash(r.trainingDeterminism),
                       QObject::tr("Envelope"), orDash(r.envelopeSource.empty() ? std::string() : r.envelopeSource + ": " + r.envelopeNote),
                       QObject::tr("ZKDV that replayed"), orDash(r.replayZkdvVersion),
                       QObject::tr("ZKDV that wrote this report"), orDash(r.zkdvVersion)});
    if (r.shard)
        html += QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("This run replayed shard %1 of the selection only.")
                                                     .arg(QString::fromStdString(r.shard->toString()))));
    if (!r.mergedShards.empty()) {
        html += QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("This run was merged from %n shards, each replayed and sealed on its own machine:", "",
                                                                 static_cast<int>(r.mergedShards.size()))));
        QString rows;
        for (const MergedShard& shard : r.mergedShards)
            rows += QStringLiteral("<tr><td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6</td></tr>")
                        .arg(shard.index)
                        .arg(esc(shard.host), esc(shard.device), QString::number(shard.replayed), mono(esc(shard.signer)), esc(shard.file));
        html += table(headerRow({QObject::tr("Shard"), QObject::tr("Host"), QObject::tr("Device"), QObject::tr("Replayed"),
                                 QObject::tr("Sealed by"), QObject::tr("Shard case")}),
                      rows);
    }
    }
    if (!r.redoCommand.empty()) {
        html += QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("Anyone with the tape can redo this audit, choosing the same transactions:")));
        html += redoCommand();
    }

    if (!replayed)
        return html + auditorNotes();
    html += heading(QObject::tr("Worst divergences"));
    if (r.worstDivergences.empty() && r.comparisonCount == 0) {
        html += QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("None to show: no tensor or value could be compared with the tape, so nothing was verified.")));
    } else if (r.worstDivergences.empty()) {
        html += QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("None: every replayed tensor matched the tape bit for bit.")));
    } else {
        QString rows;
        for (const ReportComparison& c : r.worstDivergences) {
            rows += QStringLiteral("<tr>%1%2%3%4%5%6%7%8%9</tr>")
                        .arg(cell(mono(esc(c.tensor))), cell(mono(esc(c.slot))), cell(verdictSpan(c.verdict)),
                             cell(number(c.metrics.maxUlp)), cell(number(c.metrics.meanUlp)), cell(number(c.metrics.relativeL2)),
                             cell(number(c.metrics.maxAbs)), cell(QString::number(c.metrics.cosine, 'g', 10)),
                             cell(QStringLiteral("%1/%2 %3")
                                      .arg(c.metrics.nanMismatches)
                                      .arg(c.metrics.infMismatches)
                                      .arg(esc(c.note))));
        }
        html += table(headerRow({QObject::tr("Tensor"), QObject::tr("Slot"), QObject::tr("Verdict"), QObject::tr("Max ULP"),
                                 QObject::tr("Mean ULP"), QObject::tr("Rel. L2"), QObject::tr("Max abs"), QObject::tr("Cosine"),
                                 QObject::tr("NaN/Inf mismatches, where")}),
                      rows);
    }
    return html + auditorNotes();
}

QString ReportHtml::redoCommand() const
{
    const QString command = esc(report_.redoCommand);
    if (target_ == Target::File)
        return QStringLiteral("<pre style=\"background-color: #f4f4f4; font-size: 8pt; white-space: pre-wrap; word-break: normal; "
                              "overflow-wrap: normal;\">%1</pre>")
            .arg(command);
    // On a PDF page the command stays one line, so that it is copied as it is: the font shrinks
    // until it fits the page width (a monospace advance is at most 0.62 em). Only a command too
    // long even at the smallest size wraps, and then at the spaces between arguments only
    // (the document wraps at word boundaries: ReportPdfWriter).
    const double characters = std::max<double>(1.0, static_cast<double>(report_.redoCommand.size()));
    const double fitting = kPageTextWidthPx / (characters * 0.62 * 96.0 / 72.0);
    const double points = std::min(8.0, std::floor(fitting * 10.0) / 10.0);
    return QStringLiteral("<p style=\"font-family: monospace; white-space: %1; background-color: #f4f4f4; font-size: %2pt;\">%3</p>")
        .arg(points >= kMinRedoPoints ? QStringLiteral("pre") : QStringLiteral("pre-wrap"))
        .arg(std::max(points, kMinRedoPoints))
        .arg(command);
}

QString ReportHtml::auditorNotes() const
{
    const ReportData& r = report_;
    // A report of a tape in no case (a finding report) has no auditor's notes to speak of.
    if (r.auditorNotes.empty() && r.casePath.empty())
        return QString();
    QString html = heading(QObject::tr("Auditor notes"));
    if (r.auditorNotes.empty())
        return html + QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("No transaction was flagged or annotated.")));
    QString rows;
    for (std::size_t i = 0; i < r.auditorNotes.size(); ++i) {
        const TransactionNote& note = r.auditorNotes[i];
        const std::string signer = i < r.auditorNoteSigners.size() ? r.auditorNoteSigners[i] : std::string("unsigned");
        rows += QStringLiteral("<tr>%1%2%3%4%5</tr>")
                    .arg(tight(QString::number(note.index)), tight(esc(QString::fromUtf8(transactionFlagName(note.flag)))),
                         cell(esc(note.note).replace(QLatin1Char('\n'), QStringLiteral("<br>"))),
                         tight(esc(note.author) + QStringLiteral("<br>") + esc(signer)), tight(esc(note.updatedAt)));
    }
    html += QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("The auditor's own flags and notes, as stored in the case: a judgement beside "
                                                            "the replay results, not one of them.")));
    return html + table(headerRow({QObject::tr("Transaction"), QObject::tr("Flag"), QObject::tr("Note"), QObject::tr("Author"),
                                   QObject::tr("Updated")},
                                  {10, 10, 50, 12, 18}),
                        rows);
}

QString ReportHtml::transactions() const
{
    const ReportData& r = report_;
    if (!r.runStatus)
        return QString();  // no run, no table of its transactions
    QString html = heading(QObject::tr("Replayed transactions"));
    if (r.transactions.empty())
        return html + QStringLiteral("<p>%1</p>").arg(esc(QObject::tr("No transaction was replayed.")));
    const std::size_t shown = std::min(r.transactions.size(), kMaxTableRows);
    if (shown < r.transactions.size())
        html += QStringLiteral("<p><b>%1</b></p>")
                    .arg(esc(QObject::tr("The first %1 of %2 replayed transactions; the CSV report (zkdv-audit report CASE --format csv, "
                                         "or File → Export Report… as CSV) lists them all.")
                                 .arg(shown)
                                 .arg(r.transactions.size())));
    QString rows;
    rows.reserve(static_cast<qsizetype>(shown) * 400);
    for (std::size_t i = 0; i < shown; ++i) {
        const ReportTransaction& t = r.transactions[i];
        rows += QStringLiteral("<tr>%1%2%3%4%5%6%7%8%9")
                    .arg(tight(QString::number(t.index)), tight(QString::number(t.segment)),
                         tight(t.selected ? QObject::tr("selected") : QObject::tr("prefix")), tight(verdictSpan(t.verdict)),
                         tight(QString::number(t.loss, 'g', 7)),
                         tight(t.recordedLearningRate ? QString::number(*t.recordedLearningRate, 'g', 4) : QStringLiteral("—")),
                         tight(QString::number(t.updateNorm, 'g', 4)), tight(worstOf(t, true)), tight(worstOf(t, false)));
        rows += QStringLiteral("%1%2</tr>").arg(tight(QString::number(static_cast<double>(t.replayNs) / 1e6, 'f', 1)), cell(esc(t.detail)));
    }
    html += table(headerRow({QObject::tr("Transaction"), QObject::tr("Segment"), QObject::tr("Why"), QObject::tr("Verdict"),
                             QObject::tr("Loss"), QObject::tr("LR"), QObject::tr("Update norm"), QObject::tr("Max ULP"),
                             QObject::tr("Rel. L2"), QObject::tr("ms"), QObject::tr("Detail")},
                            {9, 7, 8, 10, 9, 6, 8, 7, 8, 5, 23}),
                  rows);
    return html;
}

QString ReportHtml::charts(const ReportCharts& charts)
{
    if (charts.count() == 0)
        return QString();
    QString html = QStringLiteral("<h2 style=\"font-size: 14pt; color: #1f3a93;\">%1</h2>").arg(esc(QObject::tr("Charts")));
    for (int i = 0; i < charts.count(); ++i)
        html += QStringLiteral("<figure><figcaption><b>%1</b></figcaption><img alt=\"%1\" width=\"900\" height=\"360\" src=\"%2\">"
                               "<figcaption style=\"color: #555555;\">%3</figcaption></figure>")
                    .arg(esc(charts.title(i)), charts.pngDataUri(i, 900, 360), esc(charts.caption(i)));
    return html;
}

QString ReportHtml::document(const QString& body) const
{
    QString style;
    if (target_ == Target::File)
        style = QStringLiteral(
            "<style>\n"
            "body { font-family: 'DejaVu Sans', Arial, sans-serif; font-size: 10pt; max-width: 1100px; margin: 24px auto; color: #111; }\n"
            "table { margin-bottom: 8px; }\n"
            "td, th { vertical-align: top; }\n"
            "tr:nth-child(even) td { background-color: #fafafa; }\n"
            "figure { margin: 12px 0; }\n"
            "img { max-width: 100%; height: auto; border: 1px solid #ddd; }\n"
            "pre { padding: 6px; white-space: pre-wrap; word-break: break-all; }\n"
            "</style>\n");
    return QStringLiteral("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%1</title>\n%2</head>\n"
                          "<body>\n%3\n</body></html>\n")
        .arg(esc(QObject::tr("ZKDV audit report %1: %2").arg(QString::fromStdString(report_.tapePath), verdictWord())), style, body);
}

}  // namespace zkdv::ui
