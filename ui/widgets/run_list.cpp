#include "widgets/run_list.h"

#include <QHeaderView>

#include "plots/verdict_palette.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_table.h"

namespace zkdv::ui {

namespace {

constexpr int kRunRole = Qt::UserRole;

// A run that did not finish is incomplete: what it replayed stands, the rest was not checked.
QString statusText(const StoredReplayRun& run)
{
    const QString name = QString::fromStdString(std::string(runStatusName(run.status)));
    if (run.status == RunStatus::Finished || run.status == RunStatus::Running)
        return name;
    return QObject::tr("incomplete (%1)").arg(name);
}

Verdict worstVerdict(const StoredReplayRun& run)
{
    if (run.unverifiable)
        return Verdict::Unverifiable;
    if (run.diverged)
        return Verdict::Diverged;
    if (run.withinTolerance)
        return Verdict::WithinTolerance;
    return Verdict::Exact;
}

}  // namespace

RunList::RunList(QWidget* parent) : QTreeWidget(parent), chosen_(TransactionTable::kEveryRun)
{
    setObjectName(QStringLiteral("runList"));
    setColumnCount(ColumnCount);
    setHeaderLabels({tr("Run"), tr("Status"), tr("Verdicts"), tr("Selection"), tr("Seed"), tr("Device"), tr("Started")});
    setRootIsDecorated(false);
    setUniformRowHeights(true);
    setAlternatingRowColors(true);
    setSelectionMode(QAbstractItemView::SingleSelection);
    header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    header()->setStretchLastSection(true);
    setToolTip(tr("Pick the replay run the table, the charts and the report show; All runs shows, per transaction, the newest run that "
                  "replayed it"));
    connect(this, &QTreeWidget::currentItemChanged, this, [this](QTreeWidgetItem* current) {
        if (filling_ || !current)
            return;
        const qint64 run = current->data(RunColumn, kRunRole).toLongLong();
        if (run == chosen_)
            return;
        chosen_ = run;
        Q_EMIT runChosen(run);
    });
}

int RunList::runCount() const { return std::max(0, topLevelItemCount() - 1); }

void RunList::showRuns(const QString& casePath, qint64 tapeId)
{
    const bool sameTape = casePath == casePath_ && tapeId == tapeId_;
    casePath_ = casePath;
    tapeId_ = tapeId;
    filling_ = true;
    clear();
    std::vector<StoredReplayRun> runs;
    if (!casePath.isEmpty() && tapeId != 0) {
        try {
            CaseStore store(casePath.toStdString(), CaseStore::Access::ReadOnly);
            runs = ReplayStore(store.database()).runs(tapeId);
        } catch (const std::exception& error) {
            Q_EMIT problem(tr("Cannot list the replay runs: %1").arg(QString::fromStdString(error.what())));
        }
    }
    auto* every = new QTreeWidgetItem(this);
    every->setText(RunColumn, tr("All runs"));
    every->setText(StatusColumn, runs.empty() ? tr("not replayed yet") : tr("%n run(s)", nullptr, static_cast<int>(runs.size())));
    every->setText(VerdictsColumn, tr("newest result per transaction"));
    every->setData(RunColumn, kRunRole, QVariant::fromValue<qint64>(TransactionTable::kEveryRun));
    bool chosenExists = chosen_ == TransactionTable::kEveryRun;
    for (const StoredReplayRun& run : runs) {
        auto* item = new QTreeWidgetItem(this);
        item->setData(RunColumn, kRunRole, QVariant::fromValue<qint64>(run.id));
        item->setText(RunColumn, QStringLiteral("#%1").arg(run.id));
        item->setText(StatusColumn, statusText(run));
        item->setText(VerdictsColumn, tr("%1 selected, %2 replayed: %3 exact, %4 within, %5 diverged, %6 unverifiable")
                                          .arg(run.selectedCount)
                                          .arg(run.replayed)
                                          .arg(run.exact)
                                          .arg(run.withinTolerance)
                                          .arg(run.diverged)
                                          .arg(run.unverifiable));
        if (run.replayed > 0) {
            const Verdict worst = worstVerdict(run);
            item->setForeground(VerdictsColumn, VerdictPalette::cellText(worst, palette()));
            item->setBackground(VerdictsColumn, VerdictPalette::cellBackground(worst, palette()));
        }
        // A merged run says it was joined from shards; a shard's own run that it is a part.
        const QString selection = QString::fromStdString(run.selection);
        item->setText(SelectionColumn, run.merged()      ? tr("%1 (merged from %2 shards)").arg(selection).arg(run.shardCount)
                                       : run.shardIndex ? tr("%1 (shard %2/%3)").arg(selection).arg(*run.shardIndex).arg(run.shardCount)
                                                        : selection);
        item->setText(SeedColumn, QString::number(run.seed));
        item->setText(DeviceColumn, QString::fromStdString(run.device));
        item->setText(StartedColumn, QString::fromStdString(run.startedAt));
        QString tip = tr("Run %1: %2, tolerance %3").arg(run.id).arg(statusText(run), QString::fromStdString(run.tolerance));
        if (!run.problem.empty())
            tip += QLatin1Char('\n') + QString::fromStdString(run.problem);
        for (int column = 0; column < ColumnCount; ++column)
            item->setToolTip(column, tip);
        item->setToolTip(SeedColumn, run.seedSource == SeedSource::Drawn   ? tr("Seed %1, drawn from the operating system when the run started").arg(run.seed)
                                     : run.seedSource == SeedSource::Given ? tr("Seed %1, given by the auditor").arg(run.seed)
                                                                           : tr("Seed %1; whether it was drawn or given is not recorded (an older case)").arg(run.seed));
        chosenExists = chosenExists || run.id == chosen_;
    }
    filling_ = false;
    if (!chosenExists || !sameTape) {
        const bool changed = chosen_ != TransactionTable::kEveryRun;
        chosen_ = TransactionTable::kEveryRun;
        if (changed)
            Q_EMIT runChosen(chosen_);
    }
    selectChosen();
}

void RunList::chooseRun(qint64 runId)
{
    if (runId == chosen_)
        return;
    chosen_ = runId;
    selectChosen();
    Q_EMIT runChosen(chosen_);
}

void RunList::selectChosen()
{
    filling_ = true;
    for (int i = 0; i < topLevelItemCount(); ++i)
        if (topLevelItem(i)->data(RunColumn, kRunRole).toLongLong() == chosen_) {
            setCurrentItem(topLevelItem(i));
            break;
        }
    filling_ = false;
}

}  // namespace zkdv::ui
