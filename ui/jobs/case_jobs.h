#pragma once
// The work the workstation does on a case in the background, as jobs for a JobRunner: each
// opens the case on its own thread and returns the line the status bar shows.

#include <QString>
#include <QStringList>

#include <memory>
#include <vector>

#include "zkdv/replay/replay_runner.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/provenance_checks.h"
#include "zkdv/store/transaction_table.h"
#include "zkdv/workflow/cluster_job.h"
#include "zkdv/workflow/file_ingest.h"

namespace zkdv::ui {

class BackgroundJob;

// Ingests `files` (tapes first); `results` gets every file's result for the GUI thread to read
// once the job has finished. Fails, naming every file, when one could not be ingested.
BackgroundJob* ingestJob(const QString& casePath, const QStringList& files, bool allowIncomplete,
                         std::shared_ptr<std::vector<IngestedFile>> results);
// Points tape `tapeId` at `file` when it is the same tape (chain head and size).
BackgroundJob* relocateTapeJob(const QString& casePath, qint64 tapeId, const QString& file);
// Writes every row of the tape's table as `view` shows it to `path` as CSV.
BackgroundJob* tableCsvJob(const QString& casePath, qint64 tapeId, const TransactionTable::View& view, const QString& path);
// Writes the verdict of the report `options` name, signed with the auditor's own key (made on
// first use, as for run seals), to `path` as a Sigstore bundle (docs/signing.md).
BackgroundJob* signedVerdictJob(const QString& casePath, const ReportOptions& options, const QString& path);
// Checks the dataset commitment `commitment` and, unless `folder` is empty, the data there,
// for tape `tapeId`, and stores the outcome in the case (zkdv/workflow/tape_provenance.h).
BackgroundJob* datasetCheckJob(const QString& casePath, qint64 tapeId, const QString& commitment, const QString& folder);
// Matches the model at `model` (a .safetensors file or a folder of shards) with tape
// `tapeId`'s snapshot 0 (StartCheckpoint) or final state (FinalModel) and stores the outcome.
BackgroundJob* weightMatchJob(const QString& casePath, qint64 tapeId, const QString& model, ProvenanceKind kind);
// Merges the shard cases `shardFiles` into the case as one run (zkdv/workflow/shard_merge.h):
// fails, naming the shard and why, when one is refused; the case is then unchanged.
BackgroundJob* mergeShardsJob(const QString& casePath, const QStringList& shardFiles);
// Writes `job` (casePath and auditExecutable filled) to `path` as a Slurm array script, or a
// Kubernetes Indexed Job manifest when `kubernetes`, after planning it from the case (a bad
// selection, seed or shard count fails here, not on the cluster); for Slurm it makes the
// shard folder the script's logs go to.
BackgroundJob* clusterJobExportJob(const QString& casePath, ClusterJob job, bool kubernetes, const QString& path);
// Runs `request` (a replay run stored in the case) and sums it up in one line.
BackgroundJob* replayJob(const QString& casePath, ReplayRequest request, const QString& title);

}  // namespace zkdv::ui
