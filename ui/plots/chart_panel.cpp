#include "plots/chart_panel.h"

#include <algorithm>
#include <atomic>
#include <initializer_list>

#include <QComboBox>
#include <QDir>
#include <QHBoxLayout>
#include <QTabBar>
#include <QLabel>
#include <QSignalBlocker>
#include <QThread>

#include "plots/chart_tools.h"
#include "plots/divergence_chart.h"
#include "plots/slot_divergence_chart.h"
#include "plots/tensor_divergence_bars.h"
#include "plots/transaction_chart.h"
#include "plots/ulp_histogram_chart.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/transaction_table.h"
#include "zkdv/util/progress.h"

namespace zkdv::ui {

namespace {

constexpr int kRefreshDelayMs = 250;  // replay results arriving in bursts make one re-read
constexpr int kDigestShown = 16;      // hex digits of the tape's digest an exported image names

// Lets a superseded read stop between batches of rows.
class ReadCancellation : public ProgressSink {
public:
    void report(std::uint64_t, std::uint64_t, std::string_view) override {}
    bool cancelRequested() const override { return stop.load(std::memory_order_relaxed); }
    std::atomic<bool> stop{false};
};

}  // namespace

struct ChartPanel::Read {
    QThread* thread = nullptr;
    int parts = 0;
    quint64 sequence = 0;
    quint64 generation = 0;
    std::shared_ptr<ReadCancellation> cancel;
    std::shared_ptr<std::optional<ChartData>> result;
};

ChartPanel::ChartPanel(QWidget* parent) : QTabWidget(parent)
{
    transactions_ = new TransactionChart(this);
    divergence_ = new DivergenceChart(this);
    tensors_ = new TensorDivergenceBars(this);
    slots_ = new SlotDivergenceChart(this);
    histogram_ = new UlpHistogramChart(this);
    const std::pair<QWidget*, QString> tabs[] = {{transactions_, tr("Loss and updates")}, {divergence_, tr("Divergence")},
                                                 {tensors_, tr("Tensors")}, {slots_, tr("Optimizer state")}, {histogram_, tr("ULP histogram")}};
    for (const auto& [chart, name] : tabs) {
        const int tab = addTab(chart, QString(name).replace(QLatin1String(" and "), QLatin1String(" && ")));
        setTabToolTip(tab, name);  // whole, when a narrow window shortens the tab
        chart->setAccessibleName(name);  // names its exports (ChartTools)
    }
    // In a narrow window every tab stays in view, its name shortened, rather than some of
    // them hiding behind scroll arrows.
    tabBar()->setUsesScrollButtons(false);
    tabBar()->setElideMode(Qt::ElideRight);

    // The comparison is chosen here, beside the tabs it draws on, not in the main window.
    auto* corner = new QWidget(this);
    auto* cornerLayout = new QHBoxLayout(corner);
    cornerLayout->setContentsMargins(4, 0, 2, 0);
    compare_ = new QComboBox(corner);
    compare_->setObjectName(QStringLiteral("compareRun"));
    // Narrow in the tab bar (the tabs keep their room); the open list shows whole labels.
    compare_->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    compare_->setMinimumContentsLength(11);
    compare_->setFocusPolicy(Qt::StrongFocus);
    compare_->setToolTip(tr("Draw another replay run of this tape over the shown one, on the Divergence and ULP histogram "
                            "charts: to see two runs, or a CPU and a GPU run, side by side"));
    // No label beside it: at 1024 pixels the five tabs and the box only just share the row,
    // so the box names itself ("No comparison", "vs Run #3 · cpu · finished").
    cornerLayout->addWidget(compare_);
    setCornerWidget(corner, Qt::TopRightCorner);
    connect(compare_, &QComboBox::activated, this, [this](int index) { setComparisonRun(compare_->itemData(index).toLongLong()); });
    fillComparisonChoices();

    timer_.setSingleShot(true);
    connect(&timer_, &QTimer::timeout, this, &ChartPanel::drain);
    connect(this, &QTabWidget::currentChanged, this, [this] { schedule(Replot, 0); });
    connect(transactions_, &TransactionChart::transactionClicked, this, &ChartPanel::onChartClicked);
    connect(divergence_, &DivergenceChart::transactionClicked, this, &ChartPanel::onChartClicked);
}

ChartPanel::~ChartPanel()
{
    cancelReads();
    for (const std::unique_ptr<Read>& read : reads_) {
        read->thread->wait();
        delete read->thread;
    }
}

void ChartPanel::setCase(const QString& casePath, qint64 tapeId)
{
    cancelReads();
    ++generation_;
    clearCharts();
    db_ = nullptr;
    case_.reset();
    casePath_ = casePath;
    tapeId_ = tapeId;
    requestedRun_ = 0;
    runId_ = 0;
    selected_.reset();
    // A comparison is of the tape shown: another tape, or another case, has other runs.
    comparisonRun_ = 0;
    comparisonHeld_ = 0;
    comparisonVerdicts_.clear();
    comparisonHistogram_ = {};
    runs_.clear();
    tapeName_.clear();
    tapeDigest_.clear();
    pendingTiers_ &= ~(RereadSeries | RereadVerdicts | RereadComparison | Recalculate);
    staleParts_ = 0;
    fillComparisonChoices();
    updateCaptions();
    if (casePath_.isEmpty()) {
        schedule(Replot, 0);
        return;
    }
    try {
        case_ = std::make_unique<CaseStore>(casePath_.toStdString(), CaseStore::Access::ReadOnly);
        db_ = &case_->database();
    } catch (const std::exception& error) {
        casePath_.clear();
        Q_EMIT problem(tr("Cannot chart %1: %2").arg(casePath, QString::fromStdString(error.what())));
        updateCaptions();
        schedule(Replot, 0);
        return;
    }
    runId_ = resolveRun();
    updateCaptions();
    schedule(RereadSeries | RereadVerdicts | Replot, 0);
}

void ChartPanel::setRun(qint64 runId)
{
    requestedRun_ = runId;
    if (!db_)
        return;
    runId_ = resolveRun();
    showComparison();
    fillTransactionCharts();
    schedule(RereadVerdicts | Replot, 0);
}

void ChartPanel::setComparisonRun(qint64 runId)
{
    if (runId == comparisonRun_)
        return;
    if (runId != 0) {
        bool belongs = false;
        if (db_ && runId > 0) {
            try {
                belongs = replayRunBelongsToTape(*db_, runId, tapeId_);
            } catch (const std::exception& error) {
                Q_EMIT problem(tr("Cannot read the replay runs of %1: %2").arg(casePath_, QString::fromStdString(error.what())));
            }
        }
        if (!belongs) {
            Q_EMIT problem(db_ ? tr("Not compared with run %1: it is not a replay run of tape %2 in %3 (removed, or of another tape)")
                                     .arg(runId)
                                     .arg(tapeId_)
                                     .arg(QDir::toNativeSeparators(casePath_))
                               : tr("Not compared with run %1: no case is charted").arg(runId));
            runId = 0;
        }
    }
    comparisonRun_ = runId;
    if (comparisonHeld_ != comparisonRun_) {
        comparisonHeld_ = 0;
        comparisonVerdicts_.clear();
        comparisonHistogram_ = {};
    }
    showComparison();
    fillTransactionCharts();
    fillComparisonChoices();
    schedule(comparisonRun_ != 0 ? RereadComparison | Replot : Replot, 0);
}

bool ChartPanel::isComparing() const
{
    return comparisonRun_ > 0 && comparisonHeld_ == comparisonRun_ && comparisonRun_ != runId_;
}

QString ChartPanel::runName(qint64 runId) const
{
    if (runId == TransactionTable::kEveryRun)
        return tr("All runs");
    if (runId <= 0)
        return QString();
    for (const ChartRun& run : runs_)
        if (run.id == runId)
            return run.name();
    return ChartRun{runId, QString(), QString()}.name();
}

void ChartPanel::refresh()
{
    if (db_)
        schedule(RereadVerdicts, kRefreshDelayMs);
}

void ChartPanel::selectTransaction(quint64 index)
{
    if (selected_ == index)
        return;
    selected_ = index;
    transactions_->setSelectedTransaction(selected_);
    divergence_->setSelectedTransaction(selected_);
    fillTransactionCharts();
    schedule(Replot, 0);
}

void ChartPanel::clearSelection()
{
    selected_.reset();
    transactions_->setSelectedTransaction(selected_);
    divergence_->setSelectedTransaction(selected_);
    fillTransactionCharts();
    schedule(Replot, 0);
}

bool ChartPanel::isLoading() const
{
    return !reads_.empty() || (pendingTiers_ & (RereadSeries | RereadVerdicts | RereadComparison)) != 0 || staleParts_ != 0;
}

int ChartPanel::lossPointCount() const { return transactions_->lossPointCount(); }
int ChartPanel::verdictMarkerCount() const { return transactions_->verdictMarkerCount(); }
int ChartPanel::divergencePointCount() const { return divergence_->pointCount(); }
int ChartPanel::comparisonPointCount() const { return divergence_->hasComparison() ? divergence_->comparisonPointCount() : 0; }
int ChartPanel::tensorBarCount() const { return tensors_->barCount(); }
int ChartPanel::slotBarCount() const { return slots_->barCount(); }
quint64 ChartPanel::histogramTotal() const { return histogram_->total(); }

void ChartPanel::schedule(int tiers, int delayMs)
{
    pendingTiers_ |= tiers;
    if (!timer_.isActive() || timer_.remainingTime() > delayMs)
        timer_.start(delayMs);
}

void ChartPanel::drain()
{
    const int tiers = std::exchange(pendingTiers_, 0);
    if (db_) {
        int parts = 0;
        if (tiers & RereadSeries)
            parts |= ChartData::Series | ChartData::Verdicts;
        if (tiers & RereadVerdicts)
            parts |= ChartData::Verdicts;
        // The comparison run may be growing as the shown one does: read again with it.
        if ((tiers & (RereadSeries | RereadVerdicts | RereadComparison)) && comparisonRun_ != 0)
            parts |= ChartData::Comparison;
        int inFlight = 0;
        for (const std::unique_ptr<Read>& read : reads_)
            if (read->generation == generation_)
                inFlight |= read->parts;
        if (parts != 0 && !(parts & ChartData::Series) && (parts & ~inFlight) == 0)
            staleParts_ |= parts;  // read again once the one in flight lands
        else if (parts != 0)
            startRead(parts);
    }
    if (tiers & Recalculate)
        fillTransactionCharts();
    if (tiers & (Replot | Recalculate))
        replotVisible();
}

void ChartPanel::startRead(int parts)
{
    auto read = std::make_unique<Read>();
    read->parts = parts;
    read->sequence = ++readSequence_;
    read->generation = generation_;
    read->cancel = std::make_shared<ReadCancellation>();
    read->result = std::make_shared<std::optional<ChartData>>();
    read->thread = QThread::create([path = casePath_, tapeId = tapeId_, runId = requestedRun_, comparison = comparisonRun_, parts,
                                    cancel = read->cancel, result = read->result] {
        try {
            *result = ChartData::read(path, tapeId, runId, parts, cancel.get(), comparison);
        } catch (const OperationCancelled&) {
            // superseded: nothing to apply
        }
    });
    QThread* thread = read->thread;
    connect(thread, &QThread::finished, this, [this, thread] { finishRead(thread); });
    reads_.push_back(std::move(read));
    thread->start(QThread::LowPriority);
}

void ChartPanel::finishRead(QThread* thread)
{
    auto it = std::find_if(reads_.begin(), reads_.end(), [thread](const std::unique_ptr<Read>& read) { return read->thread == thread; });
    if (it == reads_.end())
        return;
    std::unique_ptr<Read> read = std::move(*it);
    reads_.erase(it);
    thread->deleteLater();
    if (read->generation == generation_ && *read->result)
        apply(read->sequence, **read->result);
    if (staleParts_ != 0 && read->generation == generation_) {
        const int stale = std::exchange(staleParts_, 0);
        schedule(((stale & ChartData::Verdicts) ? RereadVerdicts : 0) | ((stale & ChartData::Comparison) ? RereadComparison : 0), 0);
    }
    if (!isLoading())
        Q_EMIT loaded();
}

void ChartPanel::apply(quint64 sequence, const ChartData& data)
{
    if (!data.problem.isEmpty()) {
        Q_EMIT problem(tr("Cannot chart %1: %2").arg(casePath_, data.problem));
        return;
    }
    if (data.parts & ChartData::Series) {
        transactions_->setSeries(data.loss, data.parameterNames, data.parameterCount, data.updateNorms);
        transactions_->setScheduledOptions(data.scheduledNames, data.scheduledValues);
        const quint64 count = data.loss && !data.loss->isEmpty() ? static_cast<quint64>((data.loss->constEnd() - 1)->key) + 1 : 0;
        divergence_->setTransactionCount(count);
        tapeName_ = data.tapeName;
        tapeDigest_ = data.tapeDigest;
        tapeDigestIsFileSha256_ = data.tapeDigestIsFileSha256;
    }
    if (data.runsRead)
        runs_ = data.runs;
    // A verdict read that started earlier than one already applied is older news.
    if ((data.parts & ChartData::Verdicts) && sequence > appliedVerdicts_) {
        appliedVerdicts_ = sequence;
        runId_ = data.runId;
        transactions_->setVerdicts(data.verdicts);
        divergence_->setVerdicts(data.verdicts);
        divergence_->setTolerance(data.ulpTolerance, data.relativeTolerance);
        runHistogram_ = data.runHistogram;
        verdicts_ = data.verdicts;
    }
    // Likewise a comparison, and one of a run no longer asked for.
    if ((data.parts & ChartData::Comparison) && sequence > appliedComparison_ && data.comparisonRunId == comparisonRun_) {
        appliedComparison_ = sequence;
        if (!data.comparisonProblem.isEmpty()) {
            Q_EMIT problem(tr("Not compared with run %1: %2").arg(comparisonRun_).arg(data.comparisonProblem));
            comparisonRun_ = 0;
            comparisonHeld_ = 0;
            comparisonVerdicts_.clear();
            comparisonHistogram_ = {};
        } else {
            comparisonHeld_ = data.comparisonRunId;
            comparisonVerdicts_ = data.comparisonVerdicts;
            comparisonHistogram_ = data.comparisonHistogram;
        }
    }
    showComparison();
    fillComparisonChoices();
    // The selected transaction's comparisons may have arrived with the verdicts.
    if (data.parts & (ChartData::Verdicts | ChartData::Comparison))
        fillTransactionCharts();
    schedule(Replot, 0);
}

void ChartPanel::showComparison()
{
    if (isComparing()) {
        divergence_->setRunName(runName(runId_));
        divergence_->setComparison(comparisonVerdicts_, runName(comparisonRun_));
    } else if (divergence_->hasComparison()) {
        divergence_->clearComparison();
    }
    updateCaptions();
}

void ChartPanel::fillComparisonChoices()
{
    QList<std::pair<QString, qint64>> choices{{tr("No comparison"), 0}};
    bool listed = comparisonRun_ == 0;
    for (const ChartRun& run : runs_) {
        // The shown run has nothing to add to itself; listed only while it is the one chosen.
        if (run.id == runId_ && run.id != comparisonRun_)
            continue;
        choices.append({run.id == runId_ ? tr("vs %1 (shown)").arg(run.label()) : tr("vs %1").arg(run.label()), run.id});
        listed = listed || run.id == comparisonRun_;
    }
    if (!listed)  // chosen before the runs were read
        choices.append({tr("vs %1").arg(ChartRun{comparisonRun_, QString(), QString()}.label()), comparisonRun_});
    // Refreshes come with every batch of results: an open list is rebuilt only when it changes.
    bool same = compare_->count() == choices.size();
    for (int i = 0; same && i < choices.size(); ++i)
        same = compare_->itemText(i) == choices[i].first && compare_->itemData(i).toLongLong() == choices[i].second;
    const QSignalBlocker blocker(compare_);
    if (!same) {
        compare_->clear();
        for (const auto& [text, id] : choices)
            compare_->addItem(text, QVariant::fromValue<qint64>(id));
    }
    compare_->setCurrentIndex(std::max(0, compare_->findData(QVariant::fromValue<qint64>(comparisonRun_))));
    compare_->setEnabled(compare_->count() > 1);
}

void ChartPanel::updateCaptions()
{
    const std::initializer_list<QCustomPlot*> plots{transactions_, divergence_, tensors_, slots_, histogram_};
    if (casePath_.isEmpty()) {
        for (QCustomPlot* plot : plots)
            ChartTools::of(plot)->setCaption(QString(), QString());
        return;
    }
    const QString tape = tapeName_.isEmpty() ? tr("tape %1").arg(tapeId_) : tapeName_;
    const auto described = [this](qint64 runId) {
        if (runId == TransactionTable::kEveryRun)
            return tr("All runs (newest result per transaction)");
        for (const ChartRun& run : runs_)
            if (run.id == runId)
                return run.label();
        return ChartRun{runId, QString(), QString()}.label();
    };
    const QString shown = runId_ == 0 ? tr("no replay run") : runName(runId_);
    QString tapeLine = tr("Tape: %1, tape %2 of the case").arg(tape).arg(tapeId_);
    if (!tapeDigest_.isEmpty())
        tapeLine = tr("Tape: %1 (%2 %3…), tape %4 of the case")
                       .arg(tape, tapeDigestIsFileSha256_ ? tr("SHA-256") : tr("chain head"), tapeDigest_.left(kDigestShown))
                       .arg(tapeId_);
    const QString runLine = runId_ == 0 ? tr("Run: none (the tape has no replay run)") : tr("Run: %1").arg(described(runId_));
    const QString caseLine = tr("Case: %1").arg(QDir::toNativeSeparators(casePath_));
    const bool comparing = isComparing();
    for (QCustomPlot* plot : plots) {
        const bool overlaid = comparing && (plot == divergence_ || plot == histogram_);
        const QString title = tape + QStringLiteral(" — ") + shown + (overlaid ? tr(" vs %1").arg(runName(comparisonRun_)) : QString());
        const QString runs = overlaid ? tr("%1, compared with %2").arg(runLine, described(comparisonRun_)) : runLine;
        ChartTools::of(plot)->setCaption(title, QStringList{tapeLine, runs, caseLine}.join(QLatin1Char('\n')));
    }
}

void ChartPanel::fillTransactionCharts()
{
    std::vector<TensorComparison> comparisons;
    // Showing every run, a transaction's comparisons are those of the run its result is from.
    qint64 run = runId_;
    if (runId_ == TransactionTable::kEveryRun) {
        run = 0;
        if (selected_) {
            auto found = std::lower_bound(verdicts_.begin(), verdicts_.end(), *selected_,
                                          [](const VerdictPoint& point, quint64 index) { return point.index < index; });
            if (found != verdicts_.end() && found->index == *selected_)
                run = found->runId;
        }
    }
    if (db_ && run > 0 && selected_) {
        try {
            comparisons = loadTransactionComparisons(*db_, run, *selected_);
        } catch (const std::exception& error) {
            Q_EMIT problem(tr("Cannot read the comparisons of transaction %1: %2").arg(*selected_).arg(QString::fromStdString(error.what())));
        }
    }
    tensors_->setComparisons(selected_, comparisons);
    slots_->setComparisons(selected_, comparisons);
    if (selected_ && run > 0)
        histogram_->setHistogram(sumUlpHistograms(comparisons), tr("Transaction %1 (run %2)").arg(*selected_).arg(run));
    else if (runId_ == TransactionTable::kEveryRun && !verdicts_.empty())
        histogram_->setHistogram(runHistogram_, tr("Every run, newest result per transaction"));
    else if (runId_ > 0)
        histogram_->setHistogram(runHistogram_, tr("Run %1, every comparison").arg(runId_));
    else
        histogram_->clear();

    // Beside it, the comparison run's histogram of the same transaction, or of the whole run.
    if (!db_ || !isComparing() || (runId_ <= 0 && runId_ != TransactionTable::kEveryRun)) {
        histogram_->clearComparison();
        return;
    }
    const bool perTransaction = selected_ && run > 0;  // as the shown run's histogram is
    UlpHistogram compared = comparisonHistogram_;
    if (perTransaction) {
        try {
            compared = sumUlpHistograms(loadTransactionComparisons(*db_, comparisonRun_, *selected_));
        } catch (const std::exception& error) {
            Q_EMIT problem(tr("Cannot read the comparisons of transaction %1 in run %2: %3")
                               .arg(*selected_)
                               .arg(comparisonRun_)
                               .arg(QString::fromStdString(error.what())));
            compared = {};
        }
    }
    const QString shownName = perTransaction ? runName(run) : runName(runId_);
    histogram_->setComparison(compared, runName(comparisonRun_), shownName);
}

void ChartPanel::replotVisible()
{
    for (QCustomPlot* plot : std::initializer_list<QCustomPlot*>{transactions_, divergence_, tensors_, slots_, histogram_})
        if (plot->isVisible())
            plot->replot(QCustomPlot::rpQueuedReplot);
}

void ChartPanel::cancelReads()
{
    for (const std::unique_ptr<Read>& read : reads_)
        read->cancel->stop = true;
}

void ChartPanel::clearCharts()
{
    transactions_->clear();
    divergence_->clear();
    tensors_->clear();
    slots_->clear();
    histogram_->clear();
    runHistogram_ = {};
}

qint64 ChartPanel::resolveRun()
{
    if (!db_)
        return 0;
    try {
        if (requestedRun_ == TransactionTable::kEveryRun)
            return requestedRun_;
        if (requestedRun_ != 0) {
            // A run of another tape: the read says so (problem()).
            return replayRunBelongsToTape(*db_, requestedRun_, tapeId_) ? requestedRun_ : 0;
        }
        return newestReplayRun(*db_, tapeId_).value_or(0);
    } catch (const std::exception& error) {
        Q_EMIT problem(tr("Cannot read the replay runs of %1: %2").arg(casePath_, QString::fromStdString(error.what())));
        return 0;
    }
}

void ChartPanel::onChartClicked(quint64 index)
{
    selectTransaction(index);
    Q_EMIT transactionClicked(index);
}

}  // namespace zkdv::ui
