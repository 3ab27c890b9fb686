#pragma once
// The exception of type E that a call throws, for tests that check an error's message.

#include <optional>

namespace zkdv::test {

// The exception `f` throws, or nullopt when it returns normally.
template <class E, class F>
std::optional<E> caught(F&& f)
{
    try {
        f();
    } catch (const E& e) {
        return e;
    }
    return std::nullopt;
}

}  // namespace zkdv::test
