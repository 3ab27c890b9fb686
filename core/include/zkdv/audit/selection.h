#pragma once
// Which transactions an audit replays: the selection specs of `zkdv-audit replay --select`,
// and the deterministic choice they make (the same spec and seed choose the same
// transactions on every machine; docs/replay.md gives the algorithms).

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/error.h"

namespace zkdv {

// A spec that does not parse; the message quotes it and lists the accepted forms.
class SelectionError : public Error {
public:
    using Error::Error;
};

struct SelectionSpec {
    enum class Kind { All, Ids, Range, Random, Stratified, TopQ, Sampled };
    Kind kind = Kind::All;
    std::vector<std::uint64_t> ids;  // Ids: as written (duplicates allowed, removed when selecting)
    std::uint64_t first = 0;         // Range: inclusive bounds
    std::uint64_t last = 0;
    std::uint64_t count = 0;         // Random, Stratified, TopQ: a count ...
    double percent = 0.0;            // ... or, when isPercent, a percentage in (0, 100]
    bool isPercent = false;

    // "all", "ids:3,17,40", "range:100-199", "random:50", "random:5%", "stratified:50",
    // "stratified:5%", "topq:10", "topq:1%", "sampled". Throws SelectionError.
    static SelectionSpec parse(const std::string& text);
    std::string toString() const;  // the canonical text, parse(toString()) == *this
    bool usesSeed() const { return kind == Kind::Random || kind == Kind::Stratified; }
    bool operator==(const SelectionSpec& other) const;
};

// What a selection needs to know about a tape's transactions.
struct SelectionInput {
    std::uint64_t transactionCount = 0;
    std::uint64_t snapshotInterval = tape::kDefaultSnapshotInterval;
    std::size_t parameterCount = 0;
    // Row-major [transactionCount][parameterCount]: each parameter's recorded update L2 norm
    // (needed by TopQ only; may be empty otherwise).
    std::vector<double> updateL2;
    // Per transaction: true when it carries recorded deltas or a state digest (Sampled).
    std::vector<bool> hasSampledCheck;
};

// The chosen transaction indexes, ascending and unique. Ids/Range outside the tape throw
// SelectionError naming the index and the tape's transaction count; counts larger than
// the tape select everything.
//  - Random: n (or ceil(p% of N)) of N uniformly without replacement (Floyd's algorithm on
//    a splitmix64 stream seeded with `seed`).
//  - Stratified: the count split over snapshot segments in proportion to their sizes
//    (largest remainder, ties to the earlier segment), uniform within each segment, one
//    generator stream in segment order.
//  - TopQ: for every parameter, the q transactions with the largest recorded update L2
//    (ties to the lower index), united; q% means ceil(q% of N) per parameter.
std::vector<std::uint64_t> selectTransactions(const SelectionSpec& spec, std::uint64_t seed, const SelectionInput& input);

}  // namespace zkdv
