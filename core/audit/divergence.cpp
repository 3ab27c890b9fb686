#include "zkdv/audit/divergence.h"
#include "zkdv/audit/divergence_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

#include "zkdv/util/error.h"
#include "zkdv/util/little_endian.h"

// How the pass is built (docs/replay.md, "Divergence metrics", gives the definitions):
//  - Tensors go block by block (kBlockElements). A block whose bytes are equal (memcmp) only
//    adds the squares of its values to the norms; a tensor equal to the end needs no arithmetic.
//  - A differing F32/F16/BF16 block first goes through a kernel that assumes finite values
//    and distances below 2^24 (a replay a few ULPs off); a block where that did not hold is
//    redone by the full kernel, which classifies every pair. Both compute the same numbers
//    on the blocks the fast one accepts. F64 blocks always take their full kernel.
//  - Kernels are written with GCC/Clang vector extensions, kLanes pairs per step, one
//    accumulator per lane and metric, and store each pair's histogram bin as a byte; the bins
//    are counted per block afterwards (a scatter inside the arithmetic loop would keep it scalar).
//  - On x86-64 the kernels are compiled twice, for the baseline (SSE2) and for AVX2, and
//    chosen at run time (ZKDV_CPU_CAPABILITY=default forces the baseline). The lane structure
//    and the order of every operation are the same in both, and floating-point contraction
//    is off, so every machine computes the same bits.

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "divergence.cpp loads the tape's little-endian tensors with native loads"
#endif

#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#else
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif
// Vector arguments of internal functions: the ABI note (-Wpsabi) does not concern us. (Not
// popped: GCC emits it at the end of the translation unit.)
#pragma GCC diagnostic ignored "-Wpsabi"

#define ZKDV_INLINE inline __attribute__((always_inline))

namespace zkdv {
namespace {

// Elements per block: both tensors' blocks (8 KiB each for F32) stay in L1/L2 between the
// comparison, the arithmetic and the counting of bins. Per-lane counters below rely on it.
constexpr std::size_t kBlockElements = 2048;
constexpr std::size_t kLanes = 8;  // pairs per vector step
// Bin byte of a pair excluded from the ULP statistics (a NaN or Inf mismatch): never counted.
constexpr std::int32_t kExcludedBin = kUlpHistogramBins;

typedef std::uint8_t U8xL __attribute__((vector_size(kLanes)));
typedef std::uint16_t U16xL __attribute__((vector_size(2 * kLanes)));
typedef std::int32_t I32xL __attribute__((vector_size(4 * kLanes)));
typedef std::uint32_t U32xL __attribute__((vector_size(4 * kLanes)));
typedef float F32xL __attribute__((vector_size(4 * kLanes)));
// 64-bit lanes go in two halves of four: GCC lowers vectors wider than the target's
// registers poorly (a 512-bit ?: on AVX2 becomes scalar code), so nothing exceeds 256 bits.
typedef std::int32_t I32x4 __attribute__((vector_size(16)));
typedef std::uint32_t U32x4 __attribute__((vector_size(16)));
typedef float F32x4 __attribute__((vector_size(16)));
typedef std::int64_t I64x4 __attribute__((vector_size(32)));
typedef std::uint64_t U64x4 __attribute__((vector_size(32)));
typedef double F64x4 __attribute__((vector_size(32)));
typedef double F64x8 __attribute__((vector_size(64)));  // only as a conversion result, split at once
// For counting bins: 32 bytes at a time.
typedef std::uint8_t U8x32 __attribute__((vector_size(32)));
typedef std::uint16_t U16x16 __attribute__((vector_size(32)));

template <typename To, typename From>
ZKDV_INLINE To bitCast(From v)
{
    static_assert(sizeof(To) == sizeof(From), "bitCast between different sizes");
    return reinterpret_cast<To>(v);
}

// What one block contributes, merged into the totals in block order.
struct BlockSums {
    double diffSquares = 0.0;
    double recordedSquares = 0.0;
    double replayedSquares = 0.0;
    double dot = 0.0;
    double maxAbs = 0.0;
    std::uint64_t ulpLow = 0;   // the ULP distances' sum, low 32 bits ...
    std::uint64_t ulpHigh = 0;  // ... and the rest (a sum of 64-bit distances needs more than 64 bits)
    std::uint64_t maxUlp = 0;
    std::uint64_t nanMismatches = 0;
    std::uint64_t infMismatches = 0;
    bool fits = true;  // NarrowFastKernel only: false when the block must be redone in full
};

// The bin of distances below 2^32: 0 for 0, else the bit width b (2^(b-1) <= d < 2^b), read
// from the exponent of a float conversion that is exact because the value is below 2^24.
ZKDV_INLINE I32xL bitWidth32(U32xL d)
{
    const I32xL large = d >= (1u << 24);
    const U32xL t = large ? d >> 8 : d;
    const I32xL exponent = bitCast<I32xL>(__builtin_convertvector(bitCast<I32xL>(t), F32xL)) >> 23;
    return exponent == 0 ? I32xL{} : exponent - 126 + (large & 8);
}

template <typename V>
ZKDV_INLINE auto lowHalf(V v)
{
    return __builtin_shufflevector(v, v, 0, 1, 2, 3);
}
template <typename V>
ZKDV_INLINE auto highHalf(V v)
{
    return __builtin_shufflevector(v, v, 4, 5, 6, 7);
}
template <typename V>
ZKDV_INLINE auto concat(V low, V high)
{
    return __builtin_shufflevector(low, high, 0, 1, 2, 3, 4, 5, 6, 7);
}

// The low byte of each lane (bins are below 256), as a byte shuffle: GCC lowers that to
// two instructions on AVX2, but a converting narrowing to one instruction per lane.
ZKDV_INLINE void storeBins(I32xL bins, std::uint8_t* out)
{
    typedef std::uint8_t U8x4L __attribute__((vector_size(4 * kLanes)));
    static_assert(kLanes == 8, "the shuffle below picks 8 lanes");
    const U8xL bytes = __builtin_shufflevector(bitCast<U8x4L>(bins), bitCast<U8x4L>(bins), 0, 4, 8, 12, 16, 20, 24, 28);
    std::memcpy(out, &bytes, sizeof bytes);
}

ZKDV_INLINE I32xL vmin(I32xL a, I32xL b) { return a < b ? a : b; }
ZKDV_INLINE I32xL vmax(I32xL a, I32xL b) { return a > b ? a : b; }

// The narrow floating-point dtypes, bits widened to 32-bit lanes, values converted to float.
struct F32Format {
    using Bits = std::uint32_t;
    static constexpr std::uint32_t kSign = 0x80000000u;
    static constexpr std::int32_t kInfinity = 0x7f800000;  // magnitude bits of +inf
    static ZKDV_INLINE U32xL load(const std::uint8_t* p)
    {
        U32xL v;
        std::memcpy(&v, p, sizeof v);
        return v;
    }
    static ZKDV_INLINE F32xL value(U32xL bits) { return bitCast<F32xL>(bits); }
    static ZKDV_INLINE I32xL negative(U32xL bits) { return bitCast<I32xL>(bits) >> 31; }
};

struct BF16Format {
    using Bits = std::uint16_t;
    static constexpr std::uint32_t kSign = 0x8000u;
    static constexpr std::int32_t kInfinity = 0x7f80;
    static ZKDV_INLINE U32xL load(const std::uint8_t* p)
    {
        U16xL v;
        std::memcpy(&v, p, sizeof v);
        return __builtin_convertvector(v, U32xL);
    }
    static ZKDV_INLINE F32xL value(U32xL bits) { return bitCast<F32xL>(bits << 16); }
    static ZKDV_INLINE I32xL negative(U32xL bits) { return bitCast<I32xL>(bits << 16) >> 31; }
};

struct F16Format {
    using Bits = std::uint16_t;
    static constexpr std::uint32_t kSign = 0x8000u;
    static constexpr std::int32_t kInfinity = 0x7c00;
    static ZKDV_INLINE U32xL load(const std::uint8_t* p) { return BF16Format::load(p); }
    // binary16 to binary32 without tables or branches: move exponent and mantissa into place
    // and rebias; Inf/NaN need the exponent moved to 255; a subnormal lands exactly 2^-14 too
    // high and one exact subtraction fixes it.
    static ZKDV_INLINE F32xL value(U32xL bits)
    {
        U32xL out = (bits & 0x7fffu) << 13;
        const U32xL exponent = out & 0x0f800000u;
        const I32xL subnormal = exponent == 0;
        const I32xL infOrNan = exponent == 0x0f800000u;
        out += (127u - 15u) << 23;
        out += bitCast<U32xL>(subnormal) & (1u << 23);
        out += bitCast<U32xL>(infOrNan) & ((255u - 143u) << 23);
        F32xL f = bitCast<F32xL>(out);
        f = subnormal ? f - 0x1.0p-14f : f;
        return bitCast<F32xL>(bitCast<U32xL>(f) | (bits & 0x8000u) << 16);
    }
    static ZKDV_INLINE I32xL negative(U32xL bits) { return BF16Format::negative(bits); }
};

// The norm sums, per lane (lanes 0-3 in half 0, 4-7 in half 1). The dot product is summed
// too, although (|x|^2 + |y|^2 - |y - x|^2) / 2 would save two operations: that loses all
// precision when one norm is much larger than the other. Where x == y, dot, |x|^2 and |y|^2
// get the same terms in the same order, so they are equal and the cosine is exactly 1.
struct NormLanes {
    F64x4 diffSquares[2] = {}, recordedSquares[2] = {}, replayedSquares[2] = {}, dot[2] = {}, maxAbs[2] = {};

