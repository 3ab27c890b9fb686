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

    static Tolerance defaults();
    // Comma-separated overrides of the defaults: "ulp=16,rel=1e-6,fingerprint=1e-5", or
    // "exact" (every tolerance zero). Throws ToleranceError naming the bad term.
    static Tolerance parse(const std::string& text);
    std::string toString() const;  // "ulp=…,rel=…,fingerprint=…"

    // The verdict of one tensor comparison under this tolerance.
    Verdict judge(const DivergenceMetrics& metrics) const;
    Verdict judgeFingerprint(double recorded, double replayed) const;

    // Which bound let a within-tolerance comparison of `slot` pass, in words an auditor can
    // check: "ULP 3 <= 16", "relative L2 2e-07 <= 1e-06", "fingerprint relative 4e-08 <= 1e-05"
    // (the update/... slots); "" when the values pass no bound of this tolerance.
    std::string passedBy(const std::string& slot, double maxUlp, double relativeL2) const;
};

}  // namespace zkdv
