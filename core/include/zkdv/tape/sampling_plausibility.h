#pragma once
// Whether a tape carries as many sampled checks as its own probabilities make likely (spec
// section 5.2, "What each guarantees"). Chain-bound draws can be steered by a forger who
// grinds each record's free bytes until the next transaction draws no check; the draws then
// stay consistent, so the reader accepts them, but they become rare. An honest recorder's
// count of update checks is Binomial(n, p_u) and of state checks Binomial(n, p_s), so a count
// whose lower tail is below kImplausibleBelow is flagged: a sign of grinding.

#include <cstdint>
#include <string>

namespace zkdv {

// Transactions of a tape, and how many carry each drawn check.
struct DrawnCheckCounts {
    std::uint64_t transactions = 0;
    std::uint64_t updateChecks = 0;  // carry the full deltas
    std::uint64_t stateChecks = 0;   // carry a state digest
};

// ln P[X <= observed] for X ~ Binomial(trials, probability): the exact sum of the terms,
// each in log space (no overflow or underflow for millions of trials). 0 (probability 1)
// when observed >= trials or probability <= 0; -infinity when probability >= 1 and
// observed < trials.
double binomialLogLowerTail(std::uint64_t trials, std::uint64_t observed, double probability);
// The same as a probability; underflows to 0 below about 1e-308.
double binomialLowerTail(std::uint64_t trials, std::uint64_t observed, double probability);

// One kind of check: how many were drawn, how many the probability predicts, and how likely
// so few are.
struct CheckCountPlausibility {
    std::uint64_t observed = 0;
    double probability = 0.0;
    double expected = 0.0;        // trials x probability
    double log10LowerTail = 0.0;  // log10 P[X <= observed]; -infinity when impossible
    double lowerTail() const;     // 10^log10LowerTail, 0 when it underflows
    // "0 of 96 (expected 24, P[X <= 0] = 1.0e-12)"
    std::string text(std::uint64_t trials) const;
};

struct SamplingPlausibility {
    static constexpr double kImplausibleBelow = 1e-6;
    std::uint64_t transactions = 0;
    CheckCountPlausibility update;
    CheckCountPlausibility state;
    // Either count's lower tail is below kImplausibleBelow.
    bool implausible() const;
    // "update checks 24 of 96 (…), state checks 20 of 96 (…)"
    std::string text() const;
    // The finding in words, for reports and verify/info ("" when plausible).
    std::string finding() const;
};

SamplingPlausibility samplingPlausibility(double updateProbability, double stateProbability, const DrawnCheckCounts& counts);

// "1.0e-12", "1e-124939" (beyond what a double holds), "0.42": a probability given as log10.
std::string probabilityText(double log10Probability);

}  // namespace zkdv
