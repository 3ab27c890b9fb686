// Fuzz target for the tolerance spec of `replay --tolerance` (Tolerance::parse): any text
// may be refused with a ToleranceError; a tolerance that parses must parse again from its
// own text to the same values (to the six digits that text keeps).
// See docs/fuzzing.md for how it is built and run.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "zkdv/audit/tolerance.h"

namespace {
bool close(double a, double b) { return std::fabs(a - b) <= 1e-5 * std::max(std::fabs(a), std::fabs(b)); }
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    zkdv::Tolerance tolerance{};
    try {
        tolerance = zkdv::Tolerance::parse(text);
    } catch (const zkdv::ToleranceError&) {
        return 0;
    }
    const zkdv::Tolerance again = zkdv::Tolerance::parse(tolerance.toString());
    if (!close(again.maxUlp, tolerance.maxUlp) || !close(again.relativeL2, tolerance.relativeL2) ||
        !close(again.fingerprintRelative, tolerance.fingerprintRelative))
        __builtin_trap();
    return 0;
}
