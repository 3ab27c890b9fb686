#include "widgets/case_overview.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QColor>
#include <QHeaderView>
#include <QSet>
#include <QStandardItemModel>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>

#include "zkdv/store/case_store.h"
#include "zkdv/store/provenance_checks.h"
#include "zkdv/store/tape_seal.h"
#include "zkdv/workflow/tape_provenance.h"
#include "zkdv/util/trainer_keyring.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/schedule_statement.h"
#include "zkdv/tape/shape_text.h"

namespace zkdv::ui {

namespace {

// What Copy takes from a value cell: the value itself (a digest, a path), not the words
// around it in the cell.
constexpr int kCopyRole = Qt::UserRole + 2;

QStandardItem* add(QStandardItem* parent, const QString& key, const QString& value, const QString& copyText = QString())
{
    auto* keyItem = new QStandardItem(key);
    auto* valueItem = new QStandardItem(value);
    keyItem->setEditable(false);
    valueItem->setEditable(false);
    valueItem->setToolTip(value);
    valueItem->setData(copyText.isEmpty() ? value : copyText, kCopyRole);
    parent->appendRow({keyItem, valueItem});
    return keyItem;
}

// An item's place in the tree as the labels of its first column from the top: what stays the
// same when the tree is built again from the same case.
QString pathOf(const QModelIndex& index)
{
    QStringList labels;
    for (QModelIndex at = index.siblingAtColumn(0); at.isValid(); at = at.parent())
        labels.prepend(at.data().toString());
    return labels.join(QChar(0x1f));
}

}  // namespace

CaseOverview::CaseOverview(QWidget* parent) : QTreeView(parent), model_(new QStandardItemModel(this))
{
    model_->setHorizontalHeaderLabels({tr("Case"), tr("Value")});
    setModel(model_);
    header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    setAlternatingRowColors(true);
    setEditTriggers(QAbstractItemView::NoEditTriggers);
    setSelectionMode(QAbstractItemView::ExtendedSelection);
    setContextMenuPolicy(Qt::ActionsContextMenu);
    // The keys are the window's Edit > Copy (rows) and Copy Value: one action per key.
    auto* copyRows = new QAction(tr("&Copy Rows"), this);
    connect(copyRows, &QAction::triggered, this, [this] { QApplication::clipboard()->setText(copyText(true)); });
    auto* copyValue = new QAction(tr("Copy &Value"), this);
    connect(copyValue, &QAction::triggered, this, [this] { QApplication::clipboard()->setText(copyText(false)); });
    addActions({copyRows, copyValue});
    connect(selectionModel(), &QItemSelectionModel::currentChanged, this, [this](const QModelIndex& current) {
        QModelIndex top = current.siblingAtColumn(0);
        while (top.parent().isValid())
            top = top.parent();
        const qint64 tape = top.isValid() ? top.data(Qt::UserRole).toLongLong() : 0;
        if (tape != 0 && tape != currentTape_) {
            currentTape_ = tape;
            Q_EMIT tapeChosen(tape);
        }
    });
}

int CaseOverview::tapeCount() const { return model_->rowCount(); }

void CaseOverview::chooseTape(qint64 tapeId)
{
    for (int row = 0; row < model_->rowCount(); ++row) {
        if (model_->item(row)->data(Qt::UserRole).toLongLong() != tapeId)
            continue;
        currentTape_ = tapeId;  // first: the selection's signal then sees no change
        selectionModel()->setCurrentIndex(model_->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        return;
    }
}

QString CaseOverview::copyText(bool wholeRows) const
{
    QStringList lines;
    QModelIndexList rows = selectionModel()->selectedRows(0);
    if (rows.isEmpty() && currentIndex().isValid())
        rows << currentIndex().siblingAtColumn(0);
    std::sort(rows.begin(), rows.end(), [this](const QModelIndex& a, const QModelIndex& b) { return visualRect(a).top() < visualRect(b).top(); });
    for (const QModelIndex& row : rows) {
        const QModelIndex value = row.siblingAtColumn(1);
        const QString copied = value.data(kCopyRole).toString();
        lines << (wholeRows ? row.data().toString() + QLatin1Char('\t') + value.data().toString() : copied);
    }
    return lines.join(QLatin1Char('\n'));
}

bool CaseOverview::showCase(const QString& casePath)
{
    const qint64 previous = currentTape_;
    // Shown again (an ingest, a replay ending): the tree keeps what the user expanded and
    // collapsed. Another case starts with its tapes expanded.
    std::optional<QSet<QString>> expanded;
    if (casePath == shownCase_) {
        expanded.emplace();
        std::function<void(const QModelIndex&)> collect = [&](const QModelIndex& parent) {
            for (int row = 0; row < model_->rowCount(parent); ++row) {
                const QModelIndex index = model_->index(row, 0, parent);
                if (isExpanded(index))
                    expanded->insert(pathOf(index));
                collect(index);
            }
        };
        collect(QModelIndex());
        knownTapes_.clear();
        for (int row = 0; row < model_->rowCount(); ++row)
            knownTapes_.insert(model_->item(row)->data(Qt::UserRole).toLongLong());
    } else {
        knownTapes_.clear();
    }
    shownCase_ = casePath;
    model_->removeRows(0, model_->rowCount());
    currentTape_ = 0;
    if (casePath.isEmpty())
        return true;
    std::vector<CaseTape> tapes;
    // Per tape, the newest check of each kind (provenanceKinds() order).
    std::map<qint64, std::vector<std::optional<ProvenanceCheck>>> checks;
    // Per tape, whether its rows are what its ingest sealed (zkdv/store/tape_seal.h): what the
    // overview shows of a tape is a fact only then.
    std::map<qint64, TapeSealCheck> seals;
    try {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadOnly);
        tapes = store.tapes();
        const std::optional<PublicKey> ownKey = AuditorKey::existingPublicKey();
        const std::vector<TrustedKey> trusted = readTrustedKeys();
        for (const CaseTape& tape : tapes)
            seals[tape.id] = checkTapeSeal(store.database(), tape.id, ownKey, trusted);
        for (const CaseTape& tape : tapes) {
            ProvenanceChecks stored(store.database(), tape.id);
            for (ProvenanceKind kind : provenanceKinds())
                checks[tape.id].push_back(stored.latest(kind));
        }
    } catch (const std::exception& error) {
        Q_EMIT problem(QString::fromStdString(error.what()));
        return false;
    }
    // Trust in a signer is this auditor's: their trainer keyring, read as the case is shown.
    TrainerKeyring keyring;
    try {
        keyring = TrainerKeyring::load({});
    } catch (const std::exception& error) {
        Q_EMIT problem(tr("The trainer keyring could not be read, so no tape signer is trusted: %1").arg(QString::fromStdString(error.what())));
    }
    for (const CaseTape& tape : tapes) {
        QStandardItem* top = add(model_->invisibleRootItem(), tr("Tape %1").arg(tape.id), QString::fromStdString(tape.path));
        top->setData(QVariant::fromValue<qint64>(tape.id), Qt::UserRole);
        add(top, tr("Status"), tr("%1, %2 transactions, %3 snapshots")
                                   .arg(QString::fromStdString(tape.status))
                                   .arg(tape.transactionCount)
                                   .arg(tape.snapshotCount));
        add(top, tr("Chain head"), QString::fromStdString(tape.chainHead));
        if (const auto seal = seals.find(tape.id); seal != seals.end()) {
            QStandardItem* rows = add(top, tr("Case rows"),
                                      seal->second.vouched() ? tr("sealed at ingest by %1, unchanged").arg(QString::fromStdString(seal->second.signer))
                                                             : tr("NOT VOUCHED: %1").arg(QString::fromStdString(seal->second.explanation)));
            rows->setForeground(seal->second.vouched() ? QColor(0x1b, 0x7a, 0x2e) : QColor(0xb0, 0x00, 0x20));
        }
        if (tape.link.status != TapeLinkStatus::StartsRun) {
            // A run resumed from checkpoints spans tapes: where this one stands in it.
            const quint64 first = tape.transactionsBefore, last = first + std::max<quint64>(tape.transactionCount, 1) - 1;
            QStandardItem* run = add(top, tr("Resumed run"),
                                     tr("transactions %L1–%L2 of the run; %3").arg(first).arg(last).arg(QString::fromStdString(tape.link.describe())));
            // A broken link, and a fork (the same tape continued twice), are findings.
            if (tape.link.status == TapeLinkStatus::Broken || !tape.link.forkedWith.empty())
                run->setForeground(QColor(0xb0, 0x00, 0x20));
        }
        add(top, tr("File SHA-256"), tape.fileSha256.empty() ? tr("not computed (zkdv-audit ingest --sha256)")
                                                             : QString::fromStdString(tape.fileSha256));
        add(top, tr("Program"),
            tr("%1 %2 — %3")
                .arg(QString::fromStdString(tape.programKind), QString::fromStdString(tape.programSha256),
                     tape.programPresent ? tr("present, digest matches") : tr("missing: drop the program file here")),
            QString::fromStdString(tape.programSha256));
        const TrainerKeyring::Entry* trusted = tape.isSigned() ? keyring.find(tape.signerKeyId) : nullptr;
        // A keyring that holds keys expects signatures: a stripped one is as red as a forger's.
        const bool expected = !tape.isSigned() && keyring.trustOf(std::nullopt) == SignatureTrust::UnsignedExpected;
        QStandardItem* signer = add(top, tr("Signed by"),
                                    expected ? tr("not signed, though your trainer keyring (%1) expects a signature: a signature can be stripped")
                                                   .arg(QString::fromStdString(TrainerKeyring::userFolder().string()))
                                    : !tape.isSigned() ? tr("not signed")
                                    : trusted ? tr("a trusted trainer key (%1): %2 key %3")
                                                    .arg(QString::fromStdString(trusted->file.filename().string()),
                                                         QString::fromStdString(tape.signerAlgorithm), QString::fromStdString(tape.signerKeyId))
                                              : tr("a key not in your trainer keyring (%1): %2 key %3")
                                                    .arg(QString::fromStdString(TrainerKeyring::userFolder().string()),
                                                         QString::fromStdString(tape.signerAlgorithm), QString::fromStdString(tape.signerKeyId)),
                                    QString::fromStdString(tape.signerKeyId));
        if (tape.isSigned() || expected)
            signer->setForeground(trusted ? QColor(0x1b, 0x7a, 0x2e) : QColor(0xb0, 0x00, 0x20));
        // The tape's links to the world, as the auditor last checked them (Tools menu).
        for (std::size_t k = 0; k < provenanceKinds().size(); ++k) {
            const std::optional<ProvenanceCheck>& check = checks[tape.id][k];
            QStandardItem* link = add(top, QString::fromStdString(provenanceKindLabel(provenanceKinds()[k])),
                                      QString::fromStdString(provenanceCheckText(check)));
            QStandardItem* value = top->child(link->row(), 1);
            value->setForeground(!check ? QColor(0x70, 0x70, 0x70) : check->ok ? QColor(0x1b, 0x7a, 0x2e) : QColor(0xb0, 0x00, 0x20));
            if (check)
                value->setToolTip(tr("%1\n%2\nchecked %3").arg(value->text(), QString::fromStdString(check->path), QString::fromStdString(check->checkedAt)));
        }
        add(top, tr("Producer"), QString::fromStdString(tape.producer));
        try {
            const RootRecord root = RootRecord::parse(ByteSpan(std::string_view(tape.rootJson)));
            auto* model = add(top, tr("Model"), tr("%1 parameters, %2 buffers").arg(root.parameters.size()).arg(root.buffers.size()));
            for (const TensorSpec& spec : root.parameters)
                add(model, QString::fromStdString(spec.name), QString::fromStdString(std::string(dtypeName(spec.dtype))) + QLatin1Char(' ') + QString::fromStdString(shapeText(spec.shape)));
            for (const TensorSpec& spec : root.buffers)
                add(model, QString::fromStdString(spec.name), tr("buffer ") + QString::fromStdString(std::string(dtypeName(spec.dtype))) + QLatin1Char(' ') + QString::fromStdString(shapeText(spec.shape)));
            auto* optimizer = add(top, tr("Optimizer"), QString::fromStdString(root.optimizerContract));
            for (std::size_t g = 0; g < root.optimizerGroups.size(); ++g)
                add(optimizer, tr("Group %1 (%2 parameters)").arg(g).arg(root.optimizerGroups[g].parameters.size()),
                    QString::fromStdString(root.optimizerGroups[g].optionsJson));
            add(optimizer, tr("Schedule"), QString::fromStdString(scheduleStatement(root)));
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
        if (!expanded || !knownTapes_.contains(tape.id))
            setExpanded(top->index(), true);  // a tape not shown before opens expanded
        if (tape.id == previous || currentTape_ == 0)
            currentTape_ = tape.id;
    }
    if (expanded) {
        std::function<void(const QModelIndex&)> restore = [&](const QModelIndex& parent) {
            for (int row = 0; row < model_->rowCount(parent); ++row) {
                const QModelIndex index = model_->index(row, 0, parent);
                const qint64 tape = parent.isValid() ? 0 : index.data(Qt::UserRole).toLongLong();
                if (parent.isValid() || knownTapes_.contains(tape))
                    setExpanded(index, expanded->contains(pathOf(index)));
                restore(index);
            }
        };
        restore(QModelIndex());
    }
    for (int row = 0; row < model_->rowCount(); ++row)
        if (model_->item(row)->data(Qt::UserRole).toLongLong() == currentTape_)
            selectionModel()->select(model_->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    return true;
}

}  // namespace zkdv::ui