    ZKDV_INLINE void add(int half, F64x4 x, F64x4 y)
    {
        const F64x4 diff = y - x;
        diffSquares[half] += diff * diff;
        recordedSquares[half] += x * x;
        replayedSquares[half] += y * y;
        dot[half] += x * y;
        const F64x4 magnitude = bitCast<F64x4>(bitCast<U64x4>(diff) & 0x7fffffffffffffffull);
        maxAbs[half] = magnitude > maxAbs[half] ? magnitude : maxAbs[half];
    }
    // Widening eight floats at once: GCC 12 lowers a four-float widening to two pairs and
    // an insert, but splits an eight-float one into two single vcvtps2pd on AVX2.
    ZKDV_INLINE void add(F32xL x, F32xL y)
    {
        const F64x8 wx = __builtin_convertvector(x, F64x8);
        const F64x8 wy = __builtin_convertvector(y, F64x8);
        add(0, lowHalf(wx), lowHalf(wy));
        add(1, highHalf(wx), highHalf(wy));
    }
    ZKDV_INLINE void into(BlockSums& sums) const
    {
        for (int half = 0; half < 2; ++half)
            for (std::size_t lane = 0; lane < 4; ++lane) {
                sums.diffSquares += diffSquares[half][lane];
                sums.recordedSquares += recordedSquares[half][lane];
                sums.replayedSquares += replayedSquares[half][lane];
                sums.dot += dot[half][lane];
                sums.maxAbs = std::max(sums.maxAbs, maxAbs[half][lane]);
            }
    }
};

// Runs a kernel's step over a block kLanes pairs at a time; a last partial step reads a
// zero-padded copy (zero against zero adds nothing to any metric) and keeps only its own bins.
template <typename Kernel>
ZKDV_INLINE void forEachStep(Kernel& kernel, const std::uint8_t* recorded, const std::uint8_t* replayed, std::size_t n,
                             std::uint8_t* bins)
{
    constexpr std::size_t size = Kernel::kElementSize;
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        kernel.step(recorded + i * size, replayed + i * size, bins + i);
    if (i == n)
        return;
    std::uint8_t a[size * kLanes] = {}, b[size * kLanes] = {}, tailBins[kLanes];
    std::memcpy(a, recorded + i * size, (n - i) * size);
    std::memcpy(b, replayed + i * size, (n - i) * size);
    kernel.step(a, b, tailBins);
    std::memcpy(bins + i, tailBins, n - i);
}

// F32/F16/BF16 pairs, the common case: every value finite and every distance below 2^24
// (a replay a few ULPs off). No NaN/Inf classification, and cheap distances and bins. The
// caller checks result().fits and redoes the block with NarrowFullKernel otherwise: a
// non-finite value makes a sum of squares non-finite (finite squares of these dtypes cannot
// overflow a double), and a distance of 2^24 or more shows in maxUlp.
template <typename Format>
struct NarrowFastKernel {
    static constexpr std::size_t kElementSize = sizeof(typename Format::Bits);
    static constexpr std::uint32_t kMagnitude = Format::kSign - 1;
    static constexpr std::uint32_t kLargestDistance = (1u << 24) - 1;
    // The per-lane sums of distances below 2^24 stay below 2^32 over a block.
    static_assert(kBlockElements / kLanes * std::uint64_t{kLargestDistance} < (1ull << 32), "block too long");

