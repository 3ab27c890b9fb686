#include "report/report_pdf_writer.h"

#include <QAbstractTextDocumentLayout>
#include <QFileInfo>
#include <QPageLayout>
#include <QPdfWriter>
#include <QTextDocument>
#include <QTextOption>

#include <qcustomplot.h>

#include "report/report_charts.h"
#include "report/report_html.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/util/progress.h"
#include "zkdv/version.h"

namespace zkdv::ui {

namespace {

// Painter units are 96-dpi pixels, the units QCustomPlot and QTextDocument lay out in on
// screen, so fonts, pens and margins keep their on-screen proportions; the PDF stays vector.
constexpr int kDpi = 96;
constexpr double kFooterHeight = 22.0;
constexpr double kChartsTop = 36;
constexpr double kCaptionHeight = 30;

void reportPage(ProgressSink* progress, int page, int total)
{
    if (!progress)
        return;
    progress->report(static_cast<std::uint64_t>(page), static_cast<std::uint64_t>(total), "writing pages");
    if (progress->cancelRequested())
        throw OperationCancelled();
}

QPageLayout a4Layout()
{
    return QPageLayout(QPageSize(QPageSize::A4), QPageLayout::Portrait, QMarginsF(15, 15, 15, 15), QPageLayout::Millimeter);
}

// Where chart `i` of `count` is drawn on the charts page.
QRectF chartRect(int i, int count, const QSizeF& content)
{
    const double textHeight = content.height() - kFooterHeight;
    const double block = (textHeight - kChartsTop) / std::max(1, count);
    const double y = kChartsTop + i * block;
    return QRectF(0, y + 20, content.width(), block - 20 - kCaptionHeight - 8);
}

void configure(QTextDocument& document, QPdfWriter& writer, const QSizeF& pageSize, const QString& html)
{
    document.documentLayout()->setPaintDevice(&writer);
    QFont font = document.defaultFont();
    font.setPointSizeF(9);
    document.setDefaultFont(font);
    document.setPageSize(pageSize);
    // Lines break at spaces only, never inside a word (a table header squeezed into a
    // narrow column keeps its words whole; the redo command its arguments).
    QTextOption option = document.defaultTextOption();
    option.setWrapMode(QTextOption::WordWrap);
    document.setDefaultTextOption(option);
    document.setHtml(html);
}

}  // namespace

ReportPdfWriter::ReportPdfWriter(const ReportData& report)
    : report_(std::make_shared<const ReportData>(report)), chartKinds_(ReportCharts::chartsOf(report))
{
}

bool ReportPdfWriter::drawNextChart()
{
    const int i = static_cast<int>(charts_.size());
    const int count = static_cast<int>(chartKinds_.size());
    if (i >= count)
        return false;
    const ReportCharts one(*report_, chartKinds_[static_cast<std::size_t>(i)]);
    ChartPage page{one.title(0), one.caption(0), QPicture()};
    const QRectF rect = chartRect(i, count, a4Layout().paintRectPixels(kDpi).size());
    QCPPainter painter;
    painter.begin(&page.picture);
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);
    one.draw(0, &painter, QRectF(QPointF(0, 0), rect.size()));
    painter.end();
    charts_.push_back(std::move(page));
    return charts_.size() < chartKinds_.size();
}

bool ReportPdfWriter::write(const QString& path, QString* error, ProgressSink* progress) const
{
    if (charts_.size() != chartKinds_.size()) {
        if (error)
            *error = QObject::tr("the report's charts were not drawn");
        return false;
    }
    const ReportHtml html(*report_, ReportHtml::Target::TextDocument);
    const QString verdictWord = html.verdictWord();
    QPdfWriter writer(path);
    writer.setResolution(kDpi);
    writer.setPageLayout(a4Layout());
    writer.setTitle(QObject::tr("ZKDV audit report: %1 (%2)").arg(QFileInfo(QString::fromStdString(report_->tapePath)).fileName(), verdictWord));
    writer.setCreator(QStringLiteral("ZKDV %1").arg(QString::fromStdString(report_->zkdvVersion)));

    const QSizeF content = writer.pageLayout().paintRectPixels(kDpi).size();
    const QSizeF textPage(content.width(), content.height() - kFooterHeight);

    // A report without a run (a finding report) has no transaction pages, and no charts page
    // when it has no chart to draw.
    const bool chartsPage = !charts_.empty();
    const QString transactionsHtml = html.transactions();
    QTextDocument summary, transactions;
    configure(summary, writer, textPage, html.document(html.summary()));
    if (!transactionsHtml.isEmpty())
        configure(transactions, writer, textPage, html.document(transactionsHtml));
    const int transactionPages = transactionsHtml.isEmpty() ? 0 : transactions.pageCount();
    const int total = summary.pageCount() + (chartsPage ? 1 : 0) + transactionPages;

    QCPPainter painter;
    if (!painter.begin(&writer)) {
        if (error)
            *error = QObject::tr("cannot write %1").arg(path);
        return false;
    }
    painter.setMode(QCPPainter::pmVectorized);
    painter.setMode(QCPPainter::pmNoCaching);

    int page = 0;
    const QString tapeDigest = QString::fromStdString(report_->chainHead).left(16);
    auto finishPage = [&](bool last) {
        ++page;
        reportPage(progress, page, total);
        painter.save();
        QFont font = painter.font();
        font.setPointSizeF(7);
        painter.setFont(font);
        painter.setPen(QColor(0x66, 0x66, 0x66));
        const QRectF footer(0, content.height() - kFooterHeight + 6, content.width(), kFooterHeight - 6);
        painter.drawLine(footer.topLeft(), footer.topRight());
        painter.drawText(footer, Qt::AlignLeft | Qt::AlignBottom,
                         QObject::tr("ZKDV audit report · %1 · tape chain head %2…").arg(verdictWord, tapeDigest));
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

    drawDocument(summary, !chartsPage && transactionPages == 0);

    // The charts, as vectors, on a page of their own.
    if (chartsPage) {
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
        const int count = static_cast<int>(charts_.size());
        for (int i = 0; i < count; ++i) {
            const QRectF rect = chartRect(i, count, content);
            const double y = rect.top() - 20;
            const double block = rect.height() + 20 + kCaptionHeight + 8;
            painter.save();
            painter.setFont(titleFont);
            painter.setPen(Qt::black);
            painter.drawText(QRectF(0, y, content.width(), 18), Qt::AlignLeft | Qt::AlignVCenter, charts_[static_cast<std::size_t>(i)].title);
            painter.restore();
            painter.save();
            painter.translate(rect.topLeft());
            painter.setClipRect(QRectF(QPointF(0, 0), rect.size()));
            painter.drawPicture(QPointF(0, 0), charts_[static_cast<std::size_t>(i)].picture);
            painter.restore();
            painter.save();
            painter.setFont(captionFont);
            painter.setPen(QColor(0x44, 0x44, 0x44));
            painter.drawText(QRectF(0, y + block - kCaptionHeight - 6, content.width(), kCaptionHeight), Qt::AlignLeft | Qt::TextWordWrap,
                             charts_[static_cast<std::size_t>(i)].caption);
            painter.restore();
        }
        finishPage(transactionPages == 0);
    }

    if (transactionPages > 0)
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
