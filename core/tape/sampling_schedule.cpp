#include "zkdv/tape/sampling_schedule.h"

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/little_endian.h"

namespace zkdv {

std::string_view samplingGuaranteeName(SamplingGuarantee guarantee)
{
    return guarantee == SamplingGuarantee::ChainBound ? "chain-bound" : "seed-chosen";
}

std::string_view samplingGuaranteeText(SamplingGuarantee guarantee)
{
    return guarantee == SamplingGuarantee::ChainBound ? "chain-bound" : "seed-chosen (pre-1.3, weaker)";
}

SamplingGuarantee samplingGuaranteeOf(int formatMinor)
{
    return formatMinor >= tape::kChainBoundSamplingMinor ? SamplingGuarantee::ChainBound : SamplingGuarantee::SeedChosen;
}

SamplingSchedule::SamplingSchedule(const RootRecord& root)
    : guarantee_(samplingGuaranteeOf(root.formatMinor)), updateProbability_(root.updateCheckProbability),
      stateProbability_(root.stateCheckProbability), seed_(root.samplingSeed), seedStream_(root.samplingSeed)
{
}

SampledChecks SamplingSchedule::next(const Digest& anchor)
{
    if (guarantee_ == SamplingGuarantee::SeedChosen)
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