    NormLanes norms;
    U32xL ulpSum{}, maxUlp{};

    ZKDV_INLINE void step(const std::uint8_t* pa, const std::uint8_t* pb, std::uint8_t* bins)
    {
        const U32xL a = Format::load(pa);
        const U32xL b = Format::load(pb);
        norms.add(Format::value(a), Format::value(b));

        // Ordered positions: sign-magnitude to two's complement (-0 and +0 coincide). The
        // difference is taken modulo 2^32: for finite values its absolute value is below 2^24
        // exactly when the true distance is (a true distance D of 2^31 or more, from two finite
        // F32 values, wraps to 2^32 - D >= 2^24 + 2), so a small result is exact and a large
        // one sends the block to the full kernel.
        const I32xL magA = bitCast<I32xL>(a & kMagnitude);
        const I32xL magB = bitCast<I32xL>(b & kMagnitude);
        const I32xL negA = Format::negative(a);
        const I32xL negB = Format::negative(b);
        const I32xL ordA = (magA ^ negA) - negA;
        const I32xL ordB = (magB ^ negB) - negB;
        const U32xL wrapped = bitCast<U32xL>(ordA) - bitCast<U32xL>(ordB);
        const U32xL d = bitCast<I32xL>(wrapped) < 0 ? 0u - wrapped : wrapped;
        ulpSum += d;
        maxUlp = d > maxUlp ? d : maxUlp;
        // Bin: the bit width, from the exponent of a conversion exact below 2^24 (0 stays 0).
        const I32xL exponent = bitCast<I32xL>(__builtin_convertvector(bitCast<I32xL>(d), F32xL)) >> 23;
        storeBins(vmax(exponent - 126, I32xL{}), bins);
    }

    ZKDV_INLINE BlockSums result() const
    {
        BlockSums sums;
        norms.into(sums);
        for (std::size_t lane = 0; lane < kLanes; ++lane) {
            sums.ulpLow += ulpSum[lane];
            sums.maxUlp = std::max<std::uint64_t>(sums.maxUlp, maxUlp[lane]);
        }
        sums.ulpHigh = sums.ulpLow >> 32;
        sums.ulpLow &= 0xffffffffu;
        sums.fits = sums.maxUlp <= kLargestDistance && std::isfinite(sums.recordedSquares)
                    && std::isfinite(sums.replayedSquares);
        return sums;
    }
};

// F32/F16/BF16 pairs, any values: classifies NaN/Inf pairs and handles every distance.
template <typename Format>
struct NarrowFullKernel {
    static constexpr std::size_t kElementSize = sizeof(typename Format::Bits);
    static constexpr std::uint32_t kMagnitude = Format::kSign - 1;
    // Distances are below 2^32; their per-lane sums, split in 16-bit halves, stay below 2^32.
    static_assert(kBlockElements / kLanes * 0xffffull < (1ull << 32), "block too long for 32-bit ULP sums");

    NormLanes norms;
    U32xL ulpLow{}, ulpHigh{}, maxUlp{};
    I32xL nanMismatches{}, infMismatches{};

    ZKDV_INLINE void step(const std::uint8_t* pa, const std::uint8_t* pb, std::uint8_t* bins)
    {
        const U32xL a = Format::load(pa);
        const U32xL b = Format::load(pb);
        const I32xL magA = bitCast<I32xL>(a & kMagnitude);
        const I32xL magB = bitCast<I32xL>(b & kMagnitude);
        const I32xL inf = I32xL{} + Format::kInfinity;
        const I32xL nanA = magA > inf;
        const I32xL nanB = magB > inf;
        const I32xL bothFinite = (magA < inf) & (magB < inf);
        const I32xL nanMismatch = nanA ^ nanB;
        const I32xL infMismatch = ~(nanA | nanB | bothFinite) & (a != b);
        const I32xL excluded = nanMismatch | infMismatch;
        nanMismatches -= nanMismatch;
        infMismatches -= infMismatch;
        const F32xL x = Format::value(a & bitCast<U32xL>(bothFinite));
        const F32xL y = Format::value(b & bitCast<U32xL>(bothFinite));
        norms.add(x, y);

        // Ordered positions as above; the distance, up to 2^32 - 2, in unsigned arithmetic.
        // Both NaN: distance 0; excluded pairs: 0 as well (and a bin that is never counted).
        const I32xL negA = Format::negative(a);
        const I32xL negB = Format::negative(b);
        const I32xL ordA = (magA ^ negA) - negA;
        const I32xL ordB = (magB ^ negB) - negB;
        U32xL d = bitCast<U32xL>(vmax(ordA, ordB)) - bitCast<U32xL>(vmin(ordA, ordB));
        d &= ~bitCast<U32xL>(nanA | excluded);
        ulpLow += d & 0xffffu;
        ulpHigh += d >> 16;
        maxUlp = d > maxUlp ? d : maxUlp;
        storeBins(excluded ? I32xL{} + kExcludedBin : bitWidth32(d), bins);
    }

