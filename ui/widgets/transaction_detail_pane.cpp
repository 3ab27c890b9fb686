#include "widgets/transaction_detail_pane.h"

#include <QAction>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollArea>
#include <QSet>
#include <QTableWidget>
#include <QSplitter>
#include <QTimer>
#include <QTreeWidget>
#include <QTreeWidgetItemIterator>
#include <QVBoxLayout>

#include <cmath>

#include "jobs/background_job.h"
#include "plots/element_difference_chart.h"
#include "plots/verdict_palette.h"
#include "widgets/divergence_explanation_view.h"
#include "widgets/job_progress_frame.h"
#include "widgets/wheel_guard.h"
#include "zkdv/replay/divergence_explain.h"
#include "zkdv/replay/element_comparison.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/transaction_detail.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/tape/shape_text.h"

namespace zkdv::ui {

namespace {

QString text(const std::string& value) { return QString::fromStdString(value); }

QString verdictText(Verdict verdict)
{
    const std::string_view name = verdictName(verdict);
    return QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size()));
}

QString number(double value, int digits = 17)
{
    return std::isnan(value) ? QObject::tr("not recorded") : QString::number(value, 'g', digits);
}

QTreeWidgetItem* add(QTreeWidgetItem* parent, const QString& field, const QString& value = QString())
{
    auto* item = new QTreeWidgetItem(parent, {field, value});
    item->setToolTip(1, value);
    return item;
}

QTreeWidgetItem* addTensors(QTreeWidgetItem* parent, const std::vector<RecordedTensor>& tensors)
{
    for (const RecordedTensor& tensor : tensors) {
        QTreeWidgetItem* item = add(parent, text(tensor.name), QStringLiteral("%1 %2").arg(text(tensor.dtype), QString::fromStdString(shapeText(tensor.shape))));
        add(item, QObject::tr("SHA-256 of its bytes"), text(tensor.sha256));
    }
    return parent;
}

void addMetrics(QTreeWidgetItem* parent, const TensorComparison& c)
{
    const DivergenceMetrics& m = c.metrics;
    add(parent, QObject::tr("Elements"), QString::number(m.elements));
    add(parent, QObject::tr("Bit for bit"), m.bitwiseEqual ? QObject::tr("yes") : QObject::tr("no"));
    add(parent, QObject::tr("Max |difference|"), number(m.maxAbs, 6));
    add(parent, QObject::tr("Relative L2"), number(m.relativeL2, 6));
    add(parent, QObject::tr("Cosine"), number(m.cosine, 10));
    add(parent, QObject::tr("Max ULP"), number(m.maxUlp, 6));
    add(parent, QObject::tr("Mean ULP"), number(m.meanUlp, 6));
    add(parent, QObject::tr("NaN / Inf mismatches"), QStringLiteral("%1 / %2").arg(m.nanMismatches).arg(m.infMismatches));
    if (!c.note.empty())
        add(parent, QObject::tr("Note"), text(c.note));
}

}  // namespace

