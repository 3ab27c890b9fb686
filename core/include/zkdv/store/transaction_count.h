#pragma once
// A tape's transaction count as a case states it, checked against the rows it holds: what is
// sized from the count (a replay's selection, a report's statistics) must not trust a file
// someone else wrote.

#include <cstdint>

namespace zkdv {

class Database;

enum class CountCheck {
    Bounds,    // 0 ≤ stated ≤ what the file could hold, rows numbered 0 to stated − 1: two lookups
    CountRows  // also exactly `stated` rows: reads every row of the tape
};

// `stated` (tapes.transaction_count of tape `tapeId`) when the tape's rows agree with it;
// otherwise throws Error naming the tape, the case and what disagrees.
std::uint64_t checkedTransactionCount(Database& db, std::int64_t tapeId, std::int64_t stated, CountCheck check);

}  // namespace zkdv
