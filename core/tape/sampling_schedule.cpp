#include "zkdv/tape/sampling_schedule.h"

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/little_endian.h"

namespace zkdv {

namespace {

// From this minor version on, the spec names the sampling generator and its draw order
// (section 5.2, root sampling.generator); a 1.0 tape names no draw rule.
constexpr int kNamedSamplingMinor = 1;

}  // namespace

constexpr std::string_view kChainBoundText =
    "chain-bound (binds an honest recorder only: a forger who rewrites records can steer the draws for about two record "
    "hashes a transaction, so no outcome rests on the sampled checks; the replay decides)";

std::string_view samplingGuaranteeName(SamplingGuarantee guarantee)
{
    switch (guarantee) {
    case SamplingGuarantee::Unenforced: return "unenforced";
    case SamplingGuarantee::SeedChosen: return "seed-chosen";
    case SamplingGuarantee::ChainBound: return "chain-bound";
    }
    return "chain-bound";
}

std::string_view samplingGuaranteeText(SamplingGuarantee guarantee)
{
    switch (guarantee) {
    case SamplingGuarantee::Unenforced: return "unenforced (format 1.0 names no draw rule)";
    case SamplingGuarantee::SeedChosen: return "seed-chosen (pre-1.3, weaker)";
    // Issue 48, item 12: bound to the chain, the draws still bind an honest recorder only; a
    // forger who rewrites records re-grinds them for about two record hashes a step.
    case SamplingGuarantee::ChainBound: return kChainBoundText;
    }
    return kChainBoundText;
}

SamplingGuarantee samplingGuaranteeOf(int formatMinor)
{
    if (formatMinor >= tape::kChainBoundSamplingMinor)
        return SamplingGuarantee::ChainBound;
    // 1.1 named the generator and the draw order (spec 5.2); 1.0 said only "a generator seeded
    // with sampling.seed", and its one writer started splitmix64 at seed ^ 0x5A4B4456.
    return formatMinor >= kNamedSamplingMinor ? SamplingGuarantee::SeedChosen : SamplingGuarantee::Unenforced;
}

SamplingSchedule::SamplingSchedule(const RootRecord& root)
    : guarantee_(samplingGuaranteeOf(root.formatMinor)), updateProbability_(root.updateCheckProbability),
      stateProbability_(root.stateCheckProbability), seed_(root.samplingSeed), seedStream_(root.samplingSeed)
{
}

SampledChecks SamplingSchedule::next(const Digest& anchor)
{
    if (guarantee_ != SamplingGuarantee::ChainBound)
        return select(seedStream_);
    SamplingGenerator keyed(seed_ ^ readLittleEndian<std::uint64_t>(anchor.data()));
    return select(keyed);
}

SampledChecks SamplingSchedule::select(SamplingGenerator& generator) const
{
    SampledChecks checks;
    checks.updateDraw = generator.uniform();
    checks.stateDraw = generator.uniform();
    checks.update = checks.updateDraw < updateProbability_;
    checks.state = checks.stateDraw < stateProbability_;
    return checks;
}

}  // namespace zkdv
