#include "zkdv/tape/static_optimizer_options.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/transaction_record.h"

namespace zkdv {

namespace {
constexpr std::size_t kPrefixLength = sizeof("optimizer/") - 1;

std::string number(double value)
{
    return nlohmann::json(value).dump();
}
}  // namespace

StaticOptimizerOptions::StaticOptimizerOptions(const RootRecord& root)
{
    const std::size_t groups = root.optimizerGroups.size();
    for (std::size_t g = 0; g < groups; ++g) {
        const nlohmann::json options = nlohmann::json::parse(root.optimizerGroups[g].optionsJson);
        for (const auto& [name, value] : options.items()) {
            if (!value.is_number())
                continue;
            if (!find(name))
                options_.push_back({name, std::vector<std::optional<double>>(groups)});
            for (Option& option : options_)
                if (option.name == name)
                    option.perGroup[g] = value.get<double>();
        }
    }
    const Option* lr = find("lr");
    lrRequired_ = groups > 0 && lr;
    if (lr)
        for (const std::optional<double>& value : lr->perGroup)
            lrRequired_ = lrRequired_ && value.has_value();
}

const StaticOptimizerOptions::Option* StaticOptimizerOptions::find(std::string_view name) const
{
    for (const Option& option : options_)
        if (option.name == name)
            return &option;
    return nullptr;
}

std::optional<std::string> StaticOptimizerOptions::mismatch(const TransactionRecord& transaction) const
{
    bool lrSeen = false;
    for (const TensorView* tensor : transaction.optimizerValues) {
        const std::string_view name = std::string_view(tensor->name).substr(kPrefixLength);
        lrSeen = lrSeen || name == "lr";
        const Option* option = find(name);
        // The parser checked the shape: one F64 per group.
        const std::size_t groups = static_cast<std::size_t>(tensor->shape[0]);
        for (std::size_t g = 0; g < groups; ++g) {
            double recorded;
            std::memcpy(&recorded, tensor->data.data + g * sizeof recorded, sizeof recorded);
            if (!option || !option->perGroup[g])
                return "group " + std::to_string(g) + " option " + std::string(name) + " is " + number(recorded) +
                       " in the transaction, but the root's group " + std::to_string(g) + " has no numeric " + std::string(name);
            if (!(recorded == *option->perGroup[g]))
                return "group " + std::to_string(g) + " option " + std::string(name) + " is " + number(recorded) + " in the transaction, but " +
                       number(*option->perGroup[g]) + " in the root (optimizer options are static for the whole tape)";
        }
    }
    if (lrRequired_ && !lrSeen)
        return "optimizer/lr missing: every optimizer group has a numeric lr (group 0: " + number(*find("lr")->perGroup[0]) +
               "), which each transaction records";
    return std::nullopt;
}

}  // namespace zkdv