TransactionDetailPane::TransactionDetailPane(QWidget* parent) : QDockWidget(tr("Transaction Details"), parent)
{
    setObjectName(QStringLiteral("transactionDetails"));
    auto* body = new QWidget(this);
    auto* layout = new QVBoxLayout(body);
    layout->setContentsMargins(4, 4, 4, 4);
    title_ = new QLabel(tr("Select a transaction in the table to see it in detail."), body);
    title_->setWordWrap(true);
    layout->addWidget(title_);

    auto* split = new QSplitter(Qt::Vertical, body);
    tree_ = new QTreeWidget(split);
    tree_->setObjectName(QStringLiteral("transactionDetailTree"));
    tree_->setColumnCount(2);
    tree_->setHeaderLabels({tr("Field"), tr("Value")});
    tree_->header()->setSectionResizeMode(0, QHeaderView::Interactive);
    tree_->header()->resizeSection(0, 190);
    tree_->setAlternatingRowColors(true);
    tree_->setUniformRowHeights(true);

    auto* elements = new QWidget(split);
    auto* elementLayout = new QVBoxLayout(elements);
    elementLayout->setContentsMargins(0, 0, 0, 0);
    auto* compareRow = new QHBoxLayout;
    compare_ = new QPushButton(tr("Compare Elements"), elements);
    compare_->setObjectName(QStringLiteral("compareElements"));
    compare_->setToolTip(tr("Replay this transaction once more (in a worker, nothing is stored) and compare its recorded deltas "
                            "with the replayed ones element by element"));
    compareRow->addWidget(compare_);
    explain_ = new QPushButton(tr("Explain Divergence…"), elements);
    explain_->setObjectName(QStringLiteral("explainDivergence"));
    explain_->setToolTip(tr("Replay this transaction on two sides (another device, thread count or kernel settings; nothing is "
                            "stored) and name the first operator whose outputs differ beyond rounding"));
    explain_->setEnabled(false);
    compareRow->addWidget(explain_);
    elementTensor_ = new QComboBox(elements);
    elementTensor_->setObjectName(QStringLiteral("elementTensor"));
    elementTensor_->setToolTip(tr("The delta shown"));
    compareRow->addWidget(elementTensor_, 1);
    elementLayout->addLayout(compareRow);
    progress_ = new JobProgressFrame(elements);
    elementLayout->addWidget(progress_);
    explainProgress_ = new JobProgressFrame(elements);
    elementLayout->addWidget(explainProgress_);
    elementInfo_ = new QLabel(elements);
    elementInfo_->setWordWrap(true);
    elementLayout->addWidget(elementInfo_);
    chart_ = new ElementDifferenceChart(elements);
    chart_->setObjectName(QStringLiteral("elementDifferenceChart"));
    elementLayout->addWidget(chart_, 2);
    worst_ = new QTableWidget(0, 5, elements);
    worst_->setObjectName(QStringLiteral("worstElements"));
    worst_->setHorizontalHeaderLabels({tr("Element"), tr("Recorded"), tr("Replayed"), tr("|Difference|"), tr("ULP")});
    worst_->horizontalHeader()->setStretchLastSection(true);
    worst_->verticalHeader()->hide();
    worst_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    worst_->setSelectionBehavior(QAbstractItemView::SelectRows);
    worst_->setToolTip(tr("The elements that differ most, largest |difference| first"));
    elementLayout->addWidget(worst_, 1);
    connect(compare_, &QPushButton::clicked, this, [this] { compareElements(); });
    connect(explain_, &QPushButton::clicked, this, &TransactionDetailPane::askSidesAndExplain);
    connect(elementTensor_, &QComboBox::currentIndexChanged, this, &TransactionDetailPane::showElementTensor);

    auto* noteBox = new QWidget(split);
    auto* noteLayout = new QVBoxLayout(noteBox);
    noteLayout->setContentsMargins(0, 0, 0, 0);
    auto* flagRow = new QHBoxLayout;
    flagRow->addWidget(new QLabel(tr("Auditor's flag:"), noteBox));
    flag_ = new QComboBox(noteBox);
    flag_->setObjectName(QStringLiteral("noteFlag"));
    for (TransactionFlag flag : transactionFlags())
        flag_->addItem(QString::fromUtf8(transactionFlagName(flag)));
    flag_->setToolTip(tr("Your judgement of this transaction, stored in the case (filter: flag == suspicious)"));
    flagRow->addWidget(flag_, 1);
    save_ = new QPushButton(tr("Save Note"), noteBox);
    save_->setObjectName(QStringLiteral("saveNote"));
    save_->setToolTip(tr("Store the flag and note in the case (Ctrl+Return in the note)"));
    revert_ = new QPushButton(tr("Revert"), noteBox);
    flagRow->addWidget(save_);
    flagRow->addWidget(revert_);
    noteLayout->addLayout(flagRow);
    note_ = new QPlainTextEdit(noteBox);
    note_->setObjectName(QStringLiteral("noteText"));
    note_->setPlaceholderText(tr("A note on this transaction: what you checked, what to ask the trainer… (printed in the report)"));
    note_->setTabChangesFocus(true);
    noteLayout->addWidget(note_, 1);
    noteInfo_ = new QLabel(noteBox);
    noteInfo_->setForegroundRole(QPalette::PlaceholderText);
    noteLayout->addWidget(noteInfo_);
    split->addWidget(tree_);
    split->addWidget(elements);
    split->addWidget(noteBox);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    split->setStretchFactor(2, 1);
    layout->addWidget(split, 1);
    // Scrolled rather than squeezed: the window keeps fitting 1024x700 (and scale 1.5) with
    // the pane open.
    scroll_ = new QScrollArea(this);
    scroll_->setObjectName(QStringLiteral("transactionDetailScroll"));
    scroll_->setWidget(body);
    scroll_->setWidgetResizable(true);
    scroll_->setFrameShape(QFrame::NoFrame);
    setWidget(scroll_);
    // Scrolling the pane over the flag box must not change the flag.
    WheelGuard::guardChildren(this);

    loadDelay_ = new QTimer(this);
    loadDelay_->setSingleShot(true);
    loadDelay_->setInterval(60);
    connect(loadDelay_, &QTimer::timeout, this, &TransactionDetailPane::load);
    connect(save_, &QPushButton::clicked, this, [this] { saveNote(); });
    connect(revert_, &QPushButton::clicked, this, [this] {
        flag_->setCurrentIndex(savedFlag_);
        note_->setPlainText(savedNote_);
    });
    connect(flag_, &QComboBox::currentIndexChanged, this, &TransactionDetailPane::updateNoteButtons);
    connect(note_, &QPlainTextEdit::textChanged, this, &TransactionDetailPane::updateNoteButtons);
    auto* saveShortcut = new QAction(tr("Save Note"), this);
    saveShortcut->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return));
    saveShortcut->setShortcutContext(Qt::WidgetShortcut);
    connect(saveShortcut, &QAction::triggered, this, [this] { saveNote(); });
    note_->addAction(saveShortcut);
    clearTransaction();
}

