#include "zkdv/util/auditor_key.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/trust_file.h"

namespace zkdv {

namespace fs = std::filesystem;

struct AuditorKey::Handle {
    EVP_PKEY* key = nullptr;
    ~Handle() { EVP_PKEY_free(key); }
};

namespace {

std::string environment(const char* name)
{
    const char* value = std::getenv(name);
    return value ? std::string(value) : std::string();
}

std::string systemError() { return std::strerror(errno); }

PublicKey rawPublicKey(EVP_PKEY* key, const fs::path& file)
{
    PublicKey raw{};
    std::size_t length = raw.size();
    if (EVP_PKEY_get_raw_public_key(key, raw.data(), &length) != 1 || length != raw.size())
        throw Error("the signing key in " + file.string() + " has no Ed25519 public key");
    return raw;
}

EVP_PKEY* readKeyFile(const fs::path& file)
{
    requireTrustFile(file, TrustFileUse::Secret, "the signing key");
    FILE* stream = std::fopen(file.c_str(), "rb");
    if (!stream)
        throw Error("cannot read the signing key " + file.string() + ": " + systemError());
    EVP_PKEY* key = PEM_read_PrivateKey(stream, nullptr, nullptr, nullptr);
    std::fclose(stream);
    if (!key)
        throw Error("the signing key " + file.string() + " is not a PEM private key");
    if (EVP_PKEY_get_id(key) != EVP_PKEY_ED25519) {
        EVP_PKEY_free(key);
        throw Error("the signing key " + file.string() + " is not an Ed25519 key");
    }
    return key;
}

EVP_PKEY* generateKey()
{
    EVP_PKEY_CTX* context = EVP_PKEY_CTX_new_id(EVP_PKEY_ED25519, nullptr);
    EVP_PKEY* key = nullptr;
    const bool ok = context && EVP_PKEY_keygen_init(context) == 1 && EVP_PKEY_keygen(context, &key) == 1;
    EVP_PKEY_CTX_free(context);
    if (!ok)
        throw Error("OpenSSL could not generate an Ed25519 signing key");
    return key;
}

// Writes `key` to `file` only if no file is there: into a private temporary file, then
// linked into place, so two processes making a key at once both end up using the one that
// won and nobody reads a half-written key.
void storeNewKey(EVP_PKEY* key, const fs::path& file)
{
    std::error_code error;
    const bool existed = fs::exists(file.parent_path(), error);
    fs::create_directories(file.parent_path(), error);
    if (error)
        throw Error("cannot make the folder " + file.parent_path().string() + " for the signing key: " + error.message());
    // A folder of its own is the user's alone, as ~/.ssh: others may not replace what is in it.
    if (!existed)
        fs::permissions(file.parent_path(), fs::perms::owner_all, fs::perm_options::replace, error);
    std::random_device random;
    const fs::path temporary = file.parent_path() / (".signing-key-" + std::to_string(random()) + ".tmp");
    const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        throw Error("cannot write a signing key in " + file.parent_path().string() + ": " + systemError());
    FILE* stream = ::fdopen(fd, "wb");
    bool written = stream && PEM_write_PrivateKey(stream, key, nullptr, nullptr, 0, nullptr, nullptr) == 1 && std::fflush(stream) == 0 &&
                   ::fsync(fd) == 0;
    const std::string why = systemError();
    if (stream)
        std::fclose(stream);
    else
        ::close(fd);
    if (!written) {
        ::unlink(temporary.c_str());
        throw Error("cannot write the signing key " + file.string() + ": " + why);
    }
    const bool linked = ::link(temporary.c_str(), file.c_str()) == 0;
    const int linkErrno = errno;
    ::unlink(temporary.c_str());
    if (!linked && linkErrno != EEXIST)
        throw Error("cannot store the signing key " + file.string() + ": " + std::strerror(linkErrno));
}

}  // namespace

fs::path configFolder()
{
    if (std::string own = environment("ZKDV_CONFIG_HOME"); !own.empty())
        return fs::path(own);
    if (std::string xdg = environment("XDG_CONFIG_HOME"); !xdg.empty())
        return fs::path(xdg) / "zkdv";
    if (std::string home = environment("HOME"); !home.empty())
        return fs::path(home) / ".config" / "zkdv";
    throw Error("cannot find this user's zkdv settings folder: neither ZKDV_CONFIG_HOME, XDG_CONFIG_HOME nor HOME is set");
}

std::string keyFingerprint(const PublicKey& key)
{
    return "ed25519:" + zkdv::toHex(Sha256::of(ByteSpan(key.data(), key.size()))).substr(0, 16);
}

std::optional<PublicKey> publicKeyFromHex(const std::string& hex)
{
    if (hex.size() != 64)
        return std::nullopt;
    PublicKey key{};
    for (std::size_t i = 0; i < key.size(); ++i) {
        int byte = 0;
        for (int half = 0; half < 2; ++half) {
            const char c = hex[2 * i + half];
            int value = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (value < 0)
                return std::nullopt;
            byte = byte * 16 + value;
        }
        key[i] = static_cast<std::uint8_t>(byte);
    }
    return key;
}

bool verifySignature(const PublicKey& key, ByteSpan message, const Signature& signature)
{
    EVP_PKEY* publicKey = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nullptr, key.data(), key.size());
    if (!publicKey)
        return false;
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    const bool valid = context && EVP_DigestVerifyInit(context, nullptr, nullptr, nullptr, publicKey) == 1 &&
                       EVP_DigestVerify(context, signature.data(), signature.size(), message.data, message.size) == 1;
    EVP_MD_CTX_free(context);
    EVP_PKEY_free(publicKey);
    return valid;
}

