#include "plots/chart_panel.h"

#include <algorithm>
#include <atomic>
#include <initializer_list>

#include <QThread>

#include "plots/chart_data.h"
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
        addTab(chart, QString(name).replace(QLatin1String(" and "), QLatin1String(" && ")));
        chart->setAccessibleName(name);  // names its exports (ChartTools)
    }

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
    pendingTiers_ &= ~(RereadSeries | RereadVerdicts | Recalculate);
    verdictsStale_ = false;
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
        schedule(Replot, 0);
        return;
    }
    runId_ = resolveRun();
    schedule(RereadSeries | RereadVerdicts | Replot, 0);
}

void ChartPanel::setRun(qint64 runId)
{
    requestedRun_ = runId;
    if (!db_)
        return;
    runId_ = resolveRun();
    fillTransactionCharts();
    schedule(RereadVerdicts | Replot, 0);
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
    return !reads_.empty() || (pendingTiers_ & (RereadSeries | RereadVerdicts)) != 0 || verdictsStale_;
}

int ChartPanel::lossPointCount() const { return transactions_->lossPointCount(); }
int ChartPanel::verdictMarkerCount() const { return transactions_->verdictMarkerCount(); }
int ChartPanel::divergencePointCount() const { return divergence_->pointCount(); }
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
        const bool verdictsInFlight = std::any_of(reads_.begin(), reads_.end(), [this](const std::unique_ptr<Read>& read) {
            return read->generation == generation_ && (read->parts & ChartData::Verdicts);
        });
        if (parts == ChartData::Verdicts && verdictsInFlight)
            verdictsStale_ = true;  // read again once the one in flight lands
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
    read->thread = QThread::create([path = casePath_, tapeId = tapeId_, runId = requestedRun_, parts, cancel = read->cancel,
                                    result = read->result] {
        try {
            *result = ChartData::read(path, tapeId, runId, parts, cancel.get());
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
    if (verdictsStale_ && read->generation == generation_) {
        verdictsStale_ = false;
        schedule(RereadVerdicts, 0);
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
    }
    // A verdict read that started earlier than one already applied is older news.
    if ((data.parts & ChartData::Verdicts) && sequence > appliedVerdicts_) {
        appliedVerdicts_ = sequence;
        runId_ = data.runId;
        transactions_->setVerdicts(data.verdicts);
        divergence_->setVerdicts(data.verdicts);
        divergence_->setTolerance(data.ulpTolerance, data.relativeTolerance);
        runHistogram_ = data.runHistogram;
        verdicts_ = data.verdicts;
        // The selected transaction's comparisons may have arrived with them.
        fillTransactionCharts();
    }
    schedule(Replot, 0);
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