TransactionDetailPane::~TransactionDetailPane()
{
    if (job_)
        job_->cancel();  // its destructor waits for the worker to be stopped
    if (explainJob_)
        explainJob_->cancel();
}

void TransactionDetailPane::setCase(const QString& casePath, qint64 tapeId)
{
    // Another tape or case: the note goes to the case it was written in (MainWindow asks
    // first where the auditor can still cancel; here it can only be saved).
    if (hasUnsavedNote())
        saveNote();
    casePath_ = casePath;
    tapeId_ = tapeId;
    clearTransaction();
}

void TransactionDetailPane::showTransaction(quint64 index, qint64 runId)
{
    if (casePath_.isEmpty() || tapeId_ == 0)
        return;
    pending_ = index;
    runId_ = runId;
    loadDelay_->start();
}

void TransactionDetailPane::clearTransaction()
{
    loadDelay_->stop();
    pending_.reset();
    shown_.reset();
    noteShownFor_.reset();
    explain_->setEnabled(false);
    tree_->clear();
    title_->setText(casePath_.isEmpty() ? tr("Open a case to see its transactions in detail.")
                                        : tr("Select a transaction in the table to see it in detail."));
    flag_->setCurrentIndex(0);
    note_->clear();
    savedFlag_ = 0;
    savedNote_.clear();
    noteInfo_->clear();
    updateNoteButtons();
    shownHasDeltas_ = false;
    clearElements(QString());
}

void TransactionDetailPane::reload()
{
    if (shown_) {
        pending_ = shown_;
        load();
    }
}

void TransactionDetailPane::load()
{
    if (!pending_)
        return;
    const quint64 index = *pending_;
    pending_.reset();
    // Typed while the next transaction was on its way: stored before it replaces the editors.
    if (shown_ && *shown_ != index && hasUnsavedNote())
        saveNote();
    try {
        CaseStore store(casePath_.toStdString(), CaseStore::Access::ReadOnly);
        const TransactionDetail detail = loadTransactionDetail(store, tapeId_, index, runId_);
        fill(detail);
    } catch (const std::exception& error) {
        clearTransaction();
        title_->setText(tr("Transaction %1 cannot be read: %2").arg(index).arg(QString::fromUtf8(error.what())));
        Q_EMIT problem(title_->text());
    }
}

