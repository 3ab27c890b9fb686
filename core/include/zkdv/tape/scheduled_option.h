#pragma once
// An entry of a root's optimizer.schedule.options (spec 3.3): the name of a numeric option
// ("lr", "momentum"), or since 1.8 one element of an array option, "name[i]" ("betas[0]", the
// beta that OneCycleLR and CyclicLR cycle while the other stays). A transaction records its
// values as "optimizer/<entry>", whichever form it has.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace zkdv {

struct ScheduledOptionName {
    std::string option;                  // the group option: "lr", "betas"
    std::optional<std::size_t> element;  // the element of its array, for "betas[0]"
};

// Reads an entry; nullopt when it is neither a name nor name[i] (i in 0..15, no leading zeros).
std::optional<ScheduledOptionName> parseScheduledOptionName(std::string_view entry);

// The value an entry names in one group's options (the number, or what stands where it
// should be); nullptr when the group has no such option or element.
const nlohmann::json* scheduledValue(const nlohmann::json& options, std::string_view entry);
nlohmann::json* scheduledValue(nlohmann::json& options, std::string_view entry);

}  // namespace zkdv
