#include "zkdv/store/transaction_count.h"

#include <string>

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"

namespace zkdv {

std::uint64_t checkedTransactionCount(Database& db, std::int64_t tapeId, std::int64_t stated)
{
    // Three queries: min() and max() alone are lookups in the key, and count(*) alone scans
    // it; together they would step through every row.
    const auto one = [&](const char* sql) {
        Statement row = db.prepare(sql);
        row.bind(1, tapeId);
        return row.step() && !row.isNull(0) ? row.int64(0) : std::int64_t(-1);
    };
    const std::int64_t rows = one("SELECT count(*) FROM transactions WHERE tape_id = ?1");
    const bool consistent = rows == stated &&
                            (rows == 0 || (one("SELECT min(idx) FROM transactions WHERE tape_id = ?1") == 0 &&
                                           one("SELECT max(idx) FROM transactions WHERE tape_id = ?1") == rows - 1));
    if (!consistent)
        throw Error("tape " + std::to_string(tapeId) + " of case " + db.path() + " claims " + std::to_string(stated) +
                    " transactions but holds " + std::to_string(rows) +
                    " (numbered 0 on, one each); the case was damaged or edited outside ZKDV");
    return static_cast<std::uint64_t>(stated);
}

}  // namespace zkdv
