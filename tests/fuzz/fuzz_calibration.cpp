// Fuzz target for envelope calibration files (EnvelopeCalibration::parse, the file of
// `zkdv-audit calibrate` that `replay --calibration` reads as untrusted input): any bytes may
// be refused with a FormatError; a calibration that parses keeps the invariants the envelope
// rests on (finite, ordered quantiles; an envelope within its bounds) and is written back to
// a file that parses to the same text. See docs/fuzzing.md.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>

#include "zkdv/audit/envelope_calibration.h"
#include "zkdv/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    zkdv::EnvelopeCalibration calibration;
    try {
        calibration = zkdv::EnvelopeCalibration::parse(text, "fuzz.json");
    } catch (const zkdv::FormatError&) {
        return 0;
    }
    for (const zkdv::KindCalibration& k : calibration.kinds)
        for (const zkdv::SampleQuantiles* q : {&k.maxUlp, &k.relativeL2, &k.ratio})
            if (!(q->p50 >= 0 && q->p50 <= q->p90 && q->p90 <= q->p99 && q->p99 <= q->max && std::isfinite(q->max)) || q->count == 0)
                __builtin_trap();
    const double envelope = calibration.envelope();
    if (!(envelope >= zkdv::kMinimumCalibratedEnvelope && envelope <= zkdv::kMaximumCalibrationRatio * zkdv::kCalibrationSafetyFactor))
        __builtin_trap();
    const std::string written = calibration.toJson();
    if (zkdv::EnvelopeCalibration::parse(written, "again.json").toJson() != written)
        __builtin_trap();
    return 0;
}