AuditorKey::AuditorKey(std::unique_ptr<Handle> handle) : handle_(std::move(handle)) {}
AuditorKey::AuditorKey(AuditorKey&&) noexcept = default;
AuditorKey& AuditorKey::operator=(AuditorKey&&) noexcept = default;
AuditorKey::~AuditorKey() = default;

fs::path AuditorKey::defaultFile() { return configFolder() / "signing-key.pem"; }

AuditorKey AuditorKey::loadOrCreate(const fs::path& requested)
{
    const fs::path file = requested.empty() ? defaultFile() : requested;
    auto handle = std::make_unique<Handle>();
    std::error_code error;
    if (!fs::exists(fs::symlink_status(file, error))) {
        Handle fresh;
        fresh.key = generateKey();
        storeNewKey(fresh.key, file);
    }
    handle->key = readKeyFile(file);
    AuditorKey key(std::move(handle));
    key.publicKey_ = rawPublicKey(key.handle_->key, file);
    return key;
}

std::optional<PublicKey> AuditorKey::existingPublicKey(const fs::path& requested)
{
    const fs::path file = requested.empty() ? defaultFile() : requested;
    std::error_code error;
    if (!fs::exists(fs::symlink_status(file, error)))
        return std::nullopt;
    Handle handle;
    handle.key = readKeyFile(file);
    return rawPublicKey(handle.key, file);
}

Signature AuditorKey::sign(ByteSpan message) const
{
    Signature signature{};
    std::size_t length = signature.size();
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    const bool ok = context && EVP_DigestSignInit(context, nullptr, nullptr, nullptr, handle_->key) == 1 &&
                    EVP_DigestSign(context, signature.data(), &length, message.data, message.size) == 1 && length == signature.size();
    EVP_MD_CTX_free(context);
    if (!ok)
        throw Error("OpenSSL could not sign with the Ed25519 signing key");
    return signature;
}

std::optional<std::string> trustedSignerNote(const PublicKey& key, const std::optional<PublicKey>& ownKey,
                                             const std::vector<TrustedKey>& trusted)
{
    if (ownKey && *ownKey == key)
        return std::string(" (this user's key)");
    for (const TrustedKey& candidate : trusted)
        if (candidate.key == key)
            return candidate.name.empty() ? std::string(" (trusted)") : " (trusted: " + candidate.name + ")";
    return std::nullopt;
}

std::vector<TrustedKey> readTrustedKeys(const fs::path& requested)
{
    const fs::path file = requested.empty() ? configFolder() / "trusted-keys" : requested;
    std::vector<TrustedKey> keys;
    std::error_code error;
    if (!fs::exists(file, error))
        return keys;
    requireTrustFile(file, TrustFileUse::Vouching, "the trusted-keys file");
    std::ifstream in(file);
    if (!in)
        throw Error("cannot read the trusted-keys file " + file.string());
    std::string line;
    for (std::size_t number = 1; std::getline(in, line); ++number) {
        if (const auto hash = line.find('#'); hash != std::string::npos)
            line.erase(hash);
        std::istringstream fields(line);
        std::string hex;
        if (!(fields >> hex))
            continue;
        const std::optional<PublicKey> key = publicKeyFromHex(hex);
        if (!key)
            throw Error("the trusted-keys file " + file.string() + ", line " + std::to_string(number) +
                        ": '" + hex.substr(0, 80) + "' is not an Ed25519 public key (64 hex digits)");
        std::string name;
        std::getline(fields >> std::ws, name);
        while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back())))
            name.pop_back();
        keys.push_back(TrustedKey{*key, name});
    }
    return keys;
}

}  // namespace zkdv
