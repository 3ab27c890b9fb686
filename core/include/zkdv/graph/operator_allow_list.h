#pragma once
// The ATen compute operators an exported-graph program may call (docs/program-operators.md):
// pure tensor arithmetic with no I/O, no randomness, no custom code and no effect outside its
// arguments, so replaying a program runs nothing but libtorch's own kernels.

#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

// Whether `qualified` ("aten::linear", "aten::add.Tensor") is on the allow-list.
bool isAllowedOperator(std::string_view qualified);

// Whether the operator draws random numbers (the seed's markers: bernoulli, dropout,
// exponential, multinomial, normal, rand*, uniform, rrelu, and attention's dropout).
bool isRandomOperator(std::string_view qualified);

// The whole list, sorted, for documentation and tests.
std::vector<std::string> allowedOperators();

}  // namespace zkdv