void TransactionDetailPane::fill(const TransactionDetail& d)
{
    const bool sameTransaction = shown_ && *shown_ == d.index;
    shown_ = d.index;
    shownHasDeltas_ = d.hasDeltas;
    explain_->setEnabled(!(explainJob_ && explainJob_->isRunning()));
    if (!sameTransaction) {
        clearElements(d.hasDeltas ? QString() : tr("Transaction %1 carries no recorded deltas: only its fingerprints can be compared.").arg(d.index));
        Q_EMIT recordShown(QString::fromStdString(d.tapeFile), d.recordOffset, tr("transaction %1 (record %2)").arg(d.index).arg(d.recordIndex),
                           d.tapeFile.empty() ? tr("Transaction %1's record: %2").arg(d.index).arg(text(d.recordSource.empty() ? d.recordProblem : d.recordSource))
                                              : QString());
    }
    else
        compare_->setEnabled(d.hasDeltas && !(job_ && job_->isRunning()));
    title_->setText(tr("<b>Transaction %1</b> of tape %2%3")
                        .arg(d.index)
                        .arg(d.tapeId)
                        .arg(d.verdict ? tr(" · run %1: <b>%2</b>").arg(d.runId).arg(VerdictPalette::label(d.verdict->verdict).toHtmlEscaped())
                                       : d.runId ? tr(" · not replayed by run %1").arg(d.runId) : tr(" · never replayed")));
    // Expansion survives a reload of the same transaction (a replay storing its results).
    QSet<QString> expanded;
    if (sameTransaction)
        for (QTreeWidgetItemIterator it(tree_); *it; ++it)
            if ((*it)->isExpanded())
                expanded.insert((*it)->text(0));
    tree_->clear();

    auto* recorded = new QTreeWidgetItem(tree_, {tr("Recorded"), tr("what the tape holds for this step")});
    add(recorded, tr("Segment"), tr("%1 (a replay starts from that segment's snapshot)").arg(d.segment));
    add(recorded, tr("Loss"), number(d.loss) + (d.lossDtype.empty() ? QString() : QStringLiteral(" (%1)").arg(text(d.lossDtype))));
    add(recorded, tr("Learning rate"), number(d.lr));
    add(recorded, tr("Update norm (L2)"), number(d.updateNorm));
    add(recorded, tr("Largest update element"), number(d.maxUpdate));
    add(recorded, tr("Wall time"), d.wallTimeNs ? tr("%1 ns").arg(d.wallTimeNs) : tr("not recorded"));
    QTreeWidgetItem* record = add(recorded, tr("Record"), tr("#%1 at byte %2, %3 bytes").arg(d.recordIndex).arg(d.recordOffset).arg(d.recordLength));
    add(record, tr("Record digest"), text(d.recordDigest));
    if (!d.recordSource.empty())
        add(record, tr("Read from"), text(d.recordSource));
    if (!d.recordProblem.empty()) {
        QTreeWidgetItem* problem = add(recorded, tr("Record contents"), tr("cannot be read: %1").arg(text(d.recordProblem)));
        problem->setForeground(1, QBrush(QColor(0xb7, 0x1c, 0x1c)));
    } else {
        addTensors(add(recorded, tr("Batch"), tr("%n tensor(s)", nullptr, static_cast<int>(d.batch.size()))), d.batch);
        QTreeWidgetItem* options = add(recorded, tr("Optimizer values"), tr("%n option(s), per group", nullptr, static_cast<int>(d.optimizerValues.size())));
        for (const auto& [option, perGroup] : d.optimizerValues) {
            QStringList values;
            for (double v : perGroup)
                values << QString::number(v, 'g', 17);
            add(options, text(option), values.join(QStringLiteral(", ")));
        }
        QTreeWidgetItem* transforms =
            add(recorded, tr("Gradient transforms"),
                d.gradientTransforms.empty() ? tr("none: the optimizer stepped with the gradients of the backward pass")
                                             : tr("%n applied before the step, in order", nullptr, static_cast<int>(d.gradientTransforms.size())));
        for (std::size_t k = 0; k < d.gradientTransforms.size(); ++k)
            add(transforms, QString::number(k), text(d.gradientTransforms[k]));
    }

    QTreeWidgetItem* fingerprints = add(tree_->invisibleRootItem(), tr("Update fingerprints"),
                                        tr("%n parameter(s): L2 norm and largest |element| of each update", nullptr,
                                           static_cast<int>(d.fingerprints.size())));
    QTreeWidgetItem* recordedPrints = add(fingerprints, tr("Recorded"));
    for (const ParameterFingerprint& f : d.fingerprints)
        add(recordedPrints, text(f.parameter), tr("L2 %1, max |Δ| %2").arg(QString::number(f.l2, 'g', 17), QString::number(f.maxAbs, 'g', 17)));
    add(fingerprints, tr("Replayed"),
        d.verdict ? tr("not stored in the case: it keeps how far each replayed fingerprint is from the recorded one "
                       "(update/l2 and update/max_abs under Replay)")
                  : tr("not replayed by the shown run"));

    QTreeWidgetItem* checks = add(tree_->invisibleRootItem(), tr("Sampled checks"));
    QStringList carried;
    if (d.hasDeltas)
        carried << tr("full deltas");
    if (d.hasStateDigest)
        carried << tr("a state digest");
    checks->setText(1, carried.isEmpty() ? tr("none: only the fingerprints above") : carried.join(tr(" and ")));
    if (d.hasDeltas)
        addTensors(add(checks, tr("Deltas"), tr("%n tensor(s)", nullptr, static_cast<int>(d.deltas.size()))), d.deltas);
    if (d.hasStateDigest)
        add(checks, tr("State digest after the step"), text(d.stateDigest));

    QTreeWidgetItem* replay = add(tree_->invisibleRootItem(), tr("Replay"));
    if (d.runId == 0) {
        replay->setText(1, d.tapeRunCount == 0 ? tr("no run has replayed this tape")
                                               : tr("none of the tape's %n run(s) replayed it", nullptr, static_cast<int>(d.tapeRunCount)));
    } else if (!d.verdict) {
        replay->setText(1, tr("run %1 did not replay it").arg(d.runId));
    } else {
        const StoredVerdict& v = *d.verdict;
        replay->setText(1, tr("run %1: %2").arg(d.runId).arg(VerdictPalette::label(v.verdict)));
        add(replay, tr("Why replayed"), v.selected ? tr("selected") : tr("as the prefix of a selected transaction"));
        add(replay, tr("Detail"), text(v.detail));
        add(replay, tr("Replay time"), tr("%1 ms").arg(static_cast<double>(v.replayNs) / 1e6, 0, 'f', 2));
        QTreeWidgetItem* comparisons =
            add(replay, tr("Comparisons"), tr("%n tensor(s) and slot(s) compared", nullptr, static_cast<int>(d.comparisons.size())));
        for (const TensorComparison& c : d.comparisons) {
            QTreeWidgetItem* item = add(comparisons, text(c.label()),
                                        tr("%1, max ULP %2").arg(verdictText(c.verdict), number(c.metrics.maxUlp, 6)));
            if (c.verdict == Verdict::Diverged || c.verdict == Verdict::Unverifiable)
                item->setForeground(1, QBrush(QColor(0xb7, 0x1c, 0x1c)));
            addMetrics(item, c);
        }
    }

    for (QTreeWidgetItem* top : {recorded, fingerprints, checks, replay})
        top->setExpanded(true);
    if (sameTransaction)
        for (QTreeWidgetItemIterator it(tree_); *it; ++it)
            if (expanded.contains((*it)->text(0)))
                (*it)->setExpanded(true);
    showNote(d);
}

