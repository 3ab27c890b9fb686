// Fuzz target for the JSON records of a tape, the root (spec section 3) and the seal
// (section 7), and so for parseUntrustedJson under them: any bytes may be refused with a
// FormatError, nothing else may escape. A root that parses must survive being written and
// read back unchanged. See docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>
#include <string>

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/seal_record.h"
#include "zkdv/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const zkdv::ByteSpan bytes(data, size);
    try {
        const zkdv::RootRecord root = zkdv::RootRecord::parse(bytes);
        const std::string written = root.toJson();
        const zkdv::RootRecord again = zkdv::RootRecord::parse(zkdv::ByteSpan(std::string_view(written)));
        if (again.toJson() != written)
            __builtin_trap();
    } catch (const zkdv::FormatError&) {
    }
    try {
        const zkdv::SealRecord seal = zkdv::SealRecord::parse(bytes);
        if (seal.signatureJson.empty())
            __builtin_trap();
    } catch (const zkdv::FormatError&) {
    }
    return 0;
}
