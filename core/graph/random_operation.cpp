#include "zkdv/graph/random_operation.h"

#include <algorithm>
#include <iterator>

namespace zkdv {

namespace {

// Substrings of the names of ATen's random operators (the seed's list, and attention, whose
// dropout_p draws). Only the fallback: a schema's Generator argument or seeded tag decides
// for every operator that has one (torch.poisson carries no marker but takes a generator).
constexpr const char* kRandomMarkers[] = {"bernoulli", "dropout", "exponential", "multinomial", "normal",
                                          "rand",      "uniform", "rrelu",       "scaled_dot_product"};

std::string_view baseName(std::string_view qualified)
{
    const std::size_t colons = qualified.find("::");
    if (colons != std::string_view::npos)
        qualified.remove_prefix(colons + 2);
    const std::size_t dot = qualified.find('.');
    return dot == std::string_view::npos ? qualified : qualified.substr(0, dot);
}

}  // namespace

bool drawsRandomNumbers(const OperatorRandomness& op)
{
    if (op.takesGenerator || op.taggedSeeded)
        return true;
    if (op.qualified.rfind("aten::", 0) != 0)
        return false;
    const std::string_view name = baseName(op.qualified);
    return std::any_of(std::begin(kRandomMarkers), std::end(kRandomMarkers), [&](const char* m) { return name.find(m) != std::string_view::npos; });
}

bool drawsNothing(std::string_view qualified, const FixedArgumentOf& argument)
{
    const std::string_view name = baseName(qualified);
    if (name == "scaled_dot_product_attention") {
        const FixedArgument p = argument(4, "dropout_p");
        return !p.given || (p.number && *p.number == 0.0);
    }
    if (name.find("dropout") != std::string_view::npos && name.find("scaled_dot_product") == std::string_view::npos) {
        const FixedArgument p = argument(1, "p");
        const FixedArgument train = argument(2, "train");
        return (p.number && *p.number == 0.0) || (train.flag && !*train.flag);
    }
    return false;
}

std::string randomOperationsRefusal(const std::set<std::string>& operators)
{
    std::string list;
    for (const std::string& op : operators)
        list += (list.empty() ? "" : ", ") + op;
    return "attested Torch code contains random operations (" + list +
           "); generate randomness outside the transition and include it in the prepared transaction batch";
}

}  // namespace zkdv
