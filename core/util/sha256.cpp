#include "zkdv/util/sha256.h"

#include <openssl/evp.h>

#include "zkdv/util/error.h"

namespace zkdv {

struct Sha256::Context {
    EVP_MD_CTX* ctx = nullptr;
    ~Context() { EVP_MD_CTX_free(ctx); }
};

namespace {
const EVP_MD* sha256Algorithm()
{
    // Fetched once: implicit fetching inside EVP_DigestInit costs a lock per call in OpenSSL 3.
    static EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
    return md ? md : EVP_sha256();
}

void initialise(EVP_MD_CTX* ctx)
{
    if (EVP_DigestInit_ex(ctx, sha256Algorithm(), nullptr) != 1)
        throw Error("OpenSSL could not initialise SHA-256");
}
}  // namespace

Sha256::Sha256() : context_(std::make_unique<Context>())
{
    context_->ctx = EVP_MD_CTX_new();
    if (!context_->ctx)
        throw Error("OpenSSL could not allocate a digest context");
    initialise(context_->ctx);
}

Sha256::~Sha256() = default;
Sha256::Sha256(Sha256&&) noexcept = default;
Sha256& Sha256::operator=(Sha256&&) noexcept = default;

Sha256& Sha256::update(ByteSpan bytes)
{
    if (bytes.size && EVP_DigestUpdate(context_->ctx, bytes.data, bytes.size) != 1)
        throw Error("OpenSSL SHA-256 update failed");
    return *this;
}

Digest Sha256::finish()
{
    Digest digest{};
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_->ctx, digest.data(), &length) != 1 || length != digest.size())
        throw Error("OpenSSL SHA-256 finalisation failed");
    initialise(context_->ctx);
    return digest;
}

Digest Sha256::of(ByteSpan bytes)
{
    Digest digest{};
    unsigned int length = 0;
    if (EVP_Digest(bytes.data, bytes.size, digest.data(), &length, sha256Algorithm(), nullptr) != 1)
        throw Error("OpenSSL SHA-256 failed");
    return digest;
}

std::string toHex(ByteSpan bytes)
{
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(bytes.size * 2, '0');
    for (std::size_t i = 0; i < bytes.size; ++i) {
        out[2 * i] = kDigits[bytes.data[i] >> 4];
        out[2 * i + 1] = kDigits[bytes.data[i] & 0xf];
    }
    return out;
}

std::string toHex(const Digest& digest) { return toHex(ByteSpan(digest.data(), digest.size())); }

std::optional<Digest> digestFromHex(std::string_view hex)
{
    if (hex.size() != 64)
        return std::nullopt;
    auto nibble = [](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    };
    Digest digest{};
    for (std::size_t i = 0; i < 32; ++i) {
        int high = nibble(hex[2 * i]), low = nibble(hex[2 * i + 1]);
        if (high < 0 || low < 0)
            return std::nullopt;
        digest[i] = static_cast<std::uint8_t>(high << 4 | low);
    }
    return digest;
}

}  // namespace zkdv
