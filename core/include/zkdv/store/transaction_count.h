#pragma once
// A tape's transaction count as a case states it, checked against the rows it holds: what is
// sized from the count (a replay's selection, a report's statistics) must not trust a file
// someone else wrote.

#include <cstdint>

namespace zkdv {

class Database;

// `stated` (tapes.transaction_count of tape `tapeId`) when the tape holds exactly that many
// transaction rows, indexes 0 to stated − 1; otherwise throws Error naming the tape, the case
// and both numbers.
std::uint64_t checkedTransactionCount(Database& db, std::int64_t tapeId, std::int64_t stated);

}  // namespace zkdv
