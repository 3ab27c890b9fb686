#include "zkdv/store/transaction_detail.h"
#include "zkdv/store/transaction_table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "zkdv/store/case_contents.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/scalar_value.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

namespace {

double realOrNaN(const Statement& row, int column)
{
    return row.isNull(column) ? std::numeric_limits<double>::quiet_NaN() : row.real(column);
}

// Little-endian float64 (the tape's byte order; ZKDV builds only for little-endian hosts).
double readF64(const std::uint8_t* bytes)
{
    double value = 0;
    std::memcpy(&value, bytes, sizeof value);
    return value;
}

RecordedTensor describe(const TensorView& view, const std::string& name)
{
    RecordedTensor tensor;
    tensor.name = name;
    tensor.dtype = std::string(dtypeName(view.dtype));
    tensor.shape = view.shape;
    tensor.sha256 = toHex(Sha256::of(view.data));
    return tensor;
}

// The record's payload from the tape (checked against the digest ingested with it), else
// from the case's embedded copy.
void readRecord(CaseStore& store, const CaseTape& tape, const RecordRef& ref, TransactionDetail& detail)
{
    try {
        const RootRecord root = RootRecord::parse(ByteSpan(std::string_view(tape.rootJson)));
        std::vector<std::uint8_t> embedded;
        std::unique_ptr<RecordReader> reader;
        ByteSpan payload;
        std::string tapeProblem;
        try {
            reader = std::make_unique<RecordReader>(tape.path);
            payload = reader->payload(ref, tape::RecordType::Transaction);
            detail.recordSource = tape.path;
            detail.tapeFile = tape.path;
        } catch (const Error& error) {
            tapeProblem = error.what();
            std::optional<std::vector<std::uint8_t>> copy =
                tape.embedded ? ReplayStore(store.database()).embeddedPayload(tape.id, ref.index) : std::nullopt;
            if (!copy)
                throw;
            embedded = std::move(*copy);
            payload = ByteSpan(embedded);
            detail.recordSource = "the case (embedded copy; the tape: " + tapeProblem + ")";
        }
        const SafetensorsView view = SafetensorsView::parse(payload);
        const TransactionRecord record = TransactionRecord::parse(view, root);
        if (record.lossTensor)
            detail.lossDtype = std::string(dtypeName(record.lossTensor->dtype));
        for (const TensorView* tensor : record.batch)
            detail.batch.push_back(describe(*tensor, tensor->name));
        for (const TensorView* tensor : record.optimizerValues) {
            std::vector<double> perGroup;
            if (tensor->dtype == DType::F64)
                for (std::size_t at = 0; at + 8 <= tensor->data.size; at += 8)
                    perGroup.push_back(readF64(tensor->data.data + at));
            const std::string& name = tensor->name;
            detail.optimizerValues.emplace_back(name.rfind("optimizer/", 0) == 0 ? name.substr(10) : name, std::move(perGroup));
        }
        for (std::size_t p = 0; p < record.deltas.size() && p < root.parameters.size(); ++p)
            detail.deltas.push_back(describe(*record.deltas[p], root.parameters[p].name));
        for (std::size_t k = 0; k < record.gradientTransforms.size(); ++k) {
            std::string line = record.gradientTransforms[k].describe();
            if (record.totalNorms[k]) {
                char total[40];
                std::snprintf(total, sizeof total, "%.9g", scalarToDouble(record.totalNorms[k]->dtype, record.totalNorms[k]->data.data));
                line += std::string(": total norm ") + total;
            }
            // The GradScaler's state belongs with its unscale: what the step divided by, and
            // whether it then skipped the optimizer step (tape format 1.8, section 5.6).
            if (record.gradientTransforms[k].kind == GradientTransform::Kind::Unscale && record.gradScaler)
                line += ": scale " + gradScaleText(record.gradScaler->state.scale) + ", growth tracker " +
                        std::to_string(record.gradScaler->state.growthTracker) +
                        (record.gradScaler->skipped ? ", an inf or NaN found: the optimizer step was skipped" : "");
            detail.gradientTransforms.push_back(std::move(line));
        }
    } catch (const Error& error) {
        detail.recordProblem = error.what();
        detail.batch.clear();
        detail.optimizerValues.clear();
        detail.deltas.clear();
        detail.gradientTransforms.clear();
    }
}

}  // namespace

bool transactionHasDeltas(Database& db, std::int64_t tapeId, std::uint64_t index)
{
    Statement row = db.prepare("SELECT has_deltas FROM transactions WHERE tape_id = ?1 AND idx = ?2");
    row.bind(1, tapeId).bind(2, static_cast<std::int64_t>(index));
    return row.step() && row.int64(0) != 0;
}

