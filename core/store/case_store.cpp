#include "zkdv/store/case_store.h"

#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "zkdv/store/case_schema.h"
#include "zkdv/store/database.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

namespace {

std::string utcNow()
{
    std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm parts{};
    gmtime_r(&now, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

std::string shapeJson(const std::vector<std::int64_t>& shape) { return nlohmann::json(shape).dump(); }

std::string absolutePath(const std::string& path)
{
    std::error_code error;
    auto absolute = std::filesystem::absolute(path, error);
    return error ? path : absolute.lexically_normal().string();
}

ByteSpan digestBytes(const Digest& digest) { return ByteSpan(digest.data(), digest.size()); }

// Writes each verified record into the case as the scanner hands it over.
class IngestVisitor : public TapeVisitor {
public:
    IngestVisitor(Database& db, const std::string& tapePath, const IngestOptions& options)
        : db_(db), tapePath_(tapePath), options_(options),
          insertTransaction_(db.prepare(
              "INSERT INTO transactions(tape_id, idx, segment, loss, lr, update_norm, max_update, fingerprints, has_deltas,"
              " has_state_digest, state_digest, wall_time_ns, record_index, record_offset, record_length, record_digest)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)")),
          insertSnapshot_(db.prepare(
              "INSERT INTO snapshots(tape_id, before_transaction, record_index, record_offset, record_length, record_digest)"
              " VALUES(?1, ?2, ?3, ?4, ?5, ?6)")),
          insertPayload_(db.prepare("INSERT INTO payloads(tape_id, record_index, content) VALUES(?1, ?2, ?3)"))
    {
    }

    std::int64_t tapeId() const { return tapeId_; }

    void onRoot(const RootRecord& root, const RecordLocation& location) override
    {
        root_ = root;
        Statement insert = db_.prepare(
            "INSERT INTO tapes(file_sha256, chain_head, path, size, status, format_major, format_minor, root_json, producer,"
            " optimizer_contract, snapshot_interval, program_sha256, program_kind, record_count, transaction_count,"
            " snapshot_count, embedded, ingested_at)"
            " VALUES(?1, '', ?2, 0, 'unsealed', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 0, 0, 0, ?11, ?12)");
        // A placeholder identity until the whole file has been hashed.
        insert.bind(1, "pending:" + tapePath_)
            .bind(2, absolutePath(tapePath_))
            .bind(3, root.formatMajor)
            .bind(4, root.formatMinor)
            .bind(5, location.payload.asString())
            .bind(6, root.producerName + " " + root.producerVersion)
            .bind(7, root.optimizerContract)
            .bind(8, root.snapshotInterval)
            .bind(9, toHex(root.programSha256))
            .bind(10, root.programKind)
            .bind(11, options_.embed ? 1 : 0)
            .bind(12, utcNow());
        insert.run();
        tapeId_ = db_.lastInsertRowId();

        Statement tensor = db_.prepare("INSERT INTO tensors(tape_id, kind, position, name, dtype, shape) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
        auto addSpecs = [&](const std::vector<TensorSpec>& specs, const char* kind) {
            for (std::size_t i = 0; i < specs.size(); ++i) {
                tensor.bind(1, tapeId_).bind(2, kind).bind(3, static_cast<std::int64_t>(i)).bind(4, specs[i].name);
                tensor.bind(5, dtypeName(specs[i].dtype)).bind(6, shapeJson(specs[i].shape));
                tensor.run();
            }
        };
        addSpecs(root.parameters, "parameter");
        addSpecs(root.buffers, "buffer");

        Statement group = db_.prepare("INSERT INTO optimizer_groups(tape_id, group_index, options, parameters) VALUES(?1, ?2, ?3, ?4)");
        for (std::size_t g = 0; g < root.optimizerGroups.size(); ++g) {
            group.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(g)).bind(3, root.optimizerGroups[g].optionsJson);
            group.bind(4, nlohmann::json(root.optimizerGroups[g].parameters).dump());
            group.run();
        }
        embed(location);
    }

    void onProgram(const RecordLocation& location) override
    {
        Statement insert = db_.prepare(
            "INSERT INTO programs(sha256, kind, size, source, path, tape_id, record_offset, content)"
            " VALUES(?1, ?2, ?3, 'embedded', NULL, ?4, ?5, ?6)"
            " ON CONFLICT(sha256) DO UPDATE SET content = coalesce(programs.content, excluded.content)");
        insert.bind(1, toHex(root_.programSha256))
            .bind(2, root_.programKind)
            .bind(3, static_cast<std::int64_t>(location.payload.size))
            .bind(4, tapeId_)
            .bind(5, static_cast<std::int64_t>(location.offset + tape::kFrameHeaderSize))
            .bindBlob(6, location.payload);
        insert.run();
        embed(location);
    }

    void onSnapshot(const SnapshotRecord& snapshot, const RecordLocation& location) override
    {
        insertSnapshot_.bind(1, tapeId_)
            .bind(2, static_cast<std::int64_t>(snapshot.beforeTransaction))
            .bind(3, static_cast<std::int64_t>(location.index))
            .bind(4, static_cast<std::int64_t>(location.offset))
            .bind(5, static_cast<std::int64_t>(location.frameSize))
            .bindBlob(6, digestBytes(location.digest));
        insertSnapshot_.run();
        embed(location);
    }

    void onTransaction(const TransactionRecord& record, const RecordLocation& location) override
    {
        const std::size_t parameters = record.updateL2.size();
        fingerprints_.resize(parameters * 2);
        double maxUpdate = 0.0;
        for (std::size_t i = 0; i < parameters; ++i) {
            fingerprints_[2 * i] = record.updateL2[i];
            fingerprints_[2 * i + 1] = record.updateMaxAbs[i];
            maxUpdate = std::max(maxUpdate, record.updateMaxAbs[i]);
        }
        insertTransaction_.bind(1, tapeId_)
            .bind(2, static_cast<std::int64_t>(record.index))
            .bind(3, static_cast<std::int64_t>(record.index / static_cast<std::uint64_t>(root_.snapshotInterval)))
            .bind(4, record.loss)
            .bind(5, record.optimizerValue("lr"))
            .bind(6, record.updateNorm())
            .bind(7, maxUpdate)
            .bindBlob(8, ByteSpan(fingerprints_.data(), fingerprints_.size() * sizeof(double)))
            .bind(9, record.deltas.empty() ? 0 : 1)
            .bind(10, record.stateDigest ? 1 : 0);
        if (record.stateDigest)
            insertTransaction_.bindBlob(11, digestBytes(*record.stateDigest));
        else
            insertTransaction_.bindNull(11);
        insertTransaction_.bind(12, static_cast<std::int64_t>(record.wallTimeNs))
            .bind(13, static_cast<std::int64_t>(location.index))
            .bind(14, static_cast<std::int64_t>(location.offset))
            .bind(15, static_cast<std::int64_t>(location.frameSize))
            .bindBlob(16, digestBytes(location.digest));
        insertTransaction_.run();
        embed(location);
    }

    void onSeal(const SealRecord&, const RecordLocation& location) override { embed(location); }

private:
    void embed(const RecordLocation& location)
    {
        if (!options_.embed)
            return;
        insertPayload_.bind(1, tapeId_).bind(2, static_cast<std::int64_t>(location.index)).bindBlob(3, location.payload);
        insertPayload_.run();
    }

    Database& db_;
    std::string tapePath_;
    IngestOptions options_;
    Statement insertTransaction_;
    Statement insertSnapshot_;
    Statement insertPayload_;
    RootRecord root_;
    std::int64_t tapeId_ = 0;
    std::vector<double> fingerprints_;
};

}  // namespace

CaseStore::CaseStore(const std::string& path, Access access) : path_(path)
{
    db_ = std::make_unique<Database>(path, access == Access::ReadOnly ? Database::Mode::ReadOnly : Database::Mode::ReadWriteCreate);
    CaseSchema::upgrade(*db_);
}

CaseStore::~CaseStore() = default;

IngestResult CaseStore::ingestTape(const std::string& tapePath, const IngestOptions& options)
{
    SqlTransaction transaction(*db_);
    IngestVisitor visitor(*db_, tapePath, options);
    ScanOptions scan;
    scan.computeFileSha256 = true;
    scan.progress = options.progress;

    IngestResult result;
    result.summary = scanTape(tapePath, &visitor, scan);
    const TapeSummary& summary = result.summary;
    if (summary.status == TapeStatus::Corrupt)
        throw IngestError("tape " + tapePath + " is corrupt: " + summary.problem->describe(), summary);
    if (!summary.complete() && !options.allowIncomplete)
        throw IngestError("tape " + tapePath + " is " + std::string(tapeStatusName(summary.status)) +
                              (summary.problem ? " (" + summary.problem->describe() + ")" : std::string()) +
                              "; it holds " + std::to_string(summary.transactionCount) +
                              " whole transactions but is not complete. Allow incomplete tapes to ingest its readable part.",
                          summary);
    if (!summary.root)
        throw IngestError("tape " + tapePath + " has no readable root record", summary);

    const std::string fileSha256 = toHex(*summary.fileSha256);
    Statement existing = db_->prepare("SELECT id FROM tapes WHERE file_sha256 = ?1");
    existing.bind(1, fileSha256);
    if (existing.step()) {
        result.tapeId = existing.int64(0);
        result.alreadyPresent = true;
        return result;  // the transaction rolls back: the case stays exactly as it was
    }
    Statement finish = db_->prepare(
        "UPDATE tapes SET file_sha256 = ?1, chain_head = ?2, size = ?3, status = ?4, record_count = ?5, transaction_count = ?6,"
        " snapshot_count = ?7 WHERE id = ?8");
    finish.bind(1, fileSha256)
        .bind(2, toHex(summary.chainHead))
        .bind(3, static_cast<std::int64_t>(summary.fileSize))
        .bind(4, tapeStatusName(summary.status))
        .bind(5, static_cast<std::int64_t>(summary.recordCount))
        .bind(6, static_cast<std::int64_t>(summary.transactionCount))
        .bind(7, static_cast<std::int64_t>(summary.snapshotCount))
        .bind(8, visitor.tapeId());
    finish.run();
    transaction.commit();
    result.tapeId = visitor.tapeId();
    return result;
}

ProgramFileResult CaseStore::addProgramFile(const std::string& programPath)
{
    MappedFile file(programPath);
    ProgramFileResult result;
    result.sha256 = toHex(Sha256::of(file.bytes()));

    SqlTransaction transaction(*db_);
    Statement tapes = db_->prepare("SELECT id, program_kind FROM tapes WHERE program_sha256 = ?1 ORDER BY id");
    tapes.bind(1, result.sha256);
    std::string kind;
    while (tapes.step()) {
        result.matchingTapes.push_back(tapes.int64(0));
        kind = tapes.text(1);
    }
    if (result.matchingTapes.empty())
        throw Error("program " + programPath + " (sha256 " + result.sha256 + ") matches no tape in case " + path_);

    Statement present = db_->prepare("SELECT content IS NOT NULL FROM programs WHERE sha256 = ?1");
    present.bind(1, result.sha256);
    if (present.step() && present.int64(0) != 0) {
        result.alreadyPresent = true;
        return result;
    }
    Statement insert = db_->prepare(
        "INSERT INTO programs(sha256, kind, size, source, path, tape_id, record_offset, content) VALUES(?1, ?2, ?3, 'file', ?4, ?5, NULL, ?6)"
        " ON CONFLICT(sha256) DO UPDATE SET content = excluded.content, source = 'file', path = excluded.path");
    insert.bind(1, result.sha256)
        .bind(2, kind)
        .bind(3, static_cast<std::int64_t>(file.size()))
        .bind(4, absolutePath(programPath))
        .bind(5, result.matchingTapes.front())
        .bindBlob(6, file.bytes());
    insert.run();
    transaction.commit();
    return result;
}

namespace {
constexpr const char* kTapeColumns =
    "SELECT t.id, t.path, t.file_sha256, t.chain_head, t.size, t.status, t.producer, t.optimizer_contract, t.program_sha256,"
    " t.program_kind, EXISTS(SELECT 1 FROM programs p WHERE p.sha256 = t.program_sha256 AND p.content IS NOT NULL),"
    " t.snapshot_interval, t.record_count, t.transaction_count, t.snapshot_count, t.embedded, t.ingested_at, t.root_json FROM tapes t";

CaseTape tapeFromRow(const Statement& row)
{
    CaseTape tape;
    tape.id = row.int64(0);
    tape.path = row.text(1);
    tape.fileSha256 = row.text(2);
    tape.chainHead = row.text(3);
    tape.size = static_cast<std::uint64_t>(row.int64(4));
    tape.status = row.text(5);
    tape.producer = row.text(6);
    tape.optimizerContract = row.text(7);
    tape.programSha256 = row.text(8);
    tape.programKind = row.text(9);
    tape.programPresent = row.int64(10) != 0;
    tape.snapshotInterval = static_cast<int>(row.int64(11));
    tape.recordCount = static_cast<std::uint64_t>(row.int64(12));
    tape.transactionCount = static_cast<std::uint64_t>(row.int64(13));
    tape.snapshotCount = static_cast<std::uint64_t>(row.int64(14));
    tape.embedded = row.int64(15) != 0;
    tape.ingestedAt = row.text(16);
    tape.rootJson = row.text(17);
    return tape;
}
}  // namespace

std::vector<CaseTape> CaseStore::tapes()
{
    Statement query = db_->prepare(std::string(kTapeColumns) + " ORDER BY t.id");
    std::vector<CaseTape> result;
    while (query.step())
        result.push_back(tapeFromRow(query));
    return result;
}

std::optional<CaseTape> CaseStore::tape(std::int64_t id)
{
    Statement query = db_->prepare(std::string(kTapeColumns) + " WHERE t.id = ?1");
    query.bind(1, id);
    if (!query.step())
        return std::nullopt;
    return tapeFromRow(query);
}

}  // namespace zkdv
