#include "widgets/finding_banner.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QVBoxLayout>

#include "plots/verdict_palette.h"

namespace zkdv::ui {

FindingBanner::FindingBanner(QWidget* parent) : QFrame(parent)
{
    setObjectName(QStringLiteral("findingBanner"));
    setFrameShape(QFrame::StyledPanel);
    VerdictPalette::paintBanner(this, Verdict::Diverged);
    text_ = new QLabel(this);
    text_->setObjectName(QStringLiteral("findingText"));
    text_->setWordWrap(true);
    text_->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    ingestPart_ = new QPushButton(tr("Ingest Readable Part"), this);
    ingestPart_->setToolTip(tr("Ingest what the incomplete tape holds up to the cut, to replay it (Ctrl+Shift+I)"));
    exportReport_ = new QPushButton(tr("Export Finding Report…"), this);
    exportReport_->setToolTip(tr("Write what was found as a report: PDF, HTML, JSON or CSV (Ctrl+Shift+E)"));
    showBytes_ = new QPushButton(tr("Show Record Bytes"), this);
    showBytes_->setToolTip(tr("The fields and bytes of the record at fault, with the byte at fault marked"));
    auto* dismiss = new QPushButton(tr("Dismiss"), this);
    dismiss->setToolTip(tr("Hide this finding (it stays in the Messages panel)"));
    auto* buttons = new QVBoxLayout;
    buttons->addWidget(ingestPart_);
    buttons->addWidget(exportReport_);
    buttons->addWidget(showBytes_);
    buttons->addWidget(dismiss);
    buttons->addStretch(1);
    auto* layout = new QHBoxLayout(this);
    layout->addWidget(text_, 1);
    layout->addLayout(buttons);
    connect(ingestPart_, &QPushButton::clicked, this, [this] { Q_EMIT ingestReadablePartRequested(incompleteTapes()); });
    connect(exportReport_, &QPushButton::clicked, this, &FindingBanner::exportReportRequested);
    connect(showBytes_, &QPushButton::clicked, this, [this] {
        const TapeFinding* finding = recordAtFault();
        if (!finding)
            return;
        const TapeProblem& problem = *finding->summary->problem;
        const QString kind = QString::fromStdString(problem.recordText());
        Q_EMIT recordBytesRequested(finding->path, *problem.frameOffset, problem.byteOffset,
                                    tr("record %1%2 of %3")
                                        .arg(problem.recordIndex)
                                        .arg(kind.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(kind))
                                        .arg(QFileInfo(finding->path).fileName()));
    });
    connect(dismiss, &QPushButton::clicked, this, &FindingBanner::dismiss);
    hide();
}

void FindingBanner::showFindings(const QList<TapeFinding>& findings)
{
    findings_ = findings;
    QStringList lines;
    for (const TapeFinding& finding : findings) {
        QString line = QStringLiteral("<b>%1</b>: %2").arg(QFileInfo(finding.path).fileName().toHtmlEscaped(), finding.message.toHtmlEscaped());
        if (finding.summary && finding.summary->problem) {
            const TapeProblem& problem = *finding.summary->problem;
            const QString kind = QString::fromStdString(problem.recordText());
            line += tr("<br>record %1%2, byte offset %3 of %4 bytes; %5 intact records (%6 transactions) before it.")
                        .arg(problem.recordIndex)
                        .arg(kind.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(kind))
                        .arg(problem.byteOffset)
                        .arg(finding.summary->fileSize)
                        .arg(finding.summary->recordCount)
                        .arg(finding.summary->transactionCount);
        }
        if (finding.incomplete())
            line += tr("<br>The tape is incomplete: its readable part can be ingested and replayed.");
        lines << line;
    }
    text_->setText(tr("<b>%n tape(s) could not be ingested; the case is unchanged.</b><br>", nullptr, static_cast<int>(findings.size())) +
                   lines.join(QStringLiteral("<br><br>")));
    ingestPart_->setEnabled(!incompleteTapes().isEmpty());
    exportReport_->setEnabled(reportable() != nullptr);
    showBytes_->setEnabled(recordAtFault() != nullptr);
    setVisible(!findings.isEmpty());
}

void FindingBanner::dismiss()
{
    findings_.clear();
    text_->clear();
    hide();
}

QString FindingBanner::text() const { return text_->text(); }

const TapeFinding* FindingBanner::reportable() const
{
    for (const TapeFinding& finding : findings_)
        if (finding.summary)
            return &finding;
    return nullptr;
}

const TapeFinding* FindingBanner::recordAtFault() const
{
    for (const TapeFinding& finding : findings_)
        if (finding.summary && finding.summary->problem && finding.summary->problem->frameOffset)
            return &finding;
    return nullptr;
}

QStringList FindingBanner::incompleteTapes() const
{
    QStringList tapes;
    for (const TapeFinding& finding : findings_)
        if (finding.incomplete())
            tapes << finding.path;
    return tapes;
}

}  // namespace zkdv::ui