    ZKDV_INLINE BlockSums result() const
    {
        BlockSums sums;
        norms.into(sums);
        std::uint64_t ulpTotal = 0;  // below 2^32 * kBlockElements: exact
        for (std::size_t lane = 0; lane < kLanes; ++lane) {
            ulpTotal += ulpLow[lane] + (std::uint64_t{ulpHigh[lane]} << 16);
            sums.maxUlp = std::max<std::uint64_t>(sums.maxUlp, maxUlp[lane]);
            sums.nanMismatches += static_cast<std::uint64_t>(nanMismatches[lane]);
            sums.infMismatches += static_cast<std::uint64_t>(infMismatches[lane]);
        }
        sums.ulpLow = ulpTotal & 0xffffffffu;
        sums.ulpHigh = ulpTotal >> 32;
        return sums;
    }
};

// F64 pairs, in 64-bit lanes (two halves of four): distances may need all 64 bits. Always
// classifies.
struct F64Kernel {
    static constexpr std::size_t kElementSize = 8;
    static constexpr std::int64_t kInfinity = 0x7ff0000000000000ll;

    NormLanes norms;
    U64x4 ulpLow[2] = {}, ulpHigh[2] = {}, maxUlp[2] = {};
    I64x4 nanMismatches[2] = {}, infMismatches[2] = {};

    // One half: returns the distances' bit-width parts (see step) and the excluded mask.
    ZKDV_INLINE void half(int h, const std::uint8_t* pa, const std::uint8_t* pb, U32x4& part, I32x4& wide,
                          I32x4& excludedOut)
    {
        I64x4 a, b;
        std::memcpy(&a, pa, sizeof a);
        std::memcpy(&b, pb, sizeof b);
        const I64x4 magA = a & 0x7fffffffffffffffll;
        const I64x4 magB = b & 0x7fffffffffffffffll;
        const I64x4 nanA = magA > kInfinity;
        const I64x4 nanB = magB > kInfinity;
        const I64x4 bothFinite = (magA < kInfinity) & (magB < kInfinity);
        const I64x4 nanMismatch = nanA ^ nanB;
        const I64x4 infMismatch = ~(nanA | nanB | bothFinite) & (a != b);
        const I64x4 excluded = nanMismatch | infMismatch;
        nanMismatches[h] -= nanMismatch;
        infMismatches[h] -= infMismatch;
        norms.add(h, bitCast<F64x4>(a & bothFinite), bitCast<F64x4>(b & bothFinite));

        const I64x4 negA = a >> 63;
        const I64x4 negB = b >> 63;
        const I64x4 ordA = (magA ^ negA) - negA;
        const I64x4 ordB = (magB ^ negB) - negB;
        U64x4 d = bitCast<U64x4>(ordA > ordB ? ordA : ordB) - bitCast<U64x4>(ordA < ordB ? ordA : ordB);
        d &= ~bitCast<U64x4>(nanA | excluded);
        ulpLow[h] += d & 0xffffffffu;
        ulpHigh[h] += d >> 32;
        maxUlp[h] = d > maxUlp[h] ? d : maxUlp[h];
        const U64x4 high = d >> 32;
        const I64x4 isWide = high != 0;
        part = __builtin_convertvector(isWide ? high : d & 0xffffffffu, U32x4);
        wide = __builtin_convertvector(isWide, I32x4);
        excludedOut = __builtin_convertvector(excluded, I32x4);
    }

    ZKDV_INLINE void step(const std::uint8_t* pa, const std::uint8_t* pb, std::uint8_t* bins)
    {
        U32x4 part0, part1;
        I32x4 wide0, wide1, excluded0, excluded1;
        half(0, pa, pb, part0, wide0, excluded0);
        half(1, pa + 32, pb + 32, part1, wide1, excluded1);
        // Distances of 2^32 and more: 32 + the bit width of their high half.
        const I32xL width = bitWidth32(concat(part0, part1)) + (concat(wide0, wide1) & 32);
        storeBins(concat(excluded0, excluded1) ? I32xL{} + kExcludedBin : width, bins);
    }

    ZKDV_INLINE BlockSums result() const
    {
        BlockSums sums;
        norms.into(sums);
        for (int h = 0; h < 2; ++h)
            for (std::size_t lane = 0; lane < 4; ++lane) {
                sums.ulpLow += ulpLow[h][lane];
                sums.ulpHigh += ulpHigh[h][lane];
                sums.maxUlp = std::max<std::uint64_t>(sums.maxUlp, maxUlp[h][lane]);
                sums.nanMismatches += static_cast<std::uint64_t>(nanMismatches[h][lane]);
                sums.infMismatches += static_cast<std::uint64_t>(infMismatches[h][lane]);
            }
        return sums;
    }
};

template <typename Kernel>
ZKDV_INLINE BlockSums runKernel(const std::uint8_t* recorded, const std::uint8_t* replayed, std::size_t n,
                                std::uint8_t* bins)
{
    Kernel kernel;
    forEachStep(kernel, recorded, replayed, n, bins);
    return kernel.result();
}

// Sum of the squares of the finite values of a block whose two sides are bitwise equal: its
// only contribution (differences and distances are all zero; every pair lands in bin 0).
template <typename Format>
struct EqualSquaresKernel {
    static constexpr std::size_t kElementSize = sizeof(typename Format::Bits);
    F64x4 squares[2] = {};

