#include "dishonest_trainer.h"

#include <cstring>

#include "zkdv/tape/safetensors.h"
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

}  // namespace

void rewriteTape(const std::string& from, const std::string& to, const std::function<void(RawRecord&)>& alter)
{
    CollectingVisitor visitor;
    const TapeSummary summary = scanTape(from, &visitor);
    if (!summary.complete())
        throw Error("rewriteTape: " + from + " is not a sealed tape");
    TapeWriter writer(to);
    for (RawRecord& record : visitor.records) {
        alter(record);
        writer.append(record.type, ByteSpan(record.payload));
    }
    writer.seal();
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

}  // namespace zkdv::test