TransactionDetail loadTransactionDetail(CaseStore& store, std::int64_t tapeId, std::uint64_t index, std::int64_t runId)
{
    Database& db = store.database();
    const std::optional<CaseTape> tape = store.tape(tapeId);
    if (!tape)
        throw Error("case " + store.path() + " holds no tape " + std::to_string(tapeId));
    Statement row = db.prepare(
        "SELECT segment, loss, lr, update_norm, max_update, fingerprints, has_deltas, has_state_digest, state_digest, wall_time_ns,"
        " record_index, record_offset, record_length, record_digest FROM transactions WHERE tape_id = ?1 AND idx = ?2");
    row.bind(1, tapeId).bind(2, static_cast<std::int64_t>(index));
    if (!row.step())
        throw Error("case " + store.path() + ": tape " + std::to_string(tapeId) + " has no transaction " + std::to_string(index));

    TransactionDetail detail;
    detail.tapeId = tapeId;
    detail.index = index;
    detail.segment = static_cast<std::uint64_t>(row.int64(0));
    detail.loss = realOrNaN(row, 1);
    detail.lr = realOrNaN(row, 2);
    detail.updateNorm = realOrNaN(row, 3);
    detail.maxUpdate = realOrNaN(row, 4);
    const ByteSpan fingerprints = row.blob(5);
    detail.hasDeltas = row.int64(6) != 0;
    detail.hasStateDigest = row.int64(7) != 0;
    if (!row.isNull(8))
        detail.stateDigest = toHex(row.blob(8));
    detail.wallTimeNs = row.isNull(9) ? 0 : static_cast<std::uint64_t>(row.int64(9));
    detail.recordIndex = static_cast<std::uint64_t>(row.int64(10));
    detail.recordOffset = static_cast<std::uint64_t>(row.int64(11));
    detail.recordLength = static_cast<std::uint64_t>(row.int64(12));
    const ByteSpan recordDigest = row.blob(13);
    detail.recordDigest = toHex(recordDigest);

    std::vector<std::string> parameters;
    for (const StoredTensor& tensor : loadModelLayout(db, tapeId))
        if (!tensor.buffer)
            parameters.push_back(tensor.name);
    // 16 bytes per parameter; a blob of another size (an edited case) yields what it holds.
    for (std::size_t p = 0; p < parameters.size() && (p + 1) * 16 <= fingerprints.size; ++p)
        detail.fingerprints.push_back({parameters[p], readF64(fingerprints.data + p * 16), readF64(fingerprints.data + p * 16 + 8)});

    RecordRef ref;
    ref.index = detail.recordIndex;
    ref.offset = detail.recordOffset;
    ref.frameSize = detail.recordLength;
    if (recordDigest.size == ref.digest.size())
        std::copy(recordDigest.begin(), recordDigest.end(), ref.digest.begin());
    row.reset();
    readRecord(store, *tape, ref, detail);

    {
        Statement runs = db.prepare("SELECT count(*) FROM replay_runs WHERE tape_id = ?1");
        runs.bind(1, tapeId);
        detail.tapeRunCount = runs.step() ? static_cast<std::uint64_t>(runs.int64(0)) : 0;
    }
    if (runId == TransactionTable::kEveryRun) {
        // Every run: the newest one that replayed this transaction, as the table shows it.
        Statement newest = db.prepare("SELECT max(v.run_id) FROM verdicts v JOIN replay_runs r ON r.id = v.run_id"
                                      " WHERE r.tape_id = ?1 AND v.idx = ?2");
        newest.bind(1, tapeId).bind(2, static_cast<std::int64_t>(index));
        detail.runId = newest.step() && !newest.isNull(0) ? newest.int64(0) : 0;
    } else {
        Statement newest = db.prepare("SELECT coalesce(?2, max(id)) FROM replay_runs WHERE tape_id = ?1");
        newest.bind(1, tapeId);
        if (runId != 0)
            newest.bind(2, runId);
        else
            newest.bindNull(2);
        detail.runId = newest.step() && !newest.isNull(0) ? newest.int64(0) : 0;
    }
    if (detail.runId != 0) {
        Statement verdict = db.prepare(
            "SELECT coalesce(segment, 0), coalesce(selected, 1), verdict, detail, worst_tensor, worst_slot, worst_max_ulp, worst_rel_l2,"
            " replay_ns FROM verdicts"
            " WHERE run_id = ?1 AND idx = ?2");
        verdict.bind(1, detail.runId).bind(2, static_cast<std::int64_t>(index));
        if (verdict.step()) {
            StoredVerdict stored;
            stored.index = index;
            stored.segment = static_cast<std::uint64_t>(verdict.int64(0));
            stored.selected = verdict.int64(1) != 0;
            stored.verdict = verdictOrUnverifiable(verdict.text(2));
            stored.detail = verdict.isNull(3) ? std::string() : verdict.text(3);
            stored.worstTensor = verdict.isNull(4) ? std::string() : verdict.text(4);
            stored.worstSlot = verdict.isNull(5) ? std::string() : verdict.text(5);
            stored.worstMaxUlp = realOrNaN(verdict, 6);
            stored.worstRelativeL2 = realOrNaN(verdict, 7);
            stored.replayNs = verdict.isNull(8) ? 0 : static_cast<std::uint64_t>(verdict.int64(8));
            detail.verdict = stored;
            detail.comparisons = ReplayStore(db).comparisons(detail.runId, index);
        }
    }
    detail.note = TransactionNotes(db, tapeId).note(index);
    return detail;
}

}  // namespace zkdv
