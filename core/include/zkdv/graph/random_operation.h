#pragma once
// The one random-operation rule of both program kinds (docs/tape-format.md section 4): which
// operator calls draw from a random generator, so that the program is refused and the
// randomness is asked for in the batch instead.

#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>

namespace zkdv {

// What the rule knows of an operator: its name ("aten::poisson"), and where a schema is at hand
// (the torch side), whether it takes a Generator argument and whether libtorch tags it
// nondeterministic_seeded. Either schema fact decides; the name is the fallback where no
// schema says (the audit side reads names only, and there the allow-list already closes the
// set of operators).
struct OperatorRandomness {
    std::string_view qualified;
    bool takesGenerator = false;
    bool taggedSeeded = false;
};

bool drawsRandomNumbers(const OperatorRandomness& op);

// How a program fixes one argument of a call: `given` false when the call omits it (the
// schema's default applies), else the number or flag it is fixed to, if the program fixes it.
struct FixedArgument {
    bool given = true;
    std::optional<double> number;
    std::optional<bool> flag;
};
using FixedArgumentOf = std::function<FixedArgument(std::size_t position, const char* name)>;

// Whether a random operator's call is switched off so that it returns without touching the
// generator: a dropout with p fixed at 0 or train fixed false, an attention whose dropout_p
// is omitted or fixed at 0.
bool drawsNothing(std::string_view qualified, const FixedArgumentOf& argument);

// The seed's refusal naming the random operators found.
std::string randomOperationsRefusal(const std::set<std::string>& operators);

}  // namespace zkdv
