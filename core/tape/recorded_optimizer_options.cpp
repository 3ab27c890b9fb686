#include "zkdv/tape/recorded_optimizer_options.h"

#include <cmath>
#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/scheduled_option.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/transaction_record.h"

namespace zkdv {

namespace {
constexpr std::size_t kPrefixLength = sizeof("optimizer/") - 1;

std::string number(double value)
{
    return std::isfinite(value) ? nlohmann::json(value).dump() : std::to_string(value);
}
}  // namespace

RecordedOptimizerOptions::RecordedOptimizerOptions(const RootRecord& root)
{
    const std::size_t groups = root.optimizerGroups.size();
    for (std::size_t g = 0; g < groups; ++g) {
        const nlohmann::json options = nlohmann::json::parse(root.optimizerGroups[g].optionsJson);
        for (const auto& [name, value] : options.items()) {
            if (!value.is_number())
                continue;
            if (!find(name))
                options_.push_back({name, std::vector<std::optional<double>>(groups), false});
            for (Option& option : options_)
                if (option.name == name)
                    option.perGroup[g] = value.get<double>();
        }
    }
    if (root.optimizerSchedule) {
        // The root parser made sure every group has each scheduled option as a number.
        for (Option& option : options_)
            option.scheduled = root.optimizerSchedule->schedules(option.name);
        // An element of an array option ("betas[0]", since 1.8) is an option of its own here.
        for (const std::string& entry : root.optimizerSchedule->options) {
            if (find(entry))
                continue;
            Option element{entry, std::vector<std::optional<double>>(groups), true};
            for (std::size_t g = 0; g < groups; ++g) {
                const nlohmann::json options = nlohmann::json::parse(root.optimizerGroups[g].optionsJson);
                if (const nlohmann::json* value = scheduledValue(options, entry))
                    element.perGroup[g] = value->get<double>();
            }
            options_.push_back(std::move(element));
        }
        epochRecorded_ = root.optimizerSchedule->checked();
        lastEpoch_ = root.optimizerSchedule->epoch;
    }
    const Option* lr = find("lr");
    lrRequired_ = groups > 0 && lr;
    if (lr)
        for (const std::optional<double>& value : lr->perGroup)
            lrRequired_ = lrRequired_ && value.has_value();
}

const RecordedOptimizerOptions::Option* RecordedOptimizerOptions::find(std::string_view name) const
{
    for (const Option& option : options_)
        if (option.name == name)
            return &option;
    return nullptr;
}

std::optional<std::string> RecordedOptimizerOptions::violation(const TransactionRecord& transaction)
{
    bool lrSeen = false;
    std::vector<bool> seen(options_.size(), false);
    for (const TensorView* tensor : transaction.optimizerValues) {
        const std::string_view name = std::string_view(tensor->name).substr(kPrefixLength);
        lrSeen = lrSeen || name == "lr";
        const Option* option = find(name);
        if (option)
            seen[static_cast<std::size_t>(option - options_.data())] = true;
        // The parser checked the shape: one F64 per group.
        const std::size_t groups = static_cast<std::size_t>(tensor->shape[0]);
        for (std::size_t g = 0; g < groups; ++g) {
            double recorded;
            std::memcpy(&recorded, tensor->data.data + g * sizeof recorded, sizeof recorded);
            if (!option || !option->perGroup[g])
                return "group " + std::to_string(g) + " option " + std::string(name) + " is " + number(recorded) +
                       " in the transaction, but the root's group " + std::to_string(g) + " has no numeric " + std::string(name);
            if (option->scheduled) {
                if (!std::isfinite(recorded))
                    return "group " + std::to_string(g) + " scheduled option " + std::string(name) + " is " + number(recorded) +
                           "; a scheduled value is a finite number";
                continue;
            }
            if (!(recorded == *option->perGroup[g]))
                return "group " + std::to_string(g) + " option " + std::string(name) + " is " + number(recorded) + " in the transaction, but " +
                       number(*option->perGroup[g]) + " in the root (only the options the root's optimizer.schedule names may change)";
        }
    }
    if (lrRequired_ && !lrSeen)
        return "optimizer/lr missing: every optimizer group has a numeric lr (group 0: " + number(*find("lr")->perGroup[0]) +
               "), which each transaction records";
    for (std::size_t i = 0; i < options_.size(); ++i)
        if (options_[i].scheduled && !seen[i])
            return "optimizer/" + options_[i].name + " missing: the root schedules " + options_[i].name + ", so each transaction records its values";
    if (epochRecorded_ != transaction.scheduleEpoch.has_value())
        return epochRecorded_ ? std::string("schedule_epoch missing: the root's schedule names a scheduler, whose epoch each transaction records")
                              : std::string("schedule_epoch present, but the root's schedule names no scheduler");
    if (epochRecorded_) {
        const std::uint64_t epoch = *transaction.scheduleEpoch;
        if (epoch < lastEpoch_ || epoch - lastEpoch_ > tape::kMaxScheduleEpochAdvance)
            return "schedule_epoch " + std::to_string(epoch) + " after " + std::to_string(lastEpoch_) +
                   ": the scheduler's epoch never goes back and advances by at most " + std::to_string(tape::kMaxScheduleEpochAdvance) +
                   " from one transaction to the next";
        lastEpoch_ = epoch;
    }
    return std::nullopt;
}

}  // namespace zkdv
