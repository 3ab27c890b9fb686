#include "tape_rewriter.h"

#include <vector>

#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/tape_writer.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv::test {

namespace {
struct Record {
    std::uint32_t type = 0;
    std::uint64_t offset = 0;
    std::string payload;
};

struct Collector : TapeVisitor {
    std::vector<Record> records;
    void keep(const RecordLocation& l) { records.push_back({l.type, l.offset, std::string(l.payload.asString())}); }
    void onRoot(const RootRecord&, const RecordLocation& l) override { keep(l); }
    void onProgram(const RecordLocation& l) override { keep(l); }
    void onSnapshot(const SnapshotRecord&, const RecordLocation& l) override { keep(l); }
    void onTransaction(const TransactionRecord&, const RecordLocation& l) override { keep(l); }
    void onSeal(const SealRecord&, const RecordLocation& l) override { keep(l); }
};
}  // namespace

void rewriteTape(const std::string& from, const std::string& to, const PayloadEdit& edit)
{
    Collector collector;
    const TapeSummary summary = scanTape(from, &collector);
    if (summary.problem)
        throw Error("rewriteTape: " + from + " is damaged: " + summary.problem->describe());
    const MappedFile original(from);
    TapeWriter writer(to, TapeWriter::OpenMode::Overwrite);
    for (std::size_t i = 0; i < collector.records.size(); ++i) {
        Record& record = collector.records[i];
        const auto flags = readLittleEndian<std::uint32_t>(original.bytes().data + record.offset + 4);
        const std::string payload = edit(i, record.type, std::move(record.payload));
        writer.appendRaw(record.type, flags, {ByteSpan(std::string_view(payload))});
    }
}

}  // namespace zkdv::test