void TransactionDetailPane::showNote(const TransactionDetail& d)
{
    // A reload of the same transaction (a replay storing its results, a save) keeps what the
    // auditor is typing.
    const bool keepEdit = shown_ && *shown_ == d.index && noteShownFor_ == shown_ && hasUnsavedNote();
    savedFlag_ = d.note ? static_cast<int>(d.note->flag) : 0;
    savedNote_ = d.note ? text(d.note->note) : QString();
    noteShownFor_ = d.index;
    if (!keepEdit) {
        flag_->setCurrentIndex(savedFlag_);
        note_->setPlainText(savedNote_);
    }
    noteInfo_->setText(d.note ? tr("by %1, %2").arg(text(d.note->author), text(d.note->updatedAt)) : tr("no note yet"));
    updateNoteButtons();
}

void TransactionDetailPane::updateNoteButtons()
{
    const bool editable = shown_.has_value();
    flag_->setEnabled(editable);
    note_->setEnabled(editable);
    const bool changed = editable && (flag_->currentIndex() != savedFlag_ || note_->toPlainText() != savedNote_);
    save_->setEnabled(changed);
    revert_->setEnabled(changed);
}

bool TransactionDetailPane::hasUnsavedNote() const
{
    return shown_ && (flag_->currentIndex() != savedFlag_ || note_->toPlainText() != savedNote_);
}

