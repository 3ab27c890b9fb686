// Fuzz target for the selection specs of `replay --select` (SelectionSpec::parse): any text
// may be refused with a SelectionError; a spec that parses must read back from its
// canonical text as itself, and choose ascending, unique transactions of a small tape.
// See docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>
#include <string>

#include "zkdv/audit/selection.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    zkdv::SelectionSpec spec;
    try {
        spec = zkdv::SelectionSpec::parse(text);
    } catch (const zkdv::SelectionError&) {
        return 0;
    }
    if (!(zkdv::SelectionSpec::parse(spec.toString()) == spec))
        __builtin_trap();

    // A tape whose size and layout follow the input, so every branch of the choice runs.
    zkdv::SelectionInput input;
    input.transactionCount = 1 + size % 97;
    input.snapshotInterval = 1 + size % 13;
    input.parameterCount = 2;
    for (std::uint64_t t = 0; t < input.transactionCount; ++t) {
        input.updateL2.push_back(static_cast<double>((t * 7919) % 31));
        input.updateL2.push_back(static_cast<double>((t * 104729) % 17));
        input.hasSampledCheck.push_back(t % 3 == 0);
    }
    try {
        const std::vector<std::uint64_t> chosen = zkdv::selectTransactions(spec, size, input);
        for (std::size_t i = 0; i < chosen.size(); ++i)
            if (chosen[i] >= input.transactionCount || (i > 0 && chosen[i] <= chosen[i - 1]))
                __builtin_trap();
    } catch (const zkdv::SelectionError&) {
        // Ids and ranges past the tape's end are refused.
    }
    return 0;
}
