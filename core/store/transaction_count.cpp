#include "zkdv/store/transaction_count.h"

#include <string>

#include "zkdv/store/database.h"
#include "zkdv/util/error.h"

namespace zkdv {

namespace {
// Every transaction row holds at least its 32-byte record digest, so a case cannot hold more
// rows than its bytes / 32.
constexpr std::int64_t kMinimumRowBytes = 32;
}  // namespace

std::uint64_t checkedTransactionCount(Database& db, std::int64_t tapeId, std::int64_t stated, CountCheck check)
{
    const auto one = [&](const char* sql) {
        Statement row = db.prepare(sql);
        row.bind(1, tapeId);
        return row.step() && !row.isNull(0) ? row.int64(0) : std::int64_t(-1);
    };
    const std::int64_t fileBytes = db.queryInt64("PRAGMA page_count").value_or(0) * db.queryInt64("PRAGMA page_size").value_or(0);
    // min() and max() are lookups in the key (tape_id, idx); count(*) reads every row of the
    // tape (0.6 s for a million), so only callers that read them all anyway ask for it.
    const std::int64_t first = one("SELECT min(idx) FROM transactions WHERE tape_id = ?1");
    const std::int64_t last = one("SELECT max(idx) FROM transactions WHERE tape_id = ?1");
    std::string problem;
    if (stated < 0 || stated > fileBytes / kMinimumRowBytes)
        problem = "a case of " + std::to_string(fileBytes) + " bytes cannot hold that many";
    else if (stated == 0 ? first != -1 : first != 0 || last != stated - 1)
        problem = first == -1 ? "it holds none" : "its rows are numbered " + std::to_string(first) + " to " + std::to_string(last);
    else if (check == CountCheck::CountRows && one("SELECT count(*) FROM transactions WHERE tape_id = ?1") != stated)
        problem = "it holds " + std::to_string(one("SELECT count(*) FROM transactions WHERE tape_id = ?1")) + " rows";
    if (!problem.empty())
        throw Error("tape " + std::to_string(tapeId) + " of case " + db.path() + " claims " + std::to_string(stated) +
                    " transactions, but " + problem + "; the case was damaged or edited outside ZKDV");
    return static_cast<std::uint64_t>(stated);
}

}  // namespace zkdv
