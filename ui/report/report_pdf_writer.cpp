#include "report/report_pdf_writer.h"

#include <QAbstractTextDocumentLayout>
#include <QFileInfo>
#include <QPageLayout>
#include <QPdfWriter>
#include <QTextDocument>

#include <qcustomplot.h>

#include "report/report_charts.h"
#include "report/report_html.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/version.h"

namespace zkdv::ui {

namespace {

// Painter units are 96-dpi pixels, the units QCustomPlot and QTextDocument lay out in on
// screen, so fonts, pens and margins keep their on-screen proportions; the PDF stays vector.
constexpr int kDpi = 96;
constexpr double kFooterHeight = 22.0;

void configure(QTextDocument& document, QPdfWriter& writer, const QSizeF& pageSize, const QString& html)
{
    document.documentLayout()->setPaintDevice(&writer);
    QFont font = document.defaultFont();
    font.setPointSizeF(9);
    document.setDefaultFont(font);
    document.setPageSize(pageSize);
    document.setHtml(html);
}

}  // namespace

bool ReportPdfWriter::write(const QString& path, QString* error) const
{
    QPdfWriter writer(path);
    writer.setResolution(kDpi);
    writer.setPageLayout(QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter));
    ReportHtml html(report_, ReportHtml::Target::TextDocument);
    writer.setTitle(QObject::tr("ZKDV audit report: %1 (%2)").arg(QFileInfo(QString::fromStdString(report_.tapePath)).fileName(), html.verdictWord()));
    writer.setCreator(QStringLiteral("ZKDV %1").arg(QString::fromStdString(report_.zkdvVersion)));

    const QSizeF content = writer.pageLayout().paintRectPixels(kDpi).size();
    const QSizeF textPage(content.width(), content.height() - kFooterHeight);

    QTextDocument summary, transactions;
    configure(summary, writer, textPage, html.document(html.summary()));
    configure(transactions, writer, textPage, html.document(html.transactions()));
    const ReportCharts charts(report_);
    const int total = summary.pageCount() + 1 + transactions.pageCount();

    QCPPainter painter;
    if (!painter.begin(&writer)) {
        if (error)
            *error = QObject::tr("cannot write %1").arg(path);
        return false;
    }
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);

    int page = 0;
    const QString tapeDigest = QString::fromStdString(report_.chainHead).left(16);
    auto finishPage = [&](bool last) {
        ++page;
        painter.save();
        QFont font = painter.font();
        font.setPointSizeF(7);
        painter.setFont(font);
        painter.setPen(QColor(0x66, 0x66, 0x66));
        const QRectF footer(0, content.height() - kFooterHeight + 6, content.width(), kFooterHeight - 6);
        painter.drawLine(footer.topLeft(), footer.topRight());
        painter.drawText(footer, Qt::AlignLeft | Qt::AlignBottom,
                         QObject::tr("ZKDV audit report · %1 · tape chain head %2…").arg(html.verdictWord(), tapeDigest));
        painter.drawText(footer, Qt::AlignRight | Qt::AlignBottom, QObject::tr("page %1 of %2").arg(page).arg(total));
        painter.restore();
        if (!last)
            writer.newPage();
    };
    auto drawDocument = [&](QTextDocument& document, bool lastInFile) {
        const double height = textPage.height();
        for (int i = 0; i < document.pageCount(); ++i) {
            painter.save();
            painter.translate(0, -i * height);
            document.drawContents(&painter, QRectF(0, i * height, textPage.width(), height));
            painter.restore();
            finishPage(lastInFile && i + 1 == document.pageCount());
        }
    };

    drawDocument(summary, false);

    // The charts, as vectors, on a page of their own.
    {
        QFont headingFont = painter.font();
        headingFont.setPointSizeF(14);
        headingFont.setBold(true);
        QFont titleFont = painter.font();
        titleFont.setPointSizeF(10);
        titleFont.setBold(true);
        QFont captionFont = painter.font();
        captionFont.setPointSizeF(8);
        painter.save();
        painter.setFont(headingFont);
        painter.setPen(QColor(0x1f, 0x3a, 0x93));
        painter.drawText(QRectF(0, 0, content.width(), 30), Qt::AlignLeft | Qt::AlignVCenter, QObject::tr("Charts"));
        painter.restore();
        const double top = 36;
        const double block = (textPage.height() - top) / std::max(1, charts.count());
        for (int i = 0; i < charts.count(); ++i) {
            const double y = top + i * block;
            painter.save();
            painter.setFont(titleFont);
            painter.setPen(Qt::black);
            painter.drawText(QRectF(0, y, content.width(), 18), Qt::AlignLeft | Qt::AlignVCenter, charts.title(i));
            painter.restore();
            const double captionHeight = 30;
            charts.draw(i, &painter, QRectF(0, y + 20, content.width(), block - 20 - captionHeight - 8));
            painter.save();
            painter.setFont(captionFont);
            painter.setPen(QColor(0x44, 0x44, 0x44));
            painter.drawText(QRectF(0, y + block - captionHeight - 6, content.width(), captionHeight), Qt::AlignLeft | Qt::TextWordWrap,
                             charts.caption(i));
            painter.restore();
        }
        finishPage(false);
    }

    drawDocument(transactions, true);
    painter.end();
    if (QFileInfo(path).size() <= 0) {
        if (error)
            *error = QObject::tr("cannot write %1").arg(path);
        return false;
    }
    return true;
}

}  // namespace zkdv::ui
