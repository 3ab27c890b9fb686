#include "zkdv/workflow/tape_provenance.h"

#include <filesystem>
#include <memory>
#include <vector>

#include "zkdv/provenance/dataset_commitment_file.h"
#include "zkdv/provenance/dataset_files.h"
#include "zkdv/provenance/model_checkpoint.h"
#include "zkdv/provenance/weight_match.h"
#include "zkdv/store/case_store.h"
#include "zkdv/tape/batch_sample_check.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/util/error.h"

namespace zkdv {

namespace {

// Names listed in a detail before "and N more": a line, not a report.
constexpr std::size_t kNamesShown = 3;

std::string namesText(const std::vector<std::string>& names)
{
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < kNamesShown; ++i)
        text += (i ? ", " : "") + names[i];
    if (names.size() > kNamesShown)
        text += " and " + std::to_string(names.size() - kNamesShown) + " more";
    return text;
}

// The details of a commitment checked against itself alone, which vouches for no data.
constexpr char kDataNotChecked[] = "; the data itself was not checked";
constexpr char kBatchesNotBound[] = "; the tape's batches are not bound to it";

std::string countText(std::size_t count, const char* one, const char* many)
{
    return std::to_string(count) + " " + (count == 1 ? one : many);
}

// The SHA-256 of the file at `path` through the dataset hasher (the one way files are hashed,
// with progress and cancel), or "" for a folder.
std::string fileSha256(const std::string& path, ProgressSink* progress)
{
    std::error_code error;
    if (std::filesystem::is_directory(path, error))
        return {};
    const std::vector<CommittedFile> hashed = hashDatasetFiles({DatasetFile{path, path, 0}}, progress, 1);
    return toHex(hashed.front().sha256);
}

CaseTape requireTape(CaseStore& store, std::int64_t tapeId)
{
    std::optional<CaseTape> tape = store.tape(tapeId);
    if (!tape)
        throw Error("case " + store.path() + " has no tape " + std::to_string(tapeId));
    return *tape;
}

}  // namespace

ProvenanceCheck checkTapeDataset(CaseStore& store, std::int64_t tapeId, const std::string& commitment, const std::optional<std::string>& folder,
                                 ProgressSink* progress)
{
    const CaseTape tape = requireTape(store, tapeId);
    // A tape of format 1.12 may bind its batches to a commitment of samples: the one checked
    // must be that one (its root the tape's), or the link is to other data.
    std::optional<DatasetDeclaration> bound;
    try {
        bound = RootRecord::parse(ByteSpan(std::string_view(tape.rootJson))).dataset;
    } catch (const std::exception&) {
        bound.reset();  // a root the case could not read names no dataset
    }
    ProvenanceCheck check;
    check.kind = ProvenanceKind::Dataset;
    check.path = commitment;
    check.sha256 = fileSha256(commitment, progress);
    const DatasetVerification verification = verifyDataset(commitment, folder, false, progress);
    check.ok = verification.ok();
    const std::size_t files = verification.commitment.files.size();
    const bool samples = verification.commitment.unit == DatasetCommitment::kSampleUnit;
    const std::optional<std::string> mismatch =
        bound && verification.rootMatches() ? declarationMismatch(*bound, verification.treeRoot, files) : std::nullopt;
    if (mismatch) {
        check.ok = false;
        check.detail = *mismatch;
    } else if (bound && verification.rootMatches()) {
        check.detail = "the tape's batches are bound to its " + countText(files, "sample", "samples") + ", every row of which verify and ingest check" +
                       (bound->countCommitted() ? std::string()
                                                : std::string(" (a sha256-merkle-v1 binding, format 1.12 or 1.13: the tape's count is its "
                                                              "claim, here equal to the document's)"));
    } else if (!verification.rootMatches()) {
        check.detail = "its root is not the one its " + countText(files, "file gives", "files give") + " (the commitment was edited)";
    } else if (!folder) {
        check.detail = "its root matches its " + countText(files, samples ? "sample" : "file", samples ? "samples" : "files") +
                       (samples ? kBatchesNotBound : kDataNotChecked);
    } else if (check.ok) {
        check.detail = "all " + countText(files, "file", "files") + " in " + *folder + " as committed";
    } else {
        std::vector<std::string> names;
        for (const DatasetDifference& difference : verification.folder->differences)
            names.push_back(difference.path + " (" + std::string(datasetFindingName(difference.finding)) + ")");
        check.detail = countText(names.size(), "file differs", "files differ") + " in " + *folder + ": " + namesText(names);
    }
    return ProvenanceChecks(store.database(), tapeId).add(check);
}

ProvenanceCheck checkTapeWeights(CaseStore& store, std::int64_t tapeId, const std::string& model, ProvenanceKind kind, ProgressSink* progress)
{
    if (kind == ProvenanceKind::Dataset)
        throw Error("a dataset is checked against its commitment, not matched as weights");
    const CaseTape tape = requireTape(store, tapeId);
    ProvenanceCheck check;
    check.kind = kind;
    check.path = model;
    const std::unique_ptr<ModelCheckpoint> checkpoint = ModelCheckpoint::open(model);
    check.sha256 = fileSha256(model, progress);
    WeightMatchRequest request;
    request.final = kind == ProvenanceKind::FinalModel;
    request.progress = progress;
    const WeightMatch match = matchWeights(tape.path, *checkpoint, request);
    check.ok = match.equal();
    if (check.ok) {
        check.detail = "all " + countText(match.tensors.size(), "tensor", "tensors") + " equal, bit for bit";
    } else if (match.failing() == 0) {
        check.detail = "the values differ from the state digest the last transaction recorded";
    } else {
        std::vector<std::string> names;
        for (const WeightComparison& comparison : match.tensors)
            if (comparison.fails)
                names.push_back(comparison.modelName.empty() ? comparison.tapeName : comparison.modelName);
        check.detail = countText(names.size(), "tensor differs", "tensors differ") + ": " + namesText(names);
    }
    return ProvenanceChecks(store.database(), tapeId).add(check);
}

std::string provenanceKindLabel(ProvenanceKind kind)
{
    switch (kind) {
    case ProvenanceKind::StartCheckpoint: return "Start checkpoint";
    case ProvenanceKind::FinalModel: return "Final model";
    case ProvenanceKind::Dataset: break;
    }
    return "Dataset";
}

std::string provenanceCheckText(const std::optional<ProvenanceCheck>& check)
{
    if (!check)
        return "not checked";
    const char* subject = check->kind == ProvenanceKind::Dataset           ? "Dataset"
                          : check->kind == ProvenanceKind::StartCheckpoint ? "Snapshot 0"
                                                                            : "Final state";
    const std::string name = std::filesystem::path(check->path).filename().string();
    // A commitment checked against itself alone vouches for no data: it is "intact", not a match.
    const bool matches = check->kind != ProvenanceKind::Dataset || (check->detail.find(kDataNotChecked) == std::string::npos &&
                                                                     check->detail.find(kBatchesNotBound) == std::string::npos);
    std::string text = check->ok ? std::string(subject) + (matches ? " matches " : " commitment intact: ") + (name.empty() ? check->path : name)
                                 : std::string(subject) + " differs from " + (name.empty() ? check->path : name);
    if (!check->sha256.empty())
        text += " (sha256 " + check->sha256.substr(0, 8) + "…)";
    if (!check->detail.empty())
        text += ": " + check->detail;
    return text;
}

}  // namespace zkdv
