#pragma once
// Which transactions must carry sampled checks (spec section 5.2): the one computation of
// the draws that the recorder, the demo writer and the verifier share.

#include <cstdint>
#include <string_view>

#include "zkdv/util/sampling_generator.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

struct RootRecord;

// What the draws bind (spec 5.2). Format 1.0 names no draw rule (no generator, no draw
// order), so a reader cannot say which of its transactions had to carry checks and enforces
// none of that: Unenforced. In formats 1.1 and 1.2 the seed alone decides which transactions
// are checked, so whoever picks the seed can pick them; since 1.3 each transaction's draws
// are keyed by the digest of the transaction record before it, so they follow the recorded
// chain. Whatever the guarantee, the checks a transaction does carry are read and replayed.
enum class SamplingGuarantee { Unenforced, SeedChosen, ChainBound };
// "unenforced", "seed-chosen" or "chain-bound", as verify and info show it.
std::string_view samplingGuaranteeName(SamplingGuarantee guarantee);
// For people: "chain-bound", "seed-chosen (pre-1.3, weaker)" or
// "unenforced (format 1.0 names no draw rule)".
std::string_view samplingGuaranteeText(SamplingGuarantee guarantee);
SamplingGuarantee samplingGuaranteeOf(int formatMinor);

// The draws of one transaction and what they select.
struct SampledChecks {
    double updateDraw = 0.0;
    double stateDraw = 0.0;
    bool update = false;  // the full deltas must be recorded
    bool state = false;   // the state digest must be recorded
};

class SamplingSchedule {
public:
    explicit SamplingSchedule(const RootRecord& root);

    SamplingGuarantee guarantee() const { return guarantee_; }
    // Whether a reader refuses a transaction whose checks are not the drawn ones: not for an
    // unenforced (1.0) tape.
    bool enforced() const { return guarantee_ != SamplingGuarantee::Unenforced; }
    // The checks of the next transaction (call once per transaction, in transaction order).
    // `anchor` is the digest of the transaction record before it, or of the root record for
    // transaction 0; seed-chosen tapes do not use it. For an unenforced tape these are the
    // draws of the seed-chosen rule, which the tape need not follow.
    SampledChecks next(const Digest& anchor);

private:
    SampledChecks select(SamplingGenerator& generator) const;

    SamplingGuarantee guarantee_;
    double updateProbability_;
    double stateProbability_;
    std::uint64_t seed_;
    SamplingGenerator seedStream_;  // the one stream of a seed-chosen (or unenforced) tape
};

}  // namespace zkdv