    ZKDV_INLINE void step(const std::uint8_t* p, const std::uint8_t*, std::uint8_t*)
    {
        const U32xL a = Format::load(p);
        const U32xL finite = bitCast<U32xL>(bitCast<I32xL>(a & (Format::kSign - 1)) < Format::kInfinity);
        const F32xL x = Format::value(a & finite);
        const F64x8 wide = __builtin_convertvector(x, F64x8);
        const F64x4 low = lowHalf(wide);
        const F64x4 high = highHalf(wide);
        squares[0] += low * low;
        squares[1] += high * high;
    }
    ZKDV_INLINE double result() const
    {
        double sum = 0.0;
        for (int half = 0; half < 2; ++half)
            for (std::size_t lane = 0; lane < 4; ++lane)
                sum += squares[half][lane];
        return sum;
    }
};

struct EqualF64SquaresKernel {
    static constexpr std::size_t kElementSize = 8;
    F64x4 squares[2] = {};

    ZKDV_INLINE void step(const std::uint8_t* p, const std::uint8_t*, std::uint8_t*)
    {
        for (int half = 0; half < 2; ++half) {
            I64x4 a;
            std::memcpy(&a, p + 32 * half, sizeof a);
            const F64x4 x = bitCast<F64x4>(a & ((a & 0x7fffffffffffffffll) < 0x7ff0000000000000ll));
            squares[half] += x * x;
        }
    }
    ZKDV_INLINE double result() const
    {
        double sum = 0.0;
        for (int half = 0; half < 2; ++half)
            for (std::size_t lane = 0; lane < 4; ++lane)
                sum += squares[half][lane];
        return sum;
    }
};

template <typename Kernel>
ZKDV_INLINE double runSquares(const std::uint8_t* data, std::size_t n)
{
    Kernel kernel;
    std::uint8_t unusedBins[kLanes];
    std::size_t i = 0;
    for (; i + kLanes <= n; i += kLanes)
        kernel.step(data + i * Kernel::kElementSize, nullptr, unusedBins);
    if (i < n) {
        std::uint8_t tail[Kernel::kElementSize * kLanes] = {};
        std::memcpy(tail, data + i * Kernel::kElementSize, (n - i) * Kernel::kElementSize);
        kernel.step(tail, nullptr, unusedBins);
    }
    return kernel.result();
}

// Counts a block's bins up to maxBin (kExcludedBin is never counted). A narrow range
// (the usual case: replays differ by a few ULPs) is counted 32 bins at a time by comparison;
// a wide one by scalar increments, spread over four partial histograms so that runs of
// equal bins do not chain every increment through one memory location.
ZKDV_INLINE void countBins(const std::uint8_t* bins, std::size_t n, std::int32_t maxBin, UlpHistogram& histogram)
{
    constexpr std::int32_t kWidestCompared = 24;
    static_assert(kBlockElements / 32 <= 255, "per-byte counters would overflow");
    const std::int32_t last = std::min<std::int32_t>(maxBin, kUlpHistogramBins - 1);
    if (last < kWidestCompared) {
        const std::size_t vectors = n / 32;
        for (std::int32_t bin = 0; bin <= last; ++bin) {
            const U8x32 target = U8x32{} + static_cast<std::uint8_t>(bin);
            U8x32 counts{};
            for (std::size_t v = 0; v < vectors; ++v) {
                U8x32 chunk;
                std::memcpy(&chunk, bins + v * 32, sizeof chunk);
                counts -= bitCast<U8x32>(chunk == target);
            }
            const U16x16 pairs = (bitCast<U16x16>(counts) & 0xff) + (bitCast<U16x16>(counts) >> 8);
            const U32xL quads = (bitCast<U32xL>(pairs) & 0xffff) + (bitCast<U32xL>(pairs) >> 16);
            std::uint64_t total = 0;
            for (std::size_t lane = 0; lane < 8; ++lane)
                total += quads[lane];
            for (std::size_t i = vectors * 32; i < n; ++i)
                total += bins[i] == bin;
            histogram[static_cast<std::size_t>(bin)] += total;
        }
        return;
    }
    std::uint32_t partial[4][kUlpHistogramBins + 1] = {};
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        ++partial[0][bins[i]];
        ++partial[1][bins[i + 1]];
        ++partial[2][bins[i + 2]];
        ++partial[3][bins[i + 3]];
    }
    for (; i < n; ++i)
        ++partial[0][bins[i]];
    for (std::size_t bin = 0; bin < kUlpHistogramBins; ++bin)
        histogram[bin] += std::uint64_t{partial[0][bin]} + partial[1][bin] + partial[2][bin] + partial[3][bin];
}

// One instruction-set variant of every vectorised kernel.
struct Kernels {
    using Block = BlockSums (*)(const std::uint8_t*, const std::uint8_t*, std::size_t, std::uint8_t*);
    using Squares = double (*)(const std::uint8_t*, std::size_t);
    using Count = void (*)(const std::uint8_t*, std::size_t, std::int32_t, UlpHistogram&);
    const char* name;  // divergenceKernels()
    Block f32Fast, f32Full, f16Fast, f16Full, bf16Fast, bf16Full, f64Full;
    Squares f32Squares, f16Squares, bf16Squares, f64Squares;
    Count count;
};

// Instantiates every kernel inside functions compiled for one instruction set (`attributes`);
// the always-inline kernel code takes that instruction set from its caller.
#define ZKDV_DEFINE_KERNELS(ns, attributes)                                                                     \
    namespace ns {                                                                                              \
    template <typename Kernel>                                                                                  \
    attributes BlockSums block(const std::uint8_t* a, const std::uint8_t* b, std::size_t n, std::uint8_t* bins) \
    {                                                                                                           \
        return runKernel<Kernel>(a, b, n, bins);                                                                \
    }                                                                                                           \
    template <typename Kernel>                                                                                  \
    attributes double squares(const std::uint8_t* data, std::size_t n)                                          \
    {                                                                                                           \
        return runSquares<Kernel>(data, n);                                                                     \
    }                                                                                                           \
    attributes void count(const std::uint8_t* bins, std::size_t n, std::int32_t maxBin, UlpHistogram& h)        \
    {                                                                                                           \
        countBins(bins, n, maxBin, h);                                                                          \
    }                                                                                                           \
    const Kernels kernels = {                                                                                   \
        #ns,                                                                                                    \
        block<NarrowFastKernel<F32Format>>,                                                                     \
        block<NarrowFullKernel<F32Format>>,                                                                     \
        block<NarrowFastKernel<F16Format>>,                                                                     \
        block<NarrowFullKernel<F16Format>>,                                                                     \
        block<NarrowFastKernel<BF16Format>>,                                                                    \
        block<NarrowFullKernel<BF16Format>>,                                                                    \
        block<F64Kernel>,                                                                                       \
        squares<EqualSquaresKernel<F32Format>>,                                                                 \
        squares<EqualSquaresKernel<F16Format>>,                                                                 \
        squares<EqualSquaresKernel<BF16Format>>,                                                                \
        squares<EqualF64SquaresKernel>,                                                                         \
        count,                                                                                                  \
    };                                                                                                          \
    }

ZKDV_DEFINE_KERNELS(baseline, )
#if defined(__x86_64__) && defined(__GNUC__)
#define ZKDV_DIVERGENCE_DISPATCH 1
// (An AVX-512 variant measured slower than this one: the 512-bit conversions are split again.)
ZKDV_DEFINE_KERNELS(avx2, __attribute__((target("avx2"))))
#endif

const Kernels& selectKernels()
{
#ifdef ZKDV_DIVERGENCE_DISPATCH
    static const Kernels* chosen = [] {
        const char* cap = std::getenv("ZKDV_CPU_CAPABILITY");
        const std::string limit = cap ? cap : "";
        __builtin_cpu_init();
        if (limit != "default" && __builtin_cpu_supports("avx2"))
            return &avx2::kernels;
        return &baseline::kernels;
    }();
    return *chosen;
#else
    return baseline::kernels;
#endif
}

// Integer and bool dtypes (scalar: tapes' state is floating point; these are rare and
// small): the distance is |a - b|, exact in 64 bits; never a NaN/Inf mismatch.
template <typename Int>
BlockSums integerBlock(const std::uint8_t* recorded, const std::uint8_t* replayed, std::size_t n, bool isBool,
                       std::uint8_t* bins)
{
    using Unsigned = std::make_unsigned_t<Int>;
    double diffSquares[kLanes] = {}, recordedSquares[kLanes] = {}, replayedSquares[kLanes] = {}, dot[kLanes] = {};
    double maxAbs = 0.0;
    std::uint64_t ulpLow = 0, ulpHigh = 0, maxUlp = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t lane = i % kLanes;
        auto a = static_cast<Int>(readLittleEndian<Unsigned>(recorded + i * sizeof(Int)));
        auto b = static_cast<Int>(readLittleEndian<Unsigned>(replayed + i * sizeof(Int)));
        if (isBool) {  // any nonzero byte is true
            a = a != 0;
            b = b != 0;
        }
        const auto wa = static_cast<std::int64_t>(a);
        const auto wb = static_cast<std::int64_t>(b);
        const std::uint64_t d = static_cast<std::uint64_t>(std::max(wa, wb)) - static_cast<std::uint64_t>(std::min(wa, wb));
        const double x = static_cast<double>(a);
        const double y = static_cast<double>(b);
        const double absDiff = static_cast<double>(d);  // exact where y - x would round (I64)
        diffSquares[lane] += absDiff * absDiff;
        recordedSquares[lane] += x * x;
        replayedSquares[lane] += y * y;
        dot[lane] += x * y;
        maxAbs = std::max(maxAbs, absDiff);
        ulpLow += d & 0xffffffffu;
        ulpHigh += d >> 32;
        maxUlp = std::max(maxUlp, d);
        bins[i] = d == 0 ? 0 : static_cast<std::uint8_t>(64 - __builtin_clzll(d));
    }
    BlockSums sums;
    for (std::size_t lane = 0; lane < kLanes; ++lane) {
        sums.diffSquares += diffSquares[lane];
        sums.recordedSquares += recordedSquares[lane];
        sums.replayedSquares += replayedSquares[lane];
        sums.dot += dot[lane];
    }
    sums.maxAbs = maxAbs;
    sums.ulpLow = ulpLow;
    sums.ulpHigh = ulpHigh;
    sums.maxUlp = maxUlp;
    return sums;
}

