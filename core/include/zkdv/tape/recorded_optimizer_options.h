#pragma once
// The rule a transaction's `optimizer/<option>` values and `schedule_epoch` obey (spec 3.3 and
// 5): static options are the root's for the whole tape; scheduled ones (since 1.6) are recorded
// by every transaction, and the scheduler's epoch never goes back. Which values a schedule
// allows is the replay's check (the schedule contracts), not the reader's.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

struct RootRecord;
struct TransactionRecord;

class RecordedOptimizerOptions {
public:
    explicit RecordedOptimizerOptions(const RootRecord& root);

    // Empty when `transaction`, the next transaction in tape order, obeys the rule (and then
    // its epoch becomes the one the next must not go below); otherwise what differs: which
    // group, which option, both values.
    std::optional<std::string> violation(const TransactionRecord& transaction);

private:
    struct Option {
        std::string name;
        std::vector<std::optional<double>> perGroup;  // absent: the group has no numeric value
        bool scheduled = false;
    };
    const Option* find(std::string_view name) const;

    std::vector<Option> options_;
    bool lrRequired_ = false;
    bool epochRecorded_ = false;   // the root's schedule names a scheduler
    std::uint64_t lastEpoch_ = 0;  // the root's, then the last transaction's
};

}  // namespace zkdv
