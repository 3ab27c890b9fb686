// Fuzz target for dataset commitments (DatasetCommitment::parse, `dataset verify`'s reader of
// a document from someone else): any bytes may be refused with a FormatError; a document
// that parses is written and read back to the same leaves and root, and its root computes.
// See docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>
#include <string>

#include "zkdv/provenance/dataset_commitment.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    zkdv::DatasetCommitment commitment;
    try {
        commitment = zkdv::DatasetCommitment::parse(text);
    } catch (const zkdv::FormatError&) {
        return 0;
    }
    const zkdv::DatasetCommitment back = zkdv::DatasetCommitment::parse(zkdv::toJsonText(commitment.toJson()));
    if (back.root != commitment.root || back.files.size() != commitment.files.size())
        __builtin_trap();
    for (std::size_t i = 0; i < back.files.size(); ++i)
        if (back.files[i].path != commitment.files[i].path || back.files[i].size != commitment.files[i].size ||
            back.files[i].sha256 != commitment.files[i].sha256)
            __builtin_trap();
    (void)commitment.computeRoot();
    return 0;
}
