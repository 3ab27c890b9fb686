#pragma once
// Internal to core/report: the report's conclusion in words (headline, first-page warnings,
// the sampling statement), from the facts buildAuditReport gathered. docs/report.md gives
// the wording rules.

#include <string>
#include <vector>

#include "zkdv/report/audit_report.h"

namespace zkdv::report_detail {

// Fills report.passed, headline and warnings from the other members (tape status, program
// check, run status and counts, transactions).
void writeConclusion(ReportData& report);

// The sampling statement for a uniform random selection of `sampled` of `population`
// transactions with `failures` failures; the seed and who chose it for the sentence, which
// says what the bound rests on.
SamplingStatement samplingStatement(std::uint64_t population, std::uint64_t sampled, std::uint64_t failures, std::uint64_t seed,
                                    SeedSource seedSource);
// What the seed of a random audit means for its bound, in words.
std::string seedStatement(std::uint64_t seed, SeedSource seedSource);

// "0.0417" -> "4.17%": a fraction as a percentage with up to 3 significant decimals.
std::string percentText(double fraction);

}  // namespace zkdv::report_detail
