#pragma once
// Display filters over a tape's transactions, in the spirit of Wireshark's:
// `loss > 0.1 && verdict == diverged`, `sampled && !replayed`, `tensor contains "fc"`.
// A filter compiles to an SQL condition over the transaction table joined with a run's
// verdicts; every value travels as a bound parameter, never as SQL text. The grammar is in
// docs/display-filters.md.

#include <cstddef>
#include <string>
#include <variant>
#include <vector>

#include "zkdv/util/error.h"

namespace zkdv {

// A filter that does not parse or names an unknown field or value; says where (1-based
// character) and what was expected.
class DisplayFilterError : public Error {
public:
    DisplayFilterError(const std::string& message, std::size_t position)
        : Error("display filter, at character " + std::to_string(position) + ": " + message), position_(position)
    {
    }
    std::size_t position() const { return position_; }

private:
    std::size_t position_;
};

struct CompiledDisplayFilter {
    // A condition over `t` (transactions) and `v` (the run's verdicts, LEFT JOINed on ?2)
    // that reads parameters ?N from `firstParameter` on, in the order of `values`.
    std::string sql;
    std::vector<std::variant<double, std::string>> values;
};

// Throws DisplayFilterError. Parameters ?1 (tape id) and ?2 (run id) are the caller's.
CompiledDisplayFilter compileDisplayFilter(const std::string& text, int firstParameter = 3);

// True when `text` reads as a display filter (it has a comparison or logical operator, or is
// a bare field name such as `sampled`) rather than the plain-text search of the filter box.
bool looksLikeDisplayFilter(const std::string& text);

// The fields a filter can name, with what each means (for help and completion).
struct DisplayFilterField {
    const char* name;
    const char* meaning;
};
const std::vector<DisplayFilterField>& displayFilterFields();
// The comparisons that may follow field `name` ("loss": ==, !=, <, <=, >, >=; "verdict": ==,
// !=; "tensor": ==, !=, contains); none for a flag, which stands alone, or an unknown name.
std::vector<std::string> displayFilterComparisons(const std::string& name);

}  // namespace zkdv
