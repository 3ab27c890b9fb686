#include "widgets/divergence_explanation_view.h"

#include <QHeaderView>
#include <QLabel>
#include <QTableWidget>
#include <QVBoxLayout>

#include "zkdv/replay/divergence_explain.h"

namespace zkdv::ui {

namespace {

QString text(const std::string& value) { return QString::fromStdString(value); }
QString text(std::string_view value) { return QString::fromUtf8(value.data(), static_cast<qsizetype>(value.size())); }

QString shapeText(const std::vector<std::int64_t>& shape)
{
    QStringList dims;
    for (std::int64_t d : shape)
        dims << QString::number(d);
    return QStringLiteral("[%1]").arg(dims.join(QLatin1Char(',')));
}

QString where(const ExplainedNode& node)
{
    QString place = QStringLiteral("%1 (%2").arg(text(node.op), text(node.phase));
    for (auto it = node.inside.rbegin(); it != node.inside.rend(); ++it)
        place += QObject::tr(", inside %1").arg(text(*it));
    return place + QLatin1Char(')');
}

}  // namespace

DivergenceExplanationView::DivergenceExplanationView(const DivergenceExplanation& e, QWidget* parent) : QWidget(parent)
{
    setObjectName(QStringLiteral("divergenceExplanation"));
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    QStringList lines;
    for (int s = 0; s < 2; ++s)
        lines << tr("Side %1: <b>%2</b> (%3, %n intra-op thread(s)): %4 against the tape.", nullptr, e.intraOpThreads[s])
                     .arg(s == 0 ? QStringLiteral("A") : QStringLiteral("B"), text(e.sides[s].toString()).toHtmlEscaped(), text(e.devices[s]),
                          text(verdictName(e.verdicts[s])));
    lines << tr("Compared %1 calls at %2 granularity: %3 same, %4 rounding, %5 beyond rounding.")
                 .arg(e.nodes.size())
                 .arg(text(e.granularity))
                 .arg(e.same)
                 .arg(e.rounding)
                 .arg(e.beyond);
    if (e.first) {
        const ExplainedNode& node = e.nodes[*e.first];
        lines << tr("<b>First beyond rounding:</b> call %1, %2: max abs diff %3, relative L2 %4, max ULP %5.")
                     .arg(node.node)
                     .arg(where(node).toHtmlEscaped())
                     .arg(node.maxAbs, 0, 'g', 3)
                     .arg(node.relativeL2, 0, 'g', 3)
                     .arg(node.maxUlp, 0, 'g', 3);
    } else if (e.parted.empty()) {
        lines << (e.rounding || e.unmeasured ? tr("No call differs beyond rounding.") : tr("No call differs: every output bit for bit."));
    }
    if (!e.parted.empty())
        lines << tr("The sides call different operators: %1").arg(text(e.parted).toHtmlEscaped());
    for (int s = 0; s < 2; ++s)
        if (!e.omitted[s].empty())
            lines << tr("Side %1: %2").arg(s == 0 ? QStringLiteral("A") : QStringLiteral("B"), text(e.omitted[s]).toHtmlEscaped());
    summary_ = new QLabel(lines.join(QStringLiteral("<br>")), this);
    summary_->setWordWrap(true);
    summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(summary_);

    const std::vector<std::size_t> rows = explanationRows(e);
    table_ = new QTableWidget(static_cast<int>(rows.size()), 7, this);
    table_->setObjectName(QStringLiteral("explanationTable"));
    table_->setHorizontalHeaderLabels({tr("Call"), tr("Phase"), tr("Operator"), tr("Shape"), tr("Rel. L2"), tr("Max ULP"), tr("Agreement")});
    table_->verticalHeader()->hide();
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setSelectionBehavior(QAbstractItemView::SelectRows);
    for (int row = 0; row < static_cast<int>(rows.size()); ++row) {
        const std::size_t index = rows[static_cast<std::size_t>(row)];
        const ExplainedNode& node = e.nodes[index];
        const bool same = node.agreement == NodeAgreement::Same;
        const QStringList cells = {QString::number(node.node),
                                   text(node.phase),
                                   QString(2 * static_cast<int>(node.depth), QLatin1Char(' ')) + text(node.op),
                                   shapeText(node.shape),
                                   same ? QStringLiteral("0") : QString::number(node.relativeL2, 'g', 3),
                                   same ? QStringLiteral("0") : QString::number(node.maxUlp, 'g', 3),
                                   text(nodeAgreementName(node.agreement))};
        for (int column = 0; column < cells.size(); ++column) {
            auto* item = new QTableWidgetItem(cells[column]);
            if (!node.note.empty())
                item->setToolTip(text(node.note));
            if (e.first && index == *e.first) {
                QFont bold = item->font();
                bold.setBold(true);
                item->setFont(bold);
            }
            table_->setItem(row, column, item);
        }
        if (e.first && index == *e.first)
            namedRow_ = row;
    }
    table_->resizeColumnsToContents();
    table_->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(table_, 1);
    if (namedRow_ >= 0) {
        table_->selectRow(namedRow_);
        table_->scrollToItem(table_->item(namedRow_, 0));
    }
}

}  // namespace zkdv::ui
