// Exact one-sided upper confidence bounds on the fraction of bad transactions from a uniform
// random sample (docs/report.md, "The statistical statement").

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "zkdv/report/audit_report.h"

namespace zkdv {

namespace {

// log C(n, r) in long double (lgammal keeps ~18 significant digits on x86-64).
long double logChoose(std::uint64_t n, std::uint64_t r)
{
    const long double a = static_cast<long double>(n);
    const long double b = static_cast<long double>(r);
    return std::lgamma(a + 1.0L) - std::lgamma(b + 1.0L) - std::lgamma(a - b + 1.0L);
}

void checkArguments(std::uint64_t population, std::uint64_t sampled, std::uint64_t failures, double confidence)
{
    if (sampled > population)
        throw std::invalid_argument("hypergeometric bound: sample larger than the population");
    if (failures > sampled)
        throw std::invalid_argument("confidence bound: more failures than sampled transactions");
    if (!(confidence > 0.0 && confidence < 1.0))
        throw std::invalid_argument("confidence bound: confidence must lie in (0, 1)");
}

// P[Bin(n, p) <= k].
long double binomialCdf(std::uint64_t n, std::uint64_t k, long double p)
{
    if (p <= 0.0L)
        return 1.0L;
    if (p >= 1.0L)
        return k >= n ? 1.0L : 0.0L;
    const long double logP = std::log(p);
    const long double logQ = std::log1p(-p);
    long double sum = 0.0L;
    for (std::uint64_t x = 0; x <= k && x <= n; ++x)
        sum += std::exp(logChoose(n, x) + static_cast<long double>(x) * logP + static_cast<long double>(n - x) * logQ);
    return std::min(sum, 1.0L);
}

}  // namespace

double hypergeometricCdf(std::uint64_t population, std::uint64_t bad, std::uint64_t sampled, std::uint64_t failures)
{
    if (bad > population || sampled > population)
        throw std::invalid_argument("hypergeometric CDF: bad or sampled larger than the population");
    const std::uint64_t good = population - bad;
    // X ranges over [max(0, n - good), min(n, bad)].
    const std::uint64_t lowest = sampled > good ? sampled - good : 0;
    const std::uint64_t highest = std::min(sampled, bad);
    if (failures < lowest)
        return 0.0;
    if (failures >= highest)
        return 1.0;
    const long double total = logChoose(population, sampled);
    long double sum = 0.0L;
    for (std::uint64_t x = lowest; x <= failures; ++x)
        sum += std::exp(logChoose(bad, x) + logChoose(good, sampled - x) - total);
    return static_cast<double>(std::min(sum, 1.0L));
}

std::uint64_t hypergeometricUpperCount(std::uint64_t population, std::uint64_t sampled, std::uint64_t failures, double confidence)
{
    checkArguments(population, sampled, failures, confidence);
    const double alpha = 1.0 - confidence;
    // P[X <= k | B] does not increase with B, and is 1 at B = k: bisect for the largest B
    // with P >= alpha.
    std::uint64_t low = failures;    // satisfies
    std::uint64_t high = population;  // may or may not
    if (hypergeometricCdf(population, high, sampled, failures) >= alpha)
        return high;
    while (high - low > 1) {
        const std::uint64_t middle = low + (high - low) / 2;
        if (hypergeometricCdf(population, middle, sampled, failures) >= alpha)
            low = middle;
        else
            high = middle;
    }
    return low;
}

double hypergeometricUpperBound(std::uint64_t population, std::uint64_t sampled, std::uint64_t failures, double confidence)
{
    if (population == 0)
        throw std::invalid_argument("hypergeometric bound: empty population");
    return static_cast<double>(hypergeometricUpperCount(population, sampled, failures, confidence)) / static_cast<double>(population);
}

double clopperPearsonUpperBound(std::uint64_t sampled, std::uint64_t failures, double confidence)
{
    if (failures > sampled)
        throw std::invalid_argument("confidence bound: more failures than sampled transactions");
    if (!(confidence > 0.0 && confidence < 1.0))
        throw std::invalid_argument("confidence bound: confidence must lie in (0, 1)");
    if (sampled == 0 || failures == sampled)
        return 1.0;
    const long double alpha = 1.0L - static_cast<long double>(confidence);
    if (failures == 0)  // closed form: (1 - p)^n = alpha
        return static_cast<double>(-std::expm1(std::log(alpha) / static_cast<long double>(sampled)));
    // The p with P[Bin(n, p) <= k] = alpha (the CDF decreases in p): bisection to the
    // resolution of a double.
    long double low = 0.0L, high = 1.0L;
    for (int i = 0; i < 200 && high - low > 1e-18L; ++i) {
        const long double middle = (low + high) / 2.0L;
        if (binomialCdf(sampled, failures, middle) > alpha)
            low = middle;
        else
            high = middle;
    }
    return static_cast<double>(high);
}

}  // namespace zkdv
