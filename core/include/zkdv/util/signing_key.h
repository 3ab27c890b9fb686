#pragma once
// A trainer's signing key and the public keys a verifier holds, for signatures over tapes
// (docs/signing.md): ECDSA P-256 (signatures in ASN.1 DER, SHA-256: what Sigstore and OpenSSF
// model signing use) or Ed25519. Keys are PEM files; a key is named by its *key id*, the
// SHA-256 of its DER SubjectPublicKeyInfo in hex. Private keys are never printed or stored.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "zkdv/util/byte_span.h"

namespace zkdv {

enum class KeyAlgorithm { EcdsaP256, Ed25519 };

// "ecdsa-p256-sha256", "ed25519".
std::string keyAlgorithmName(KeyAlgorithm algorithm);

class VerifyingKey {
public:
    // From a PEM public key ("-----BEGIN PUBLIC KEY-----") or a PEM private key (its public
    // half). Throws Error naming `where` when it is neither, or not a P-256 or Ed25519 key.
    static VerifyingKey fromPem(const std::string& pem, const std::string& where);
    static VerifyingKey fromPemFile(const std::filesystem::path& file);

    VerifyingKey(const VerifyingKey&);
    VerifyingKey& operator=(const VerifyingKey&);
    VerifyingKey(VerifyingKey&&) noexcept;
    VerifyingKey& operator=(VerifyingKey&&) noexcept;
    ~VerifyingKey();

    KeyAlgorithm algorithm() const { return algorithm_; }
    // Hex SHA-256 of the DER SubjectPublicKeyInfo.
    const std::string& keyId() const { return keyId_; }
    // The public key as PEM (SubjectPublicKeyInfo).
    std::string pem() const;
    // False for a signature that is malformed or does not verify.
    bool verify(ByteSpan message, ByteSpan signature) const;

private:
    struct Handle;
    VerifyingKey(std::shared_ptr<Handle> handle, KeyAlgorithm algorithm);
    std::shared_ptr<Handle> handle_;
    KeyAlgorithm algorithm_ = KeyAlgorithm::Ed25519;
    std::string keyId_;
};

class SigningKey {
public:
    // Reads an unencrypted PEM private key (PKCS#8 or SEC1 for EC). Throws Error naming the
    // file and why (unreadable, not a private key, an algorithm other than P-256 or Ed25519),
    // never with the key's bytes in the message.
    static SigningKey fromPemFile(const std::filesystem::path& file);
    // A fresh key (tests, `zkdv-audit keygen`).
    static SigningKey generate(KeyAlgorithm algorithm);

    SigningKey(SigningKey&&) noexcept;
    SigningKey& operator=(SigningKey&&) noexcept;
    ~SigningKey();

    const VerifyingKey& publicKey() const { return public_; }
    std::vector<std::uint8_t> sign(ByteSpan message) const;
    // PKCS#8 PEM of the private key (to store a generated key; mode 0600 is the caller's).
    std::string privatePem() const;

private:
    struct Handle;
    SigningKey(std::unique_ptr<Handle> handle, VerifyingKey publicKey);
    std::unique_ptr<Handle> handle_;
    VerifyingKey public_;
};

}  // namespace zkdv
