#include "zkdv/audit/tolerance.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <algorithm>
#include <sstream>

namespace zkdv {

namespace {
// Measured in docs/replay.md ("Regimes"): the largest honest difference across CPU profiles,
// in units of u × the model's scale, was 24 (a 40-step CNN, Adam); 1024 leaves a margin of 40
// while a loss altered by 1e-4 of itself (1700 u) is still outside.
constexpr double kDefaultEnvelope = 1024.0;

// Half the distance from 1 to the next value: the relative error of one rounding.
double unitRoundoff(DType dtype)
{
    switch (dtype) {
    case DType::F64: return 0x1.0p-53;
    case DType::F32: return 0x1.0p-24;
    case DType::F16: return 0x1.0p-11;
    case DType::BF16: return 0x1.0p-8;
    default: return 0.0;  // integers and bools have no rounding: any difference is one
    }
}
}  // namespace

Tolerance Tolerance::defaults()
{
    // Measured in docs/replay.md ("Tolerances"): what a replay with a different number of
    // libtorch threads, or a different CPU vector width, moves in the demo's tensors.
    return Tolerance{64.0, 1e-4, 1e-4, kDefaultEnvelope};
}

Tolerance Tolerance::parse(const std::string& text)
{
    Tolerance tolerance = defaults();
    if (text == "exact")
        return Tolerance{0.0, 0.0, 0.0, 0.0};
    std::stringstream terms(text);
    std::string term;
    while (std::getline(terms, term, ',')) {
        const auto equals = term.find('=');
        if (equals == std::string::npos)
            throw ToleranceError("tolerance term '" + term + "' is not name=value; use ulp=N, rel=X, fingerprint=X, envelope=X or exact");
        const std::string name = term.substr(0, equals), value = term.substr(equals + 1);
        char* end = nullptr;
        const double number = std::strtod(value.c_str(), &end);
        if (value.empty() || *end != '\0' || !std::isfinite(number) || number < 0)
            throw ToleranceError("tolerance " + name + " needs a non-negative number, found '" + value + "'");
        if (name == "ulp")
            tolerance.maxUlp = number;
        else if (name == "rel")
            tolerance.relativeL2 = number;
        else if (name == "fingerprint")
            tolerance.fingerprintRelative = number;
        else if (name == "envelope")
            tolerance.envelope = number;
        else
            throw ToleranceError("unknown tolerance '" + name + "'; use ulp=N, rel=X, fingerprint=X, envelope=X or exact");
    }
    return tolerance;
}

std::string Tolerance::toString() const
{
    char text[128];
    std::snprintf(text, sizeof text, "ulp=%g,rel=%g,fingerprint=%g,envelope=%g", maxUlp, relativeL2, fingerprintRelative, envelope);
    return text;
}

double Tolerance::ulpBound(DType dtype) const
{
    const double u = unitRoundoff(dtype), single = unitRoundoff(DType::F32);
    return u > single ? maxUlp * single / u : maxUlp;
}

Verdict Tolerance::judge(const DivergenceMetrics& metrics, DType dtype) const
{
    if (metrics.bitwiseEqual)
        return Verdict::Exact;
    if (metrics.finiteMismatch())
        return Verdict::Diverged;
    if (metrics.maxUlp <= ulpBound(dtype) || metrics.relativeL2 <= relativeL2)
        return Verdict::WithinTolerance;
    return Verdict::Diverged;
}

std::string Tolerance::passedBy(const std::string& slot, double maxUlp, double relativeL2) const
{
    char text[128];
    if (slot.rfind("update/", 0) == 0) {
        if (!(relativeL2 <= fingerprintRelative))
            return {};
        std::snprintf(text, sizeof text, "fingerprint relative %.3g <= %g", relativeL2, fingerprintRelative);
        return text;
    }
    // judge() tries ULP first.
    if (maxUlp <= this->maxUlp)
        std::snprintf(text, sizeof text, "ULP %.17g <= %g", maxUlp, this->maxUlp);
    else if (relativeL2 <= this->relativeL2)
        std::snprintf(text, sizeof text, "relative L2 %.3g <= %g", relativeL2, this->relativeL2);
    else
        return {};
    return text;
}

Verdict Tolerance::judgeFingerprint(double recorded, double replayed) const
{
    if (std::memcmp(&recorded, &replayed, sizeof(double)) == 0)
        return Verdict::Exact;
    if (!std::isfinite(recorded) || !std::isfinite(replayed))
        return Verdict::Diverged;
    const double scale = std::max(std::fabs(recorded), std::fabs(replayed));
    return std::fabs(recorded - replayed) <= fingerprintRelative * scale ? Verdict::WithinTolerance : Verdict::Diverged;
}

bool Tolerance::withinEnvelope(DType dtype, double difference, double scale, double& ratio) const
{
    const double own = unitRoundoff(dtype);
    const double u = own > 0.0 ? std::min(own, unitRoundoff(DType::F32)) : 0.0;
    ratio = u > 0.0 && scale > 0.0 && std::isfinite(scale) ? difference / (u * scale) : std::numeric_limits<double>::infinity();
    return std::isfinite(difference) && ratio <= envelope;
}

}  // namespace zkdv