bool TransactionDetailPane::settlePendingNote()
{
    while (hasUnsavedNote()) {
        if (saveNote())
            return true;
        QMessageBox box(QMessageBox::Warning, tr("Unsaved Note"),
                        tr("Your note on transaction %1 could not be saved.").arg(*shown_), QMessageBox::Save | QMessageBox::Discard | QMessageBox::Cancel,
                        this);
        box.setObjectName(QStringLiteral("unsavedNoteBox"));
        box.setInformativeText(tr("%1\n\nSave tries again; Discard drops the note; Cancel stays on this transaction.").arg(saveProblem_));
        box.setDefaultButton(QMessageBox::Save);
        switch (box.exec()) {
        case QMessageBox::Save:
            continue;
        case QMessageBox::Discard:
            flag_->setCurrentIndex(savedFlag_);
            note_->setPlainText(savedNote_);
            return true;
        default:
            return false;
        }
    }
    return true;
}

bool TransactionDetailPane::saveNote()
{
    if (!shown_)
        return false;
    const quint64 index = *shown_;
    try {
        CaseStore store(casePath_.toStdString(), CaseStore::Access::ReadWrite);
        // An ingest holds the write lock for its whole tape: refuse quickly rather than freeze.
        BusyTimeout quick(store.database(), 500);
        TransactionNotes(store.database(), tapeId_).set(index, transactionFlags().at(static_cast<std::size_t>(flag_->currentIndex())),
                                                        note_->toPlainText().toStdString());
    } catch (const DatabaseError& error) {
        saveProblem_ = error.busy() ? tr("The note on transaction %1 was not saved: the case is being written (an ingest?); save again when "
                                         "it has finished.")
                                          .arg(index)
                                    : tr("The note on transaction %1 was not saved: %2").arg(index).arg(QString::fromUtf8(error.what()));
        Q_EMIT problem(saveProblem_);
        return false;
    } catch (const std::exception& error) {
        saveProblem_ = tr("The note on transaction %1 was not saved: %2").arg(index).arg(QString::fromUtf8(error.what()));
        Q_EMIT problem(saveProblem_);
        return false;
    }
    Q_EMIT noteSaved(index);
    reload();
    return true;
}

void TransactionDetailPane::clearElements(const QString& why)
{
    if (job_ && job_->isRunning())
        job_->cancel();  // it compares a transaction no longer shown
    comparison_.reset();
    const QSignalBlocker blocker(elementTensor_);
    elementTensor_->clear();
    elementTensor_->setEnabled(false);
    worst_->setRowCount(0);
    chart_->clear();
    elementInfo_->setText(why);
    compare_->setEnabled(shownHasDeltas_ && !(job_ && job_->isRunning()));
}