template <typename Int>
double integerSquares(const std::uint8_t* data, std::size_t n, bool isBool)
{
    using Unsigned = std::make_unsigned_t<Int>;
    double squares[kLanes] = {};
    for (std::size_t i = 0; i < n; ++i) {
        auto a = static_cast<Int>(readLittleEndian<Unsigned>(data + i * sizeof(Int)));
        if (isBool)
            a = a != 0;
        const double x = static_cast<double>(a);
        squares[i % kLanes] += x * x;
    }
    double sum = 0.0;
    for (double s : squares)
        sum += s;
    return sum;
}

// The pass over one pair of tensors, block by block, in order.
class DivergencePass {
public:
    DivergencePass(DType dtype, const std::uint8_t* recorded, const std::uint8_t* replayed, std::uint64_t count)
        : dtype_(dtype), elementSize_(dtypeSize(dtype)), recorded_(recorded), replayed_(replayed), count_(count),
          kernels_(selectKernels())
    {
    }

    DivergenceMetrics run()
    {
        // The bitwise-equal prefix first, without arithmetic: a tensor equal to the end needs
        // none; one that differs later reads its equal prefix once more (recorded side only).
        std::uint64_t first = 0;
        while (first < count_ && blockEqual(first, blockLength(first)))
            first += blockLength(first);
        metrics_.elements = count_;
        if (first == count_) {
            metrics_.ulpHistogram[0] = count_;
            return metrics_;  // the defaults: relative L2 0, cosine 1, no mismatches
        }
        metrics_.bitwiseEqual = false;
        for (std::uint64_t start = 0; start < first; start += kBlockElements)
            addEqualBlock(start, blockLength(start));
        for (std::uint64_t start = first; start < count_; start += kBlockElements) {
            const std::size_t n = blockLength(start);
            if (start != first && mayBeEqual(start, n) && blockEqual(start, n))
                addEqualBlock(start, n);
            else
                addBlock(start, n);
        }
        if (dtype_ == DType::F64)
            rescaleIfOutOfRange();
        finish();
        return metrics_;
    }

private:
    std::size_t blockLength(std::uint64_t start) const
    {
        return static_cast<std::size_t>(std::min<std::uint64_t>(kBlockElements, count_ - start));
    }

