#pragma once
// SHA-256, the one hashing routine of the project (OpenSSL EVP underneath).

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zkdv/util/byte_span.h"

namespace zkdv {

using Digest = std::array<std::uint8_t, 32>;

// Incremental hashing; one instance per thread.
class Sha256 {
public:
    Sha256();
    ~Sha256();
    Sha256(Sha256&&) noexcept;
    Sha256& operator=(Sha256&&) noexcept;
    Sha256(const Sha256&) = delete;
    Sha256& operator=(const Sha256&) = delete;

    Sha256& update(ByteSpan bytes);
    Sha256& update(std::string_view text) { return update(ByteSpan(text)); }
    // Returns the digest and resets the state for a new message.
    Digest finish();

    static Digest of(ByteSpan bytes);

private:
    struct Context;
    std::unique_ptr<Context> context_;
};

std::string toHex(const Digest& digest);
std::string toHex(ByteSpan bytes);
// nullopt unless `hex` is exactly 64 hex digits.
std::optional<Digest> digestFromHex(std::string_view hex);

}  // namespace zkdv
