#pragma once
// How far a replayed tensor is from the one the tape recorded: every metric of one pair of
// tensors, computed in one pass over their bytes (no torch: works on tape bytes directly).

#include <array>
#include <cstdint>

#include "zkdv/tape/dtype.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/error.h"

namespace zkdv {

// Bin 0 counts elements at ULP distance 0; bin b >= 1 counts distances d with
// 2^(b-1) <= d < 2^b. 65 bins cover every 64-bit distance. Pairs with a NaN/Inf mismatch are
// in no bin. (docs/replay.md, "Divergence metrics", defines every metric.)
constexpr std::size_t kUlpHistogramBins = 65;
using UlpHistogram = std::array<std::uint64_t, kUlpHistogramBins>;

struct DivergenceMetrics {
    std::uint64_t elements = 0;
    bool bitwiseEqual = true;      // same bytes (so +0/-0 and NaN payloads count)
    double maxAbs = 0.0;           // largest |replayed - recorded| over pairs where both are finite
    // Norms over the pairs where both values are finite:
    double relativeL2 = 0.0;       // ||replayed - recorded|| / ||recorded|| (0/0 = 0, x/0 = inf)
    double cosine = 1.0;           // <replayed, recorded> / (||replayed|| ||recorded||); 1 when both are zero, 0 when one is
    double maxUlp = 0.0;           // over pairs without a NaN/Inf mismatch
    double meanUlp = 0.0;
    std::uint64_t nanMismatches = 0;  // exactly one side NaN
    std::uint64_t infMismatches = 0;  // an infinity against a different value (finite, or the other sign)
    UlpHistogram ulpHistogram{};

    bool finiteMismatch() const { return nanMismatches != 0 || infMismatches != 0; }
};

// Compares `replayed` against `recorded`, both `count` elements of `dtype`, contiguous
// little-endian. ULP distance: the distance between the two values' positions in the
// ordered sequence of representable numbers of that dtype (+0 and -0 are the same
// position); for integer and bool dtypes, |a - b|. Throws Error when a buffer's size is not
// count * dtypeSize(dtype).
DivergenceMetrics computeDivergence(DType dtype, std::uint64_t count, ByteSpan recorded, ByteSpan replayed);

// The metrics of a pair of scalars held as doubles (fingerprints): ULP distance in double.
DivergenceMetrics compareScalars(double recorded, double replayed);

}  // namespace zkdv
