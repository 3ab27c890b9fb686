#pragma once
// The root's optimizer options, static for the whole tape (spec section 3), and the check
// that a transaction's `optimizer/<option>` values are exactly those.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

struct RootRecord;
struct TransactionRecord;

class StaticOptimizerOptions {
public:
    explicit StaticOptimizerOptions(const RootRecord& root);

    // Empty when `transaction` records the root's values (and optimizer/lr whenever every
    // group has a numeric lr); otherwise what differs: which group, which option, both values.
    std::optional<std::string> mismatch(const TransactionRecord& transaction) const;

private:
    struct Option {
        std::string name;
        std::vector<std::optional<double>> perGroup;  // absent: the group has no numeric value
    };
    const Option* find(std::string_view name) const;

    std::vector<Option> options_;
    bool lrRequired_ = false;
};

}  // namespace zkdv
