#include "tape_rewriter.h"

#include <vector>

#include "record_locations.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/tape_writer.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv::test {


void rewriteTape(const std::string& from, const std::string& to, const PayloadEdit& edit)
{
    TapeSummary summary;
    const std::vector<RecordLocation> records = recordLocations(from, &summary);
    if (summary.problem)
        throw Error("rewriteTape: " + from + " is damaged: " + summary.problem->describe());
    const MappedFile original(from);
    TapeWriter writer(to, TapeWriter::OpenMode::Overwrite);
    for (std::size_t i = 0; i < records.size(); ++i) {
        const RecordLocation& record = records[i];
        const std::uint8_t* frame = original.bytes().data + record.offset;
        const auto flags = readLittleEndian<std::uint32_t>(frame + 4);
        std::string payload(reinterpret_cast<const char*>(frame + tape::kFrameHeaderSize), record.payload.size);
        payload = edit(i, record.type, std::move(payload));
        writer.appendRaw(record.type, flags, {ByteSpan(std::string_view(payload))});
    }
}

}  // namespace zkdv::test