    // A quick look at the first 32 bytes, inlined: spares a memcmp call per differing block.
    bool mayBeEqual(std::uint64_t start, std::size_t n) const
    {
        const std::size_t bytes = std::min<std::size_t>(32, n * elementSize_);
        const std::uint8_t* a = recorded_ + start * elementSize_;
        const std::uint8_t* b = replayed_ + start * elementSize_;
        return bytes < 32 || std::memcmp(a, b, 32) == 0;
    }

    bool blockEqual(std::uint64_t start, std::size_t n) const
    {
        return std::memcmp(recorded_ + start * elementSize_, replayed_ + start * elementSize_, n * elementSize_) == 0;
    }

    void addEqualBlock(std::uint64_t start, std::size_t n)
    {
        const std::uint8_t* data = recorded_ + start * elementSize_;
        double squares = 0.0;
        switch (dtype_) {
        case DType::F64: squares = kernels_.f64Squares(data, n); break;
        case DType::F32: squares = kernels_.f32Squares(data, n); break;
        case DType::F16: squares = kernels_.f16Squares(data, n); break;
        case DType::BF16: squares = kernels_.bf16Squares(data, n); break;
        case DType::I64: squares = integerSquares<std::int64_t>(data, n, false); break;
        case DType::I32: squares = integerSquares<std::int32_t>(data, n, false); break;
        case DType::I16: squares = integerSquares<std::int16_t>(data, n, false); break;
        case DType::I8: squares = integerSquares<std::int8_t>(data, n, false); break;
        case DType::U8: squares = integerSquares<std::uint8_t>(data, n, false); break;
        case DType::Bool: squares = integerSquares<std::uint8_t>(data, n, true); break;
        }
        recordedSquares_ += squares;
        replayedSquares_ += squares;
        dot_ += squares;
        metrics_.ulpHistogram[0] += n;
    }

    void addBlock(std::uint64_t start, std::size_t n)
    {
        const std::uint8_t* a = recorded_ + start * elementSize_;
        const std::uint8_t* b = replayed_ + start * elementSize_;
        std::uint8_t bins[kBlockElements];
        BlockSums sums;
        switch (dtype_) {
        case DType::F64: sums = kernels_.f64Full(a, b, n, bins); break;
        case DType::F32:
            sums = kernels_.f32Fast(a, b, n, bins);
            if (!sums.fits)
                sums = kernels_.f32Full(a, b, n, bins);
            break;
        case DType::F16:
            sums = kernels_.f16Fast(a, b, n, bins);
            if (!sums.fits)
                sums = kernels_.f16Full(a, b, n, bins);
            break;
        case DType::BF16:
            sums = kernels_.bf16Fast(a, b, n, bins);
            if (!sums.fits)
                sums = kernels_.bf16Full(a, b, n, bins);
            break;
        case DType::I64: sums = integerBlock<std::int64_t>(a, b, n, false, bins); break;
        case DType::I32: sums = integerBlock<std::int32_t>(a, b, n, false, bins); break;
        case DType::I16: sums = integerBlock<std::int16_t>(a, b, n, false, bins); break;
        case DType::I8: sums = integerBlock<std::int8_t>(a, b, n, false, bins); break;
        case DType::U8: sums = integerBlock<std::uint8_t>(a, b, n, false, bins); break;
        case DType::Bool: sums = integerBlock<std::uint8_t>(a, b, n, true, bins); break;
        }
        diffSquares_ += sums.diffSquares;
        recordedSquares_ += sums.recordedSquares;
        replayedSquares_ += sums.replayedSquares;
        dot_ += sums.dot;
        ulpSum_ += static_cast<double>(sums.ulpHigh) * 0x1.0p32 + static_cast<double>(sums.ulpLow);
        metrics_.maxAbs = std::max(metrics_.maxAbs, sums.maxAbs);
        metrics_.maxUlp = std::max(metrics_.maxUlp, static_cast<double>(sums.maxUlp));
        metrics_.nanMismatches += sums.nanMismatches;
        metrics_.infMismatches += sums.infMismatches;
        // The largest bin stored is that of maxUlp (or kExcludedBin, which is not counted).
        const std::int32_t maxBin = sums.maxUlp == 0 ? 0 : 64 - __builtin_clzll(sums.maxUlp);
        kernels_.count(bins, n, maxBin, metrics_.ulpHistogram);
    }

