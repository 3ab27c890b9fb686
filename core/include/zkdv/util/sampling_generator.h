#pragma once
// The seeded generator behind a tape's sampling policy (spec section 5.2): splitmix64, so
// the same seed selects the same sampled checks in every implementation.

#include <cstdint>

namespace zkdv {

class SamplingGenerator {
public:
    explicit SamplingGenerator(std::uint64_t seed) : state_(seed) {}

    std::uint64_t next()
    {
        std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    // Uniform in [0, 1): the top 53 bits of next().
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    std::uint64_t state_;
};

}  // namespace zkdv
