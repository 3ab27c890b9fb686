#pragma once
// What a tape's transactions did to their gradients (spec 5.1), summed up for a reader: each
// distinct list of transforms, how many transactions applied it and where it first and last
// appears (a run that clips only after warmup shows two entries: none, then the clip).

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/tape/tape_scanner.h"

namespace zkdv {

struct GradientTransformUse {
    std::string transforms;  // "clip_grad_norm_(max_norm=1, norm_type=2), then clip_grad_value_(…)"; empty: none
    std::uint64_t transactions = 0;
    std::uint64_t first = 0;
    std::uint64_t last = 0;
};

// A TapeVisitor that collects the uses, in the order they first appear. A tape with more
// distinct lists than kMaxUses (a max_norm changed at every step) keeps the first ones and
// counts the rest as `others`.
class GradientTransformSummary : public TapeVisitor {
public:
    static constexpr std::size_t kMaxUses = 16;
    void onTransaction(const TransactionRecord& record, const RecordLocation& location) override;
    const std::vector<GradientTransformUse>& uses() const { return uses_; }
    std::uint64_t others() const { return others_; }
    // Transactions whose GradScaler skipped the optimizer step (spec 5.6).
    std::uint64_t skipped() const { return skipped_; }
    // One line: "none", or each use with its transactions.
    std::string text(std::uint64_t transactionCount) const;

private:
    std::vector<GradientTransformUse> uses_;
    std::uint64_t others_ = 0;
    std::uint64_t skipped_ = 0;
};

}  // namespace zkdv
