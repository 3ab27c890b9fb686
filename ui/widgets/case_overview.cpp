#include "widgets/case_overview.h"

#include <QHeaderView>

#include "zkdv/store/case_store.h"
#include "zkdv/tape/root_record.h"

namespace zkdv::ui {

namespace {

QString shapeText(const std::vector<std::int64_t>& shape)
{
    QStringList dims;
    for (std::int64_t d : shape)
        dims << QString::number(d);
    return QLatin1Char('[') + dims.join(QStringLiteral(", ")) + QLatin1Char(']');
}

QTreeWidgetItem* add(QTreeWidgetItem* parent, const QString& key, const QString& value)
{
    auto* item = new QTreeWidgetItem(parent, {key, value});
    item->setToolTip(1, value);
    return item;
}

}  // namespace

CaseOverview::CaseOverview(QWidget* parent) : QTreeWidget(parent)
{
    setColumnCount(2);
    setHeaderLabels({tr("Case"), tr("Value")});
    header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    setAlternatingRowColors(true);
    connect(this, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* item) {
        while (item && item->parent())
            item = item->parent();
        const qint64 tape = item ? item->data(0, Qt::UserRole).toLongLong() : 0;
        if (tape != 0 && tape != currentTape_) {
            currentTape_ = tape;
            Q_EMIT tapeChosen(tape);
        }
    });
}

bool CaseOverview::showCase(const QString& casePath)
{
    const qint64 previous = currentTape_;
    clear();
    currentTape_ = 0;
    if (casePath.isEmpty())
        return true;
    std::vector<CaseTape> tapes;
    try {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadOnly);
        tapes = store.tapes();
    } catch (const std::exception& error) {
        Q_EMIT problem(QString::fromStdString(error.what()));
        return false;
    }
    for (const CaseTape& tape : tapes) {
        auto* top = new QTreeWidgetItem(this, {tr("Tape %1").arg(tape.id), QString::fromStdString(tape.path)});
        top->setData(0, Qt::UserRole, QVariant::fromValue<qint64>(tape.id));
        top->setToolTip(1, QString::fromStdString(tape.path));
        add(top, tr("Status"), tr("%1, %2 transactions, %3 snapshots")
                                   .arg(QString::fromStdString(tape.status))
                                   .arg(tape.transactionCount)
                                   .arg(tape.snapshotCount));
        add(top, tr("File SHA-256"), QString::fromStdString(tape.fileSha256));
        add(top, tr("Chain head"), QString::fromStdString(tape.chainHead));
        add(top, tr("Program"), tr("%1 %2 — %3")
                                    .arg(QString::fromStdString(tape.programKind), QString::fromStdString(tape.programSha256),
                                         tape.programPresent ? tr("present, digest matches") : tr("missing: drop the program file here")));
        add(top, tr("Producer"), QString::fromStdString(tape.producer));
        try {
            const RootRecord root = RootRecord::parse(ByteSpan(std::string_view(tape.rootJson)));
            auto* model = add(top, tr("Model"), tr("%1 parameters, %2 buffers").arg(root.parameters.size()).arg(root.buffers.size()));
            for (const TensorSpec& spec : root.parameters)
                add(model, QString::fromStdString(spec.name), QString::fromStdString(std::string(dtypeName(spec.dtype))) + QLatin1Char(' ') + shapeText(spec.shape));
            for (const TensorSpec& spec : root.buffers)
                add(model, QString::fromStdString(spec.name), tr("buffer ") + QString::fromStdString(std::string(dtypeName(spec.dtype))) + QLatin1Char(' ') + shapeText(spec.shape));
            auto* optimizer = add(top, tr("Optimizer"), QString::fromStdString(root.optimizerContract));
            for (std::size_t g = 0; g < root.optimizerGroups.size(); ++g)
                add(optimizer, tr("Group %1 (%2 parameters)").arg(g).arg(root.optimizerGroups[g].parameters.size()),
                    QString::fromStdString(root.optimizerGroups[g].optionsJson));
            add(top, tr("Sampling"), tr("update checks %1, state checks %2, seed %3")
                                         .arg(root.updateCheckProbability)
                                         .arg(root.stateCheckProbability)
                                         .arg(root.samplingSeed));
            add(top, tr("Snapshots"), tr("every %1 transactions").arg(root.snapshotInterval));
            add(top, tr("Trained on"), tr("%1, torch %2%3")
                                           .arg(QString::fromStdString(root.device), QString::fromStdString(root.torchVersion))
                                           .arg(root.intraOpThreads > 0 ? tr(", %1 intra-op thread(s)").arg(root.intraOpThreads) : QString()));
        } catch (const std::exception& error) {
            add(top, tr("Root record"), tr("unreadable: %1").arg(QString::fromStdString(error.what())));
        }
        top->setExpanded(true);
        if (tape.id == previous || currentTape_ == 0)
            currentTape_ = tape.id;
    }
    for (int i = 0; i < topLevelItemCount(); ++i)
        if (topLevelItem(i)->data(0, Qt::UserRole).toLongLong() == currentTape_)
            topLevelItem(i)->setSelected(true);
    return true;
}

}  // namespace zkdv::ui
