#include "zkdv/util/signing_key.h"

#include <openssl/bio.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include <fstream>
#include <sstream>

#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

namespace {

struct PkeyFree {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

// Files people hand over: a key file is small; anything past this is not one.
constexpr std::size_t kMaxKeyFileBytes = 64 * 1024;

std::string readSmallFile(const std::filesystem::path& file, const std::string& what)
{
    std::ifstream in(file, std::ios::binary);
    if (!in)
        throw Error("cannot read the " + what + " " + file.string());
    std::string text(kMaxKeyFileBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    if (text.size() > kMaxKeyFileBytes)
        throw Error("the " + what + " " + file.string() + " is larger than a key file can be (" + std::to_string(kMaxKeyFileBytes) + " bytes)");
    return text;
}

// The algorithm of `key`, or an Error naming `where` for keys this format does not sign with.
KeyAlgorithm algorithmOf(EVP_PKEY* key, const std::string& where)
{
    if (EVP_PKEY_get_id(key) == EVP_PKEY_ED25519)
        return KeyAlgorithm::Ed25519;
    if (EVP_PKEY_get_id(key) == EVP_PKEY_EC) {
        char group[64] = {};
        std::size_t length = 0;
        if (EVP_PKEY_get_utf8_string_param(key, "group", group, sizeof group, &length) == 1 && std::string(group) == "prime256v1")
            return KeyAlgorithm::EcdsaP256;
        throw Error(where + " is an EC key on curve " + (group[0] ? std::string(group) : std::string("(unknown)")) +
                    "; tapes are signed with P-256 (prime256v1) or Ed25519 keys");
    }
    throw Error(where + " is neither a P-256 nor an Ed25519 key");
}

std::vector<std::uint8_t> spkiDer(EVP_PKEY* key)
{
    const int length = i2d_PUBKEY(key, nullptr);
    if (length <= 0)
        throw Error("OpenSSL could not encode a public key");
    std::vector<std::uint8_t> der(static_cast<std::size_t>(length));
    unsigned char* out = der.data();
    i2d_PUBKEY(key, &out);
    return der;
}

// The text `write` puts into a memory BIO (a PEM encoder); empty when it fails.
template <class Write>
std::string pemText(Write write)
{
    BIO* bio = BIO_new(BIO_s_mem());
    std::string text;
    if (bio && write(bio) == 1) {
        char* data = nullptr;
        const long length = BIO_get_mem_data(bio, &data);
        text.assign(data, static_cast<std::size_t>(length));
    }
    BIO_free(bio);
    return text;
}

const EVP_MD* digestFor(KeyAlgorithm algorithm) { return algorithm == KeyAlgorithm::Ed25519 ? nullptr : EVP_sha256(); }

}  // namespace

std::string keyAlgorithmName(KeyAlgorithm algorithm)
{
    return algorithm == KeyAlgorithm::Ed25519 ? "ed25519" : "ecdsa-p256-sha256";
}

struct VerifyingKey::Handle {
    Pkey key;
};

VerifyingKey::VerifyingKey(std::shared_ptr<Handle> handle, KeyAlgorithm algorithm)
    : handle_(std::move(handle)), algorithm_(algorithm), keyId_(toHex(Sha256::of(ByteSpan(spkiDer(handle_->key.get())))))
{
}

VerifyingKey::VerifyingKey(const VerifyingKey&) = default;
VerifyingKey& VerifyingKey::operator=(const VerifyingKey&) = default;
VerifyingKey::VerifyingKey(VerifyingKey&&) noexcept = default;
VerifyingKey& VerifyingKey::operator=(VerifyingKey&&) noexcept = default;
VerifyingKey::~VerifyingKey() = default;

VerifyingKey VerifyingKey::fromPem(const std::string& pem, const std::string& where)
{
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    if (!bio)
        throw Error("OpenSSL could not read " + where);
    Pkey key(PEM_read_bio_PUBKEY(bio, nullptr, nullptr, nullptr));
    if (!key) {
        BIO_reset(bio);
        key.reset(PEM_read_bio_PrivateKey(bio, nullptr, nullptr, const_cast<char*>("")));
    }
    BIO_free(bio);
    if (!key)
        throw Error(where + " is not a PEM public key (-----BEGIN PUBLIC KEY-----) or unencrypted private key");
    const KeyAlgorithm algorithm = algorithmOf(key.get(), where);
    // Only the public half is kept, whatever the file held.
    const std::vector<std::uint8_t> der = spkiDer(key.get());
    const unsigned char* in = der.data();
    auto handle = std::make_shared<Handle>();
    handle->key.reset(d2i_PUBKEY(nullptr, &in, static_cast<long>(der.size())));
    if (!handle->key)
        throw Error("OpenSSL could not read the public half of " + where);
    return VerifyingKey(std::move(handle), algorithm);
}

VerifyingKey VerifyingKey::fromPemFile(const std::filesystem::path& file)
{
    return fromPem(readSmallFile(file, "key file"), "the key file " + file.string());
}

std::string VerifyingKey::pem() const
{
    return pemText([this](BIO* bio) { return PEM_write_bio_PUBKEY(bio, handle_->key.get()); });
}

bool VerifyingKey::verify(ByteSpan message, ByteSpan signature) const
{
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    const bool ok = context && EVP_DigestVerifyInit(context, nullptr, digestFor(algorithm_), nullptr, handle_->key.get()) == 1 &&
                    EVP_DigestVerify(context, signature.data, signature.size, message.data, message.size) == 1;
    EVP_MD_CTX_free(context);
    return ok;
}

struct SigningKey::Handle {
    Pkey key;
};

SigningKey::SigningKey(std::unique_ptr<Handle> handle, VerifyingKey publicKey) : handle_(std::move(handle)), public_(std::move(publicKey)) {}
SigningKey::SigningKey(SigningKey&&) noexcept = default;
SigningKey& SigningKey::operator=(SigningKey&&) noexcept = default;
SigningKey::~SigningKey() = default;

SigningKey SigningKey::fromPemFile(const std::filesystem::path& file)
{
    const std::string where = "the signing key " + file.string();
    const std::string pem = readSmallFile(file, "signing key");
    BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
    // An empty passphrase: an encrypted key is refused instead of prompting on the terminal.
    Pkey key(bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, const_cast<char*>("")) : nullptr);
    BIO_free(bio);
    if (!key)
        throw Error(where + " is not an unencrypted PEM private key");
    algorithmOf(key.get(), where);
    auto handle = std::make_unique<Handle>();
    handle->key = std::move(key);
    VerifyingKey publicKey = VerifyingKey::fromPem(pem, where);
    return SigningKey(std::move(handle), std::move(publicKey));
}

SigningKey SigningKey::generate(KeyAlgorithm algorithm)
{
    Pkey key(algorithm == KeyAlgorithm::Ed25519 ? EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519")
                                                : EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
    if (!key)
        throw Error("OpenSSL could not generate a " + keyAlgorithmName(algorithm) + " key");
    const std::string pem = pemText([&key](BIO* bio) { return PEM_write_bio_PUBKEY(bio, key.get()); });
    VerifyingKey publicKey = VerifyingKey::fromPem(pem, "a generated " + keyAlgorithmName(algorithm) + " key");
    auto handle = std::make_unique<Handle>();
    handle->key = std::move(key);
    return SigningKey(std::move(handle), std::move(publicKey));
}

std::vector<std::uint8_t> SigningKey::sign(ByteSpan message) const
{
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    std::size_t length = 0;
    std::vector<std::uint8_t> signature;
    bool ok = context && EVP_DigestSignInit(context, nullptr, digestFor(public_.algorithm()), nullptr, handle_->key.get()) == 1 &&
              EVP_DigestSign(context, nullptr, &length, message.data, message.size) == 1;
    if (ok) {
        signature.resize(length);
        ok = EVP_DigestSign(context, signature.data(), &length, message.data, message.size) == 1;
        signature.resize(length);
    }
    EVP_MD_CTX_free(context);
    if (!ok)
        throw Error("OpenSSL could not sign with the " + keyAlgorithmName(public_.algorithm()) + " key " + public_.keyId());
    return signature;
}

std::string SigningKey::privatePem() const
{
    return pemText([this](BIO* bio) { return PEM_write_bio_PrivateKey(bio, handle_->key.get(), nullptr, nullptr, 0, nullptr, nullptr); });
}

}  // namespace zkdv
