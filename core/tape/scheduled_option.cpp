#include "zkdv/tape/scheduled_option.h"

namespace zkdv {

namespace {
// Array options are short (betas, etas, step_sizes); a longer index names nothing real.
constexpr std::size_t kMostElements = 16;

template <typename Json>
Json* find(Json& options, std::string_view entry)
{
    const std::optional<ScheduledOptionName> name = parseScheduledOptionName(entry);
    if (!name || !options.is_object())
        return nullptr;
    auto it = options.find(name->option);
    if (it == options.end())
        return nullptr;
    if (!name->element)
        return &*it;
    if (!it->is_array() || *name->element >= it->size())
        return nullptr;
    return &(*it)[*name->element];
}
}  // namespace

std::optional<ScheduledOptionName> parseScheduledOptionName(std::string_view entry)
{
    if (entry.empty())
        return std::nullopt;
    const std::size_t open = entry.find('[');
    if (open == std::string_view::npos)
        return entry.find(']') == std::string_view::npos ? std::optional<ScheduledOptionName>(ScheduledOptionName{std::string(entry), {}})
                                                          : std::nullopt;
    const std::string_view digits = entry.substr(open + 1, entry.size() - open - 2);
    if (open == 0 || entry.back() != ']' || digits.empty() || digits.size() > 2 || (digits.size() > 1 && digits[0] == '0'))
        return std::nullopt;
    std::size_t element = 0;
    for (char c : digits) {
        if (c < '0' || c > '9')
            return std::nullopt;
        element = element * 10 + static_cast<std::size_t>(c - '0');
    }
    if (element >= kMostElements || entry.substr(0, open).find_first_of("[]") != std::string_view::npos)
        return std::nullopt;
    return ScheduledOptionName{std::string(entry.substr(0, open)), element};
}

const nlohmann::json* scheduledValue(const nlohmann::json& options, std::string_view entry) { return find(options, entry); }

nlohmann::json* scheduledValue(nlohmann::json& options, std::string_view entry) { return find(options, entry); }

}  // namespace zkdv