bool TransactionDetailPane::compareElements()
{
    if (!shown_ || !shownHasDeltas_) {
        Q_EMIT problem(tr("Compare Elements needs a transaction whose record carries its deltas."));
        return false;
    }
    if (job_ && job_->isRunning()) {
        Q_EMIT problem(tr("An element comparison is running already; cancel it first."));
        return false;
    }
    clearElements(QString());
    const quint64 index = *shown_;
    ElementComparisonRequest request;
    request.tapeId = tapeId_;
    request.index = index;
    request.device = device_.toStdString();
    const std::string casePath = casePath_.toStdString();
    auto result = std::make_shared<ElementComparison>();
    delete job_;
    job_ = new BackgroundJob(tr("Comparing the elements of transaction %1 on %2").arg(index).arg(device_), Interruption::Cancel,
                             [casePath, request, result](ProgressSink& progress) mutable {
                                 CaseStore store(casePath, CaseStore::Access::ReadOnly);
                                 request.progress = &progress;
                                 *result = compareTransactionElements(store, request);
                                 return QObject::tr("Transaction %1 replayed once more: %n delta(s) compared element by element", nullptr,
                                                    static_cast<int>(result->deltas.size()))
                                     .arg(request.index);
                             },
                             this);
    connect(job_, &BackgroundJob::finished, this, [this, index, result](bool ok, const QString& message) {
        compare_->setEnabled(shownHasDeltas_);
        if (ok && shown_ && *shown_ == index) {
            comparison_ = result;
            QStringList lines;
            lines << tr("Replayed on %1: %2.").arg(QString::fromStdString(result->device), verdictText(result->verdict));
            if (!result->omitted.empty())
                lines << QString::fromStdString(result->omitted);
            elementInfo_->setText(lines.join(QLatin1Char(' ')));
            const QSignalBlocker blocker(elementTensor_);
            elementTensor_->clear();
            int worstTensor = 0;
            double worstUlp = -1;
            for (std::size_t i = 0; i < result->deltas.size(); ++i) {
                const ElementTensor& t = result->deltas[i];
                elementTensor_->addItem(QStringLiteral("%1 (%2, max ULP %3)")
                                            .arg(text(t.tensor), verdictText(t.comparison.verdict), number(t.comparison.metrics.maxUlp, 6)));
                if (t.comparison.metrics.maxUlp > worstUlp) {
                    worstUlp = t.comparison.metrics.maxUlp;
                    worstTensor = static_cast<int>(i);
                }
            }
            elementTensor_->setEnabled(!result->deltas.empty());
            elementTensor_->setCurrentIndex(worstTensor);  // the worst delta first
            showElementTensor(worstTensor);
        } else if (!ok && shown_ && *shown_ == index) {
            elementInfo_->setText(message);
            Q_EMIT problem(message);
        }
        Q_EMIT elementComparisonFinished(ok, message);
    });
    progress_->follow(job_);
    compare_->setEnabled(false);
    job_->start();
    return true;
}

void TransactionDetailPane::showElementTensor(int which)
{
    worst_->setRowCount(0);
    if (!comparison_ || which < 0 || which >= static_cast<int>(comparison_->deltas.size())) {
        chart_->clear();
        return;
    }
    const ElementTensor& t = comparison_->deltas[static_cast<std::size_t>(which)];
    chart_->setTensor(text(t.tensor), t.shape, t.recorded, t.replayed);
    worst_->setRowCount(static_cast<int>(t.worst.size()));
    for (int row = 0; row < static_cast<int>(t.worst.size()); ++row) {
        const WorstElement& e = t.worst[static_cast<std::size_t>(row)];
        QStringList position;
        for (std::int64_t p : e.position)
            position << QString::number(p);
        const QStringList cells = {QStringLiteral("%1 [%2]").arg(e.flatIndex).arg(position.join(QStringLiteral(", "))),
                                   QString::number(e.recorded, 'g', 9), QString::number(e.replayed, 'g', 9),
                                   QString::number(e.absDifference, 'g', 6), QString::number(e.ulp, 'g', 17)};
        for (int column = 0; column < cells.size(); ++column)
            worst_->setItem(row, column, new QTableWidgetItem(cells[column]));
    }
    if (t.worst.empty())
        worst_->setToolTip(tr("Every element of %1 reproduced bit for bit.").arg(text(t.tensor)));
}

