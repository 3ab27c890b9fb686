#pragma once
// How far a replay may drift from the tape and still pass as `within-tolerance`. Nothing
// passes as `exact` unless it is bit for bit identical; docs/replay.md justifies the defaults.

#include <string>

#include "zkdv/audit/divergence.h"
#include "zkdv/audit/verdict.h"
#include "zkdv/util/error.h"

namespace zkdv {

class ToleranceError : public Error {
public:
    using Error::Error;
};

struct Tolerance {
    // A tensor (loss, delta, snapshot tensor) passes when it has no NaN/Inf mismatch and
    // its largest ULP distance is at most maxUlp, or its relative L2 error at most relativeL2.
    double maxUlp;
    double relativeL2;
    // An update fingerprint (float64 norm of a delta) passes within this relative error.
    double fingerprintRelative;
    // The cross-environment regime only (docs/replay.md, "Regimes"): a floating-point value
    // that fails the bounds above still passes when the norm of its difference is at most
    // envelope × u × S, u the unit roundoff of its dtype and S the replay's norm of the whole
    // model's corresponding quantity (its update, over the segment for a snapshot), never the
    // compared tensor's own norm, which may be near zero.
    double envelope;

    static Tolerance defaults();
    // Comma-separated overrides of the defaults: "ulp=16,rel=1e-6,fingerprint=1e-5", or
    // "exact" (every tolerance zero). Throws ToleranceError naming the bad term.
    static Tolerance parse(const std::string& text);
    std::string toString() const;  // "ulp=…,rel=…,fingerprint=…,envelope=…"

    // The verdict of one tensor comparison of values of `dtype` under this tolerance.
    Verdict judge(const DivergenceMetrics& metrics, DType dtype = DType::F32) const;
    // maxUlp counts float32 ULPs: values of a coarser dtype get the same relative window and
    // never a wider one (one bfloat16 ULP is 2^16 float32 ULPs, so 64 of them allowed a row
    // scaled by 1.3; issue 48, item 1). F32 and F64 keep maxUlp of their own ULPs.
    double ulpBound(DType dtype) const;
    Verdict judgeFingerprint(double recorded, double replayed) const;
    // Cross-environment: whether a difference of norm `difference` in values of `dtype` is
    // within the envelope of the model's scale `scale`; `ratio` gets difference / (u × scale).
    // u is the unit roundoff of the arithmetic: the dtype's, but never coarser than float32's
    // (half-precision training computes its steps in float32; what its coarser grid rounds
    // is allowed separately, one ulp of the value per element: valueGrid in the executor).
    bool withinEnvelope(DType dtype, double difference, double scale, double& ratio) const;

    // Which bound let a within-tolerance comparison of `slot` pass, in words an auditor can
    // check: "ULP 3 <= 16", "relative L2 2e-07 <= 1e-06", "fingerprint relative 4e-08 <= 1e-05"
    // (the update/... slots); "" when the values pass no bound of this tolerance.
    std::string passedBy(const std::string& slot, double maxUlp, double relativeL2) const;
};

}  // namespace zkdv