    // Squares of F64 values overflow beyond ~1e154 and underflow below ~1e-154 (narrower
    // dtypes cannot do either in double). When a sum is out of the safe range, the norms are
    // summed again with each side scaled by a power of two (exact) that brings its largest
    // finite magnitude near 1; finish() puts the scales back where the quotients allow it.
    void rescaleIfOutOfRange()
    {
        constexpr double kTiny = 0x1.0p-960;
        const bool overflow = !std::isfinite(diffSquares_) || !std::isfinite(recordedSquares_) || !std::isfinite(replayedSquares_);
        const bool underflow = (diffSquares_ < kTiny && metrics_.maxAbs > 0.0) || recordedSquares_ < kTiny || replayedSquares_ < kTiny;
        if (!overflow && !underflow)
            return;
        auto value = [](const std::uint8_t* p, std::uint64_t i) {
            const std::uint64_t bits = readLittleEndian<std::uint64_t>(p + i * 8);
            double v;
            std::memcpy(&v, &bits, sizeof v);
            return v;
        };
        double largestRecorded = 0.0, largestReplayed = 0.0;
        for (std::uint64_t i = 0; i < count_; ++i) {
            const double x = value(recorded_, i), y = value(replayed_, i);
            if (std::isfinite(x) && std::isfinite(y)) {
                largestRecorded = std::max(largestRecorded, std::fabs(x));
                largestReplayed = std::max(largestReplayed, std::fabs(y));
            }
        }
        std::frexp(largestRecorded, &recordedScale_);
        std::frexp(largestReplayed, &replayedScale_);
        diffScale_ = std::max(recordedScale_, replayedScale_);  // y - x, scaled, stays below 4
        double diff = 0.0, rec = 0.0, rep = 0.0, dot = 0.0;
        for (std::uint64_t i = 0; i < count_; ++i) {
            const double x = value(recorded_, i), y = value(replayed_, i);
            if (!std::isfinite(x) || !std::isfinite(y))
                continue;
            const double d = std::ldexp(y, -diffScale_) - std::ldexp(x, -diffScale_);
            const double sx = std::ldexp(x, -recordedScale_), sy = std::ldexp(y, -replayedScale_);
            diff += d * d;
            rec += sx * sx;
            rep += sy * sy;
            dot += sx * sy;
        }
        diffSquares_ = diff;
        recordedSquares_ = rec;
        replayedSquares_ = rep;
        dot_ = dot;
    }

    void finish()
    {
        // The sums are of values scaled by 2^-diffScale_ (differences), 2^-recordedScale_ and
        // 2^-replayedScale_ (all 0 unless rescaled); the cosine does not depend on them.
        DivergenceMetrics& m = metrics_;
        const double diffNorm = std::sqrt(diffSquares_);
        const double recordedNorm = std::sqrt(recordedSquares_);
        if (diffNorm == 0.0)
            m.relativeL2 = 0.0;
        else if (recordedNorm == 0.0)
            m.relativeL2 = std::numeric_limits<double>::infinity();
        else
            m.relativeL2 = std::ldexp(diffNorm / recordedNorm, diffScale_ - recordedScale_);

        const double rs = recordedSquares_;
        const double ps = replayedSquares_;
        if (rs == 0.0 && ps == 0.0) {
            m.cosine = 1.0;
        } else if (rs == 0.0 || ps == 0.0) {
            m.cosine = 0.0;
        } else {
            // sqrt(rs * ps) rather than sqrt(rs) * sqrt(ps): for equal values dot == rs == ps
            // and sqrt(rs * rs) == rs exactly, so the cosine is exactly 1.
            const double product = rs * ps;
            const double denominator = std::isfinite(product) && product >= std::numeric_limits<double>::min()
                                           ? std::sqrt(product)
                                           : std::sqrt(rs) * std::sqrt(ps);
            m.cosine = std::clamp(dot_ / denominator, -1.0, 1.0);
        }
        const std::uint64_t ulpPairs = m.elements - m.nanMismatches - m.infMismatches;
        m.meanUlp = ulpPairs == 0 ? 0.0 : ulpSum_ / static_cast<double>(ulpPairs);
    }

    DType dtype_;
    std::size_t elementSize_;
    const std::uint8_t* recorded_;
    const std::uint8_t* replayed_;
    std::uint64_t count_;
    const Kernels& kernels_;
    double diffSquares_ = 0.0;
    double recordedSquares_ = 0.0;
    double replayedSquares_ = 0.0;
    double dot_ = 0.0;
    double ulpSum_ = 0.0;
    int diffScale_ = 0;
    int recordedScale_ = 0;
    int replayedScale_ = 0;
    DivergenceMetrics metrics_;
};

}  // namespace

DivergenceMetrics computeDivergence(DType dtype, std::uint64_t count, ByteSpan recorded, ByteSpan replayed)
{
    const std::size_t elementSize = dtypeSize(dtype);
    const bool overflows = count > std::numeric_limits<std::size_t>::max() / elementSize;
    const std::uint64_t expected = overflows ? 0 : count * elementSize;
    if (overflows || recorded.size != expected || replayed.size != expected)
        throw Error("divergence: " + std::to_string(count) + " elements of " + std::string(dtypeName(dtype)) + " need "
                    + (overflows ? std::string("more than 2^64") : std::to_string(expected))
                    + " bytes per tensor, but the recorded tensor has " + std::to_string(recorded.size)
                    + " and the replayed one " + std::to_string(replayed.size));
    return DivergencePass(dtype, recorded.data, replayed.data, count).run();
}

DivergenceMetrics compareScalars(double recorded, double replayed)
{
    std::uint8_t a[8];
    std::uint8_t b[8];
    std::uint64_t bits;
    std::memcpy(&bits, &recorded, sizeof bits);
    writeLittleEndian(a, bits);
    std::memcpy(&bits, &replayed, sizeof bits);
    writeLittleEndian(b, bits);
    return computeDivergence(DType::F64, 1, ByteSpan(a, 8), ByteSpan(b, 8));
}

const char* divergenceKernels() { return selectKernels().name; }

}  // namespace zkdv

#if !defined(__clang__)
#pragma GCC pop_options
#endif
