#pragma once
// The trainer's signature in the seal (spec section 7.1, since 1.11): a DSSE envelope over an
// in-toto Statement v1 whose subjects are the tape (its chain head) and its program (SHA-256),
// and whose predicate says what the tape claims (docs/signing.md has its JSON schema). A
// reader rebuilds the statement from what it read and accepts the signature only when the
// signed statement is exactly that one and the signature verifies with the key it carries.
// Whether that key is one the auditor trusts is a separate question (TrustedKeys).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "zkdv/tape/root_record.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/signing_key.h"

namespace zkdv {

inline constexpr char kTapeStatementPredicateType[] = "https://zkdv.dev/attestation/tape/v1";
inline constexpr char kInTotoStatementType[] = "https://in-toto.io/Statement/v1";

// What a sealed tape says about itself, as the writer knows it when it seals and a reader
// when it reaches the seal.
struct SealFacts {
    const RootRecord* root = nullptr;
    Digest chainHead{};            // the digest of the record before the seal
    std::uint64_t bytesBeforeSeal = 0;
    std::uint64_t records = 0;     // before the seal, the root included
    std::uint64_t transactions = 0;
    std::uint64_t snapshots = 0;
    Digest finalStateDigest{};     // of the final snapshot (spec 2.4, section 8)
};

// The in-toto statement a signature over this tape signs.
nlohmann::json tapeStatement(const SealFacts& facts);
// The seal's `signature` member: {"dsse": envelope, "public_key": PEM}.
nlohmann::json signTape(const SealFacts& facts, const SigningKey& key);

struct TapeSigner {
    std::string keyId;          // hex SHA-256 of the key's DER SubjectPublicKeyInfo
    KeyAlgorithm algorithm = KeyAlgorithm::Ed25519;
    std::string publicKeyPem;
};

// Checks a 1.11 seal's `signature` member against what the reader found: nullopt for null
// (an unsigned tape); the signer when the statement is the one `found` gives and the
// signature verifies; FormatError saying what differs or fails otherwise.
std::optional<TapeSigner> checkTapeSignature(const std::string& signatureJson, const SealFacts& found);

}  // namespace zkdv
