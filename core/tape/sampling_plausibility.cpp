#include "zkdv/tape/sampling_plausibility.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace zkdv {

double binomialLogLowerTail(std::uint64_t trials, std::uint64_t observed, double probability)
{
    if (observed >= trials || !(probability > 0.0))
        return 0.0;
    if (probability >= 1.0)
        return -std::numeric_limits<double>::infinity();
    const double n = static_cast<double>(trials);
    const double logP = std::log(probability), logQ = std::log1p(-probability);
    // The last term, then each earlier one from the ratio t(i-1)/t(i) = i/(n-i+1) * q/p,
    // summed relative to the largest term seen so far.
    const double k = static_cast<double>(observed);
    double term = std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) + k * logP + (n - k) * logQ;
    double largest = term, sum = 1.0;
    for (std::uint64_t i = observed; i > 0; --i) {
        const double di = static_cast<double>(i);
        const double logRatio = std::log(di) - std::log(n - di + 1.0) + logQ - logP;
        term += logRatio;
        if (term > largest) {
            sum = sum * std::exp(largest - term) + 1.0;
            largest = term;
        } else {
            sum += std::exp(term - largest);
        }
        // Past the mode the terms fall at least geometrically (the ratio only shrinks as i
        // does): once one is below 2^-60 of the largest and they halve, the rest cannot count.
        if (logRatio < -std::log(2.0) && term - largest < -60.0 * std::log(2.0))
            break;
    }
    return std::min(0.0, largest + std::log(sum));
}

double binomialLowerTail(std::uint64_t trials, std::uint64_t observed, double probability)
{
    return std::exp(binomialLogLowerTail(trials, observed, probability));
}

double CheckCountPlausibility::lowerTail() const { return std::pow(10.0, log10LowerTail); }

std::string probabilityText(double log10Probability)
{
    if (std::isinf(log10Probability))
        return "0";
    char buffer[64];
    if (log10Probability >= -3.0) {
        std::snprintf(buffer, sizeof buffer, "%.3g", std::pow(10.0, log10Probability));
        return buffer;
    }
    // Mantissa and exponent from the logarithm, so a tail far below a double's range prints too.
    double exponent = std::floor(log10Probability);
    double mantissa = std::pow(10.0, log10Probability - exponent);
    if (mantissa >= 9.95) {
        mantissa /= 10.0;
        exponent += 1.0;
    }
    std::snprintf(buffer, sizeof buffer, "%.1fe%.0f", mantissa, exponent);
    return buffer;
}

std::string CheckCountPlausibility::text(std::uint64_t trials) const
{
    char expectedText[32];
    std::snprintf(expectedText, sizeof expectedText, "%.3g", expected);
    return std::to_string(observed) + " of " + std::to_string(trials) + " (expected " + expectedText + ", P[X <= " + std::to_string(observed) +
           "] = " + probabilityText(log10LowerTail) + ")";
}

bool SamplingPlausibility::implausible() const
{
    const double threshold = std::log10(kImplausibleBelow);
    return update.log10LowerTail < threshold || state.log10LowerTail < threshold;
}

std::string SamplingPlausibility::text() const
{
    return "update checks " + update.text(transactions) + ", state checks " + state.text(transactions);
}

std::string SamplingPlausibility::finding() const
{
    if (!implausible())
        return "";
    return "the tape carries implausibly few sampled checks: " + text() +
           "; an honest recorder draws so few with probability below 1e-6. This is a sign that the draws were ground (record bytes "
           "varied until the next transaction drew no check, tape format section 5.2), so the checks the tape lacks were avoided "
           "on purpose";
}

namespace {

CheckCountPlausibility plausibilityOf(std::uint64_t trials, std::uint64_t observed, double probability)
{
    CheckCountPlausibility c;
    c.observed = observed;
    c.probability = probability;
    c.expected = static_cast<double>(trials) * (probability > 0.0 ? std::min(probability, 1.0) : 0.0);
    c.log10LowerTail = binomialLogLowerTail(trials, observed, probability) / std::log(10.0);
    return c;
}

}  // namespace

SamplingPlausibility samplingPlausibility(double updateProbability, double stateProbability, const DrawnCheckCounts& counts)
{
    SamplingPlausibility s;
    s.transactions = counts.transactions;
    s.update = plausibilityOf(counts.transactions, counts.updateChecks, updateProbability);
    s.state = plausibilityOf(counts.transactions, counts.stateChecks, stateProbability);
    return s;
}

}  // namespace zkdv
