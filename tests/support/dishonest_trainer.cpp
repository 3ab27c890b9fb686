#include "dishonest_trainer.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <optional>

#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/sampling_schedule.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/tape_writer.h"

namespace zkdv::test {

namespace {

class CollectingVisitor : public TapeVisitor {
public:
    std::vector<RawRecord> records;
    void onRoot(const RootRecord&, const RecordLocation& l) override { add(tape::RecordType::Root, l); }
    void onProgram(const RecordLocation& l) override { add(tape::RecordType::Program, l); }
    void onSnapshot(const SnapshotRecord&, const RecordLocation& l) override { add(tape::RecordType::Snapshot, l); }
    void onTransaction(const TransactionRecord&, const RecordLocation& l) override { add(tape::RecordType::Transaction, l); }

private:
    void add(tape::RecordType type, const RecordLocation& l) { records.push_back({type, {l.payload.begin(), l.payload.end()}}); }
};

std::string metadataOf(const RawRecord& record, const char* key)
{
    const SafetensorsView view = SafetensorsView::parse(ByteSpan(record.payload));
    return std::string(view.metadataValue(key));
}

// The checks a transaction record carries.
struct Carried {
    bool deltas = false;
    bool digest = false;
};

Carried carriedBy(const RawRecord& record)
{
    const SafetensorsView view = SafetensorsView::parse(ByteSpan(record.payload));
    Carried carried;
    carried.digest = !view.metadataValue("state_digest").empty();
    for (const TensorView& tensor : view.tensors())
        carried.deltas = carried.deltas || tensor.name.rfind("delta/", 0) == 0;
    return carried;
}

Digest digestAfter(const Digest& previous, const RawRecord& record)
{
    Sha256 hasher;
    const FrameHeader header = frameHeader(static_cast<std::uint32_t>(record.type), tape::kFlagCritical, record.payload.size(), previous);
    return frameDigest(header, {ByteSpan(record.payload)}, hasher);
}

// Changes bytes that no check looks at, so the record's digest changes.
void perturb(RawRecord& record)
{
    if (record.type == tape::RecordType::Root) {
        record.payload.push_back(' ');  // JSON allows whitespace after the value
        return;
    }
    Payload payload = readPayload(record);
    std::string& wallTime = payload.metadata["wall_time_ns"];
    wallTime = std::to_string(std::stoull(wallTime) + 1);
    writePayload(record, payload);
}

}  // namespace

RewriteStatistics rewriteTape(const std::string& from, const std::string& to, const std::function<void(RawRecord&)>& alter, Draws draws,
                              const std::string& sealSignature)
{
    CollectingVisitor visitor;
    const TapeSummary summary = scanTape(from, &visitor);
    if (!summary.complete())
        throw Error("rewriteTape: " + from + " is not a sealed tape");
    std::vector<RawRecord>& records = visitor.records;
    for (RawRecord& record : records)
        alter(record);
    // The forger's view of the root: what the draws need (format, sampling), whatever it made of
    // the member a reader may refuse (a dataset naming the other algorithm, spec 5.7).
    nlohmann::json forgedRoot = nlohmann::json::parse(records.front().payload.begin(), records.front().payload.end());
    if (forgedRoot.is_object())
        forgedRoot.erase("dataset");
    const std::string drawnRoot = forgedRoot.dump();
    const RootRecord root = RootRecord::parse(ByteSpan(std::string_view(drawnRoot)));
    const bool regrind = draws == Draws::Regrind && samplingGuaranteeOf(root.formatMinor) == SamplingGuarantee::ChainBound;

    RewriteStatistics statistics;
    TapeWriter writer(to, TapeWriter::OpenMode::CreateNew, static_cast<std::uint16_t>(root.formatMinor));
    for (std::size_t i = 0; i < records.size(); ++i) {
        RawRecord& record = records[i];
        const bool anchor = record.type == tape::RecordType::Root || record.type == tape::RecordType::Transaction;
        std::size_t next = i + 1;
        while (next < records.size() && records[next].type != tape::RecordType::Transaction)
            ++next;
        if (regrind && anchor && next < records.size()) {
            const Carried wanted = carriedBy(records[next]);
            for (;;) {
                SamplingSchedule schedule(root);
                const SampledChecks drawn = schedule.next(digestAfter(writer.chainHead(), record));
                if (drawn.update == wanted.deltas && drawn.state == wanted.digest)
                    break;
                perturb(record);
                ++statistics.digestsTried;
            }
        }
        writer.append(record.type, ByteSpan(record.payload));
    }
    if (sealSignature == "null") {
        writer.seal();
        return statistics;
    }
    const nlohmann::json seal = {{"records", writer.recordCount()}, {"transactions", writer.transactionCount()},
                                 {"snapshots", writer.snapshotCount()}, {"chain_head", toHex(writer.chainHead())},
                                 {"signature", nlohmann::json::parse(sealSignature)}};
    const std::string text = seal.dump();
    writer.append(tape::RecordType::Seal, ByteSpan(std::string_view(text)));
    writer.flush();
    return statistics;
}

bool isTransaction(const RawRecord& record, std::uint64_t index)
{
    return record.type == tape::RecordType::Transaction && metadataOf(record, "index") == std::to_string(index);
}

bool isSnapshot(const RawRecord& record, std::uint64_t beforeTransaction)
{
    return record.type == tape::RecordType::Snapshot && metadataOf(record, "before_transaction") == std::to_string(beforeTransaction);
}

void scaleElement(RawRecord& record, const std::string& name, std::size_t element, float factor)
{
    const SafetensorsView view = SafetensorsView::parse(ByteSpan(record.payload));
    const TensorView* tensor = view.find(name);
    if (!tensor || tensor->dtype != DType::F32 || static_cast<std::int64_t>(element) >= tensor->elementCount())
        throw Error("scaleElement: no F32 tensor " + name + " with element " + std::to_string(element));
    const std::size_t offset = static_cast<std::size_t>(tensor->data.data - record.payload.data()) + element * 4;
    float value;
    std::memcpy(&value, record.payload.data() + offset, 4);
    value = value * factor + (value == 0.0f ? 0.25f : 0.0f);
    std::memcpy(record.payload.data() + offset, &value, 4);
}

Payload readPayload(const RawRecord& record)
{
    const SafetensorsView view = SafetensorsView::parse(ByteSpan(record.payload));
    Payload payload;
    for (const auto& [key, value] : view.metadata())
        payload.metadata[key] = value;
    for (const TensorView& tensor : view.tensors())
        payload.tensors.push_back({tensor.name, tensor.dtype, tensor.shape, {tensor.data.begin(), tensor.data.end()}});
    return payload;
}

void writePayload(RawRecord& record, const Payload& payload)
{
    SafetensorsBuilder builder;
    for (const auto& [key, value] : payload.metadata)
        builder.setMetadata(key, value);
    for (const PayloadTensor& tensor : payload.tensors)
        builder.add(tensor.name, tensor.dtype, tensor.shape, ByteSpan(tensor.bytes));
    record.payload = builder.toBytes();
}

}  // namespace zkdv::test