DivergenceExplanationView* TransactionDetailPane::explanationView() const { return explanationView_; }

void TransactionDetailPane::askSidesAndExplain()
{
    // Against the workstation's replay device when it is another; else another thread count.
    const QString other = device_ == QStringLiteral("cpu") ? QStringLiteral("cpu@threads=2") : device_;
    bool ok = false;
    const QString devices = QInputDialog::getText(
        this, tr("Explain Divergence"),
        tr("The two sides to replay transaction %1 on, as A,B: cpu, cuda:N, or cpu with @threads=N or @kernels=host").arg(shown_ ? *shown_ : 0),
        QLineEdit::Normal, QStringLiteral("cpu,") + other, &ok);
    if (ok)
        explainDivergence(devices);
}

bool TransactionDetailPane::explainDivergence(const QString& devices)
{
    if (!shown_) {
        Q_EMIT problem(tr("Explain Divergence needs a transaction: select one in the table."));
        return false;
    }
    if (explainJob_ && explainJob_->isRunning()) {
        Q_EMIT problem(tr("An explanation is running already; cancel it first."));
        return false;
    }
    ExplainRequest request;
    try {
        const auto [a, b] = ExplainSide::parsePair(devices.trimmed().toStdString());
        request.sides[0] = a;
        request.sides[1] = b;
    } catch (const Error& error) {
        Q_EMIT problem(QString::fromUtf8(error.what()));
        return false;
    }
    const quint64 index = *shown_;
    request.tapeId = tapeId_;
    request.index = index;
    const std::string casePath = casePath_.toStdString();
    auto result = std::make_shared<DivergenceExplanation>();
    delete explainJob_;
    explainJob_ = new BackgroundJob(tr("Explaining transaction %1 on %2").arg(index).arg(devices), Interruption::Cancel,
                                    [casePath, request, result](ProgressSink& progress) mutable {
                                        CaseStore store(casePath, CaseStore::Access::ReadOnly);
                                        request.progress = &progress;
                                        *result = zkdv::explainDivergence(store, request);
                                        if (result->first)
                                            return QObject::tr("Transaction %1: the first operator beyond rounding is %2")
                                                .arg(request.index)
                                                .arg(QString::fromStdString(result->nodes[*result->first].op));
                                        return result->diverged() ? QObject::tr("Transaction %1: the sides call different operators").arg(request.index)
                                                                  : QObject::tr("Transaction %1: no operator differs beyond rounding").arg(request.index);
                                    },
                                    this);
    connect(explainJob_, &BackgroundJob::finished, this, [this, result](bool ok, const QString& message) {
        explain_->setEnabled(shown_.has_value());
        if (ok) {
            if (explanationView_)
                explanationView_->window()->close();
            // A window of its own, not modal: the auditor compares it with the pane.
            auto* window = new QDialog(this);
            window->setAttribute(Qt::WA_DeleteOnClose);
            window->setWindowTitle(tr("Explain Divergence: transaction %1").arg(result->index));
            auto* layout = new QVBoxLayout(window);
            explanationView_ = new DivergenceExplanationView(*result, window);
            layout->addWidget(explanationView_, 1);
            auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, window);
            connect(buttons, &QDialogButtonBox::rejected, window, &QDialog::close);
            layout->addWidget(buttons);
            window->resize(900, 600);
            window->show();
        } else {
            Q_EMIT problem(message);
        }
        Q_EMIT divergenceExplained(ok, message);
    });
    explainProgress_->follow(explainJob_);
    explain_->setEnabled(false);
    explainJob_->start();
    return true;
}

}  // namespace zkdv::ui
