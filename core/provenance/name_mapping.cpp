#include "zkdv/provenance/name_mapping.h"

#include <map>
#include <set>
#include <tuple>

#include "zkdv/util/error.h"

namespace zkdv {

std::string NameMapping::modelName(std::string_view layoutName) const
{
    switch (kind) {
    case Kind::Same:
        return std::string(layoutName);
    case Kind::ModelAddsPrefix:
        return prefix + std::string(layoutName);
    case Kind::ModelDropsPrefix:
        if (layoutName.size() > prefix.size() && layoutName.substr(0, prefix.size()) == prefix)
            return std::string(layoutName.substr(prefix.size()));
        return {};
    }
    return std::string(layoutName);
}

std::string NameMapping::describe() const
{
    switch (kind) {
    case Kind::Same:
        return "the model's tensor names are the tape's layout names";
    case Kind::ModelAddsPrefix:
        return "the model's tensor names are \"" + prefix + "\" + the tape's layout names";
    case Kind::ModelDropsPrefix:
        return "the model's tensor names are the tape's layout names without \"" + prefix + "\"";
    }
    return {};
}

NameMapping chooseNameMapping(const std::vector<std::string>& layoutNames, const std::vector<std::string>& modelNames)
{
    const std::set<std::string, std::less<>> layout(layoutNames.begin(), layoutNames.end());
    const std::set<std::string, std::less<>> model(modelNames.begin(), modelNames.end());
    // Each hit is one layout name found under one candidate mapping; a mapping is one-to-one,
    // so a candidate's hits are the layout names it finds.
    std::map<std::tuple<NameMapping::Kind, std::string>, std::size_t> hits;
    for (const std::string& name : layoutNames)
        if (model.count(name))
            ++hits[{NameMapping::Kind::Same, std::string()}];
    for (const std::string& name : modelNames)
        for (std::size_t dot = name.find('.'); dot != std::string::npos && dot + 1 < name.size(); dot = name.find('.', dot + 1))
            if (layout.count(std::string_view(name).substr(dot + 1)))
                ++hits[{NameMapping::Kind::ModelAddsPrefix, name.substr(0, dot + 1)}];
    for (const std::string& name : layoutNames)
        for (std::size_t dot = name.find('.'); dot != std::string::npos && dot + 1 < name.size(); dot = name.find('.', dot + 1))
            if (model.count(std::string_view(name).substr(dot + 1)))
                ++hits[{NameMapping::Kind::ModelDropsPrefix, name.substr(0, dot + 1)}];
    std::size_t best = 0;
    std::vector<NameMapping> winners;
    for (const auto& [key, count] : hits) {
        NameMapping mapping{std::get<0>(key), std::get<1>(key)};
        if (count > best) {
            best = count;
            winners = {mapping};
        } else if (count == best) {
            winners.push_back(mapping);
        }
    }
    if (winners.empty())
        return NameMapping{};
    if (winners.size() > 1) {
        std::string text;
        for (const NameMapping& mapping : winners)
            text += (text.empty() ? "" : "; ") + mapping.describe();
        throw Error("the model's tensor names match the tape's layout in more than one way, each finding " + std::to_string(best) +
                    " of its " + std::to_string(layoutNames.size()) + " tensors: " + text);
    }
    return winners.front();
}

}  // namespace zkdv
