#include "record_locations.h"

namespace zkdv::test {

namespace {

struct LocatingVisitor : TapeVisitor {
    std::vector<RecordLocation> records;
    void keep(const RecordLocation& location)
    {
        records.push_back(location);
        records.back().payload = ByteSpan(static_cast<const std::uint8_t*>(nullptr), location.payload.size);
    }
    void onRoot(const RootRecord&, const RecordLocation& l) override { keep(l); }
    void onProgram(const RecordLocation& l) override { keep(l); }
    void onSnapshot(const SnapshotRecord&, const RecordLocation& l) override { keep(l); }
    void onTransaction(const TransactionRecord&, const RecordLocation& l) override { keep(l); }
    void onSeal(const SealRecord&, const RecordLocation& l) override { keep(l); }
};

}  // namespace

std::vector<RecordLocation> recordLocations(const std::string& path, TapeSummary* summary)
{
    LocatingVisitor visitor;
    TapeSummary scanned = scanTape(path, &visitor);
    if (summary)
        *summary = std::move(scanned);
    return std::move(visitor.records);
}

}  // namespace zkdv::test
