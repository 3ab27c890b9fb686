#include "case_jobs.h"

#include <QDir>
#include <QFileInfo>

#include <algorithm>
#include <climits>
#include <filesystem>

#include "background_job.h"
#include "zkdv/report/audit_attestation.h"
#include "zkdv/replay/planned_audit_request.h"
#include "zkdv/report/report_file.h"
#include "zkdv/report/transaction_table_csv.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/tape_location.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/signing_key.h"
#include "zkdv/workflow/replay_summary_text.h"
#include "zkdv/workflow/shard_merge.h"
#include "zkdv/workflow/tape_provenance.h"

namespace zkdv::ui {

BackgroundJob* ingestJob(const QString& casePath, const QStringList& files, bool allowIncomplete,
                         std::shared_ptr<std::vector<IngestedFile>> results)
{
    std::vector<std::string> paths;
    for (const QString& file : files)
        paths.push_back(file.toStdString());
    return new BackgroundJob(QObject::tr("Ingesting %n file(s)", nullptr, static_cast<int>(files.size())), Interruption::Cancel,
                             [casePath = casePath.toStdString(), paths, allowIncomplete, results](ProgressSink& progress) {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        IngestOptions options;
        options.progress = &progress;
        options.allowIncomplete = allowIncomplete;
        *results = ingestFiles(store, paths, options);
        QStringList done, failed;
        for (const IngestedFile& file : *results)
            (file.ok() ? done : failed) << QString::fromStdString(file.describe());
        if (!failed.isEmpty())
            throw Error((failed + done).join(QStringLiteral("; ")).toStdString());
        return done.join(QStringLiteral("; "));
    });
}

BackgroundJob* relocateTapeJob(const QString& casePath, qint64 tapeId, const QString& file)
{
    return new BackgroundJob(QObject::tr("Checking %1 against tape %2").arg(QFileInfo(file).fileName()).arg(tapeId), Interruption::Cancel,
                             [casePath = casePath.toStdString(), tapeId, file = file.toStdString()](ProgressSink& progress) {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        relocateTape(store, tapeId, file, &progress);
        return QObject::tr("Tape %1 is now read from %2: the same tape (chain head and size match).").arg(tapeId).arg(QString::fromStdString(file));
    });
}

BackgroundJob* tableCsvJob(const QString& casePath, qint64 tapeId, const TransactionTable::View& view, const QString& path)
{
    return new BackgroundJob(QObject::tr("Exporting the table to %1").arg(QFileInfo(path).fileName()), Interruption::Cancel,
                             [casePath = casePath.toStdString(), target = path.toStdString(), tapeId, view,
                              shown = QDir::toNativeSeparators(path)](ProgressSink& progress) {
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        TransactionTable table(store.database(), tapeId);
        table.setView(view);
        writeTransactionTableCsv(table, target, &progress);
        return QObject::tr("%n row(s) written to %1", nullptr, static_cast<int>(std::min<std::uint64_t>(table.rowCount(), INT_MAX))).arg(shown);
    });
}

BackgroundJob* signedVerdictJob(const QString& casePath, const ReportOptions& options, const QString& path)
{
    return new BackgroundJob(QObject::tr("Signing the verdict into %1").arg(QFileInfo(path).fileName()), Interruption::Cancel,
                             [casePath = casePath.toStdString(), options, target = path.toStdString(),
                              shown = QDir::toNativeSeparators(path)](ProgressSink&) {
        AuditorKey::loadOrCreate();  // makes the key on first use, and refuses a key file others may read
        const SigningKey key = SigningKey::fromPemFile(AuditorKey::defaultFile());
        CaseStore store(casePath, CaseStore::Access::ReadOnly);
        const ReportData report = buildAuditReport(store, options);
        writeReportFile(target, toJsonText(signAuditAttestation(report, key), 2) + "\n");
        return QObject::tr("Verdict %1 of replay run %2 signed with your key %3 into %4")
            .arg(QString::fromStdString(std::string(auditOutcomeName(report.outcome))))
            .arg(report.runId)
            .arg(QString::fromStdString(key.publicKey().keyId().substr(0, 16)), shown);
    });
}

BackgroundJob* datasetCheckJob(const QString& casePath, qint64 tapeId, const QString& commitment, const QString& folder)
{
    return new BackgroundJob(QObject::tr("Checking %1 against its data").arg(QFileInfo(commitment).fileName()), Interruption::Cancel,
                             [casePath = casePath.toStdString(), tapeId, commitment = commitment.toStdString(),
                              folder = folder.isEmpty() ? std::optional<std::string>() : std::optional<std::string>(folder.toStdString())](ProgressSink& progress) {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        return QObject::tr("Tape %1: %2").arg(tapeId).arg(QString::fromStdString(provenanceCheckText(checkTapeDataset(store, tapeId, commitment, folder, &progress))));
    });
}

BackgroundJob* weightMatchJob(const QString& casePath, qint64 tapeId, const QString& model, ProvenanceKind kind)
{
    return new BackgroundJob(QObject::tr("Matching %1 with tape %2").arg(QFileInfo(model).fileName()).arg(tapeId), Interruption::Cancel,
                             [casePath = casePath.toStdString(), tapeId, model = model.toStdString(), kind](ProgressSink& progress) {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        return QObject::tr("Tape %1: %2").arg(tapeId).arg(QString::fromStdString(provenanceCheckText(checkTapeWeights(store, tapeId, model, kind, &progress))));
    });
}

BackgroundJob* mergeShardsJob(const QString& casePath, const QStringList& shardFiles)
{
    std::vector<std::string> files;
    for (const QString& file : shardFiles)
        files.push_back(file.toStdString());
    return new BackgroundJob(QObject::tr("Merging %n shard case(s)", nullptr, static_cast<int>(files.size())), Interruption::Cancel,
                             [casePath = casePath.toStdString(), files](ProgressSink& progress) {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        // Held to the audit planned in the case (Replay > Export Cluster Job… records it).
        const ShardMergeResult result = mergeShards(store, files, {}, &progress);
        const StoredReplayRun& run = result.run;
        QString text = QObject::tr("Run %1 merged from %2 shards of %3 (seed %4): %5 replayed, %6 diverged, %7 unverifiable — %8")
                           .arg(run.id)
                           .arg(result.shards.size())
                           .arg(QString::fromStdString(run.selection))
                           .arg(run.seed)
                           .arg(run.replayed)
                           .arg(run.diverged)
                           .arg(run.unverifiable)
                           .arg(result.bitForBit() ? QObject::tr("passed")
                                : result.passed() ? QObject::tr("consistent within rounding")
                                                  : QObject::tr("FAILED"));
        if (!result.sealProblem.empty())
            text += QObject::tr(" (stored unsigned: %1)").arg(QString::fromStdString(result.sealProblem));
        return text;
    });
}

BackgroundJob* clusterJobExportJob(const QString& casePath, ClusterJob job, bool kubernetes, const QString& path)
{
    return new BackgroundJob(QObject::tr("Writing the cluster job %1").arg(QFileInfo(path).fileName()), Interruption::Cancel,
                             [casePath = casePath.toStdString(), job, kubernetes, target = path.toStdString(),
                              shown = QDir::toNativeSeparators(path)](ProgressSink&) mutable {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        ReplayRequest request;
        request.selection = SelectionSpec::parse(job.selection);
        request.seed = job.seed;
        request.tapeId = job.tapeId;
        const ShardedReplay sharded = planShardedReplay(store, request, job.shards);
        job.selection = request.selection.toString();
        if (store.tapes().size() > 1)
            job.tapeId = sharded.tapeId;
        const auto jobText = [&] { return kubernetes ? kubernetesIndexedJob(job) : slurmArrayScript(job); };
        jobText();  // refuses an unsafe value before the audit is recorded
        // The merge takes only shards of the audit recorded here.
        job.plannedAuditId = recordPlannedAudit(store, request, job.shards).id;
        std::uint64_t busiest = 0;
        for (const ReplayShard& shard : sharded.shards.shards)
            busiest = std::max(busiest, shard.transactions);
        const std::string text = jobText();
        if (!kubernetes)
            std::filesystem::create_directories(job.folder.empty() ? defaultShardFolder(job.casePath, job.seed, job.shards) : job.folder);
        writeReportFile(target, text);
        return QObject::tr("%1 for %2 shards of %3 (%4 transactions, at most %5 per shard) written to %6; %7")
            .arg(kubernetes ? QObject::tr("Kubernetes Indexed Job") : QObject::tr("Slurm array script"))
            .arg(job.shards)
            .arg(QString::fromStdString(job.selection))
            .arg(sharded.plan.replayedTransactions())
            .arg(busiest)
            .arg(shown)
            .arg(kubernetes ? QObject::tr("apply it with kubectl apply -f, then merge as its first lines say")
                            : QObject::tr("submit it with sbatch"));
    });
}

BackgroundJob* replayJob(const QString& casePath, ReplayRequest request, const QString& title)
{
    return new BackgroundJob(title, Interruption::Stop, [casePath = casePath.toStdString(), request](ProgressSink& progress) mutable {
        CaseStore store(casePath, CaseStore::Access::ReadWrite);
        request.progress = &progress;
        const ReplaySummary summary = runReplay(store, request);
        QString text = QString::fromStdString(replaySummaryHeadline(summary));
        const std::vector<std::string> details = replaySummaryDetails(summary);
        // The counts, then the first reason: the rest is in the run's rows and its report.
        for (std::size_t i = 0; i < std::min<std::size_t>(details.size(), 2); ++i)
            text += QStringLiteral(" — ") + QString::fromStdString(details[i]);
        return text;
    });
}

}  // namespace zkdv::ui
