#pragma once
// The auditor's signing key and the keys they trust. A case is a file people hand to each
// other, so the rows a replay stores in it say nothing by themselves: zkdv signs each run it
// finishes with this user's Ed25519 key (docs/case-schema.md, "Run seals"), and a report is
// derived only from runs signed by a key the reader trusts: their own, or one listed in
// their trusted-keys file.
//
// Files, in the folder configFolder() names:
//   signing-key.pem  this user's private key (PKCS#8 PEM, mode 0600), made on first use
//   trusted-keys     one key per line: 64 hex digits of an Ed25519 public key, then an
//                    optional name; `#` starts a comment

#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/util/byte_span.h"

namespace zkdv {

using PublicKey = std::array<std::uint8_t, 32>;  // the same type as Digest: toHex() prints it
using Signature = std::array<std::uint8_t, 64>;

// $ZKDV_CONFIG_HOME, else $XDG_CONFIG_HOME/zkdv, else $HOME/.config/zkdv.
std::filesystem::path configFolder();

// "ed25519:" and the first 16 hex digits of SHA-256 of the key: how messages name a key.
std::string keyFingerprint(const PublicKey& key);
std::optional<PublicKey> publicKeyFromHex(const std::string& hex);

bool verifySignature(const PublicKey& key, ByteSpan message, const Signature& signature);

class AuditorKey {
public:
    // This user's key, read from `file` (default: configFolder()/signing-key.pem), or made
    // and stored there when the file does not exist. Throws Error saying which file and why
    // when it cannot be read or made.
    static AuditorKey loadOrCreate(const std::filesystem::path& file = {});
    // configFolder()/signing-key.pem: where this user's key lives unless told otherwise.
    static std::filesystem::path defaultFile();
    // The public half of this user's key when the file exists (nothing is made); throws
    // Error when it exists but cannot be read.
    static std::optional<PublicKey> existingPublicKey(const std::filesystem::path& file = {});

    AuditorKey(AuditorKey&&) noexcept;
    AuditorKey& operator=(AuditorKey&&) noexcept;
    ~AuditorKey();

    const PublicKey& publicKey() const { return publicKey_; }
    Signature sign(ByteSpan message) const;

private:
    struct Handle;
    explicit AuditorKey(std::unique_ptr<Handle> handle);
    std::unique_ptr<Handle> handle_;
    PublicKey publicKey_{};
};

struct TrustedKey {
    PublicKey key{};
    std::string name;
};

// How a seal's signer reads to this reader, after its fingerprint: " (this user's key)",
// " (trusted: NAME)" or " (trusted)"; nullopt for a key that is neither theirs nor trusted.
std::optional<std::string> trustedSignerNote(const PublicKey& key, const std::optional<PublicKey>& ownKey,
                                             const std::vector<TrustedKey>& trusted);

// The keys listed in configFolder()/trusted-keys (none when the file does not exist).
// Throws Error naming the file and line of an entry that is not a key.
std::vector<TrustedKey> readTrustedKeys(const std::filesystem::path& file = {});

}  // namespace zkdv
