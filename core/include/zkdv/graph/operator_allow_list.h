#pragma once
// The ATen compute operators an exported-graph program may call (docs/program-operators.md):
// pure tensor arithmetic with no I/O, no randomness, no custom code and no effect outside its
// arguments, so replaying a program runs nothing but libtorch's own kernels.

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

// What an operator on the list does with its tensor arguments, for the write check
// (exported_graph.h): whether its result may be (or view) an argument, and which arguments it
// writes in place.
struct OperatorEffect {
    enum class Result {
        New,                  // a tensor of its own
        MayAliasFirst,        // its first argument, or a view of it (views, detach, in-place forms)
        MayAliasAnyArgument,  // one of its tensor arguments, or a view of one (einsum)
    };
    struct Write {
        std::size_t position;
        const char* name;
    };
    Result result = Result::New;
    std::vector<Write> writes;
};

// Whether `qualified` ("aten::linear", "aten::add.Tensor") is on the allow-list.
bool isAllowedOperator(std::string_view qualified);

// The effect of an operator on the list; nullopt for one that is not.
std::optional<OperatorEffect> allowedOperatorEffect(std::string_view qualified);

// Whether an operator (any, on the list or not) may return one of its arguments, or a view of
// it, although its schema marks no alias: composite operators that return their input when
// they have nothing to do (dropout with p 0, type_as of the same dtype, atleast_1d of a
// vector), and the "unsafe" views. The write checks of both program kinds treat their
// results as aliases.
bool mayReturnAnArgumentUnannotated(std::string_view qualified);

// The whole list, sorted, for documentation and tests.
std::vector<std::string> allowedOperators();

}  // namespace zkdv
