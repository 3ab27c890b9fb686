// Fuzz target for the record dissector behind the workstation's bytes pane: any bytes, read
// as a tape, are taken apart record after record from byte 16 (where record 0 starts), and
// nothing may crash or escape. Every text shown is valid UTF-8 and bounded, the frame and the
// stop lie inside the input, and the lookup a click on a byte makes finds a field holding it.
// See docs/fuzzing.md for how it is built and run.

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "zkdv/tape/record_dissection.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/mapped_file.h"
#include "zkdv/util/utf8.h"

namespace {

constexpr std::size_t kMaxRecords = 64;

zkdv::RecordDissectionLimits smallLimits()
{
    zkdv::RecordDissectionLimits limits;
    limits.maxStructureBytes = 1u << 20;
    limits.maxListedEntries = 32;
    limits.maxValueBytes = 64;
    return limits;
}

void check(const std::vector<zkdv::DissectedField>& fields, const zkdv::RecordDissectionLimits& limits, int depth)
{
    // Values are clipped texts with a few words around them; problems quote at most four times as much.
    const std::size_t longest = 4 * limits.maxValueBytes + 256;
    if (depth > 8)
        __builtin_trap();
    for (const zkdv::DissectedField& field : fields) {
        if (!zkdv::isValidUtf8(field.name) || !zkdv::isValidUtf8(field.value) || field.value.size() > longest)
            __builtin_trap();
        if (field.problem && (!zkdv::isValidUtf8(*field.problem) || field.problem->size() > longest))
            __builtin_trap();
        check(field.children, limits, depth + 1);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    // An empty file maps to no bytes at all, a null pointer; libFuzzer never passes one.
    const zkdv::MappedFile file(size == 0 ? zkdv::ByteSpan() : zkdv::ByteSpan(data, size), "fuzz input");
    const zkdv::RecordDissectionLimits limits = smallLimits();
    std::uint64_t offset = zkdv::tape::kFileHeaderSize;
    for (std::size_t record = 0; record < kMaxRecords; ++record) {
        const zkdv::RecordDissection dissection = zkdv::dissectRecord(file, offset, limits);
        check(dissection.fields, limits, 0);
        if (offset < size && dissection.frameLength > size - offset)
            __builtin_trap();
        // A frame asked for past the end stops where it was asked for; any other stop is inside.
        if (dissection.stop && (dissection.stop->offset > std::max<std::uint64_t>(size, offset) || !zkdv::isValidUtf8(dissection.stop->reason)))
            __builtin_trap();
        for (std::uint64_t at = offset; at < offset + dissection.frameLength; at += 1 + dissection.frameLength / 16) {
            const zkdv::DissectedField* field = dissection.innermostAt(at);
            if (field && !field->contains(at))
                __builtin_trap();
        }
        (void)dissection.problems();
        if (dissection.stop || dissection.frameLength == 0)
            break;
        offset += dissection.frameLength;
    }
    return 0;
}
