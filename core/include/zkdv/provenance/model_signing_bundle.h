#pragma once
// A detached signature over one file in the format of OpenSSF Model Signing (the `model_signing`
// package, v1.0 predicate): a Sigstore bundle v0.3 whose DSSE envelope signs an in-toto
// Statement v1 naming the file by the SHA-256 of its contents (docs/signing.md, "Detached
// signatures"). A tape's bundle lies beside it as "<tape>.sig"; `model_signing verify key`
// checks it like any signed model, and a bundle `model_signing sign key TAPE` made checks here.
// Bundles are untrusted input: every member is bounded and checked before it is believed.

#include <filesystem>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "zkdv/util/sha256.h"
#include "zkdv/util/signing_key.h"
#include "zkdv/util/trainer_keyring.h"

namespace zkdv {

inline constexpr char kModelSigningPredicateType[] = "https://model_signing/signature/v1.0";

// "<file>.sig": where the recorder writes a tape's detached signature and verify looks for it.
std::filesystem::path detachedSignaturePathOf(const std::filesystem::path& file);

// The key hint model_signing puts in a bundle: hex SHA-256 of the public key's PEM text.
std::string modelSigningKeyHint(const VerifyingKey& key);

// The statement and bundle `model_signing sign key FILE` writes for a file of that content.
nlohmann::json modelSigningStatement(const std::string& fileName, const Digest& fileSha256);
nlohmann::json signModelSigningBundle(const std::string& fileName, const Digest& fileSha256, const SigningKey& key);
// Hashes `file` and writes its bundle to `signature` (refusing to replace one unless
// `overwrite`). Throws IoError naming the file that cannot be read or written.
void writeDetachedSignature(const std::filesystem::path& file, const std::filesystem::path& signature, const SigningKey& key,
                            bool overwrite = false);

struct DetachedSignatureCheck {
    // Trusted: a trusted key's signature verifies and the bundle names this file's content.
    // UnknownKey: no trusted key made it, so it proves nothing (the content still matches).
    SignatureTrust trust = SignatureTrust::UnknownKey;
    std::string keyId;             // the trusted key that verified it (Trusted only)
    std::string trustedKeyFile;
    std::string keyHint;           // as the bundle gives it; may be empty
    Digest signedSha256{};         // the file content the bundle signs
};

// Checks a bundle against the file's SHA-256 and the keyring. Throws FormatError naming the
// member at fault for a bundle that is not a model_signing v1.0 bundle over one file (a folder's
// bundle, another hash than SHA-256), and Error when it signs other content, or when the key it
// names is trusted but its signature does not verify.
DetachedSignatureCheck checkDetachedSignature(std::string_view bundleText, const Digest& fileSha256, const TrainerKeyring& keyring);

// Reads `signature` and hashes `file`, then checks as above; IoError when either cannot be read.
DetachedSignatureCheck checkDetachedSignatureFile(const std::filesystem::path& signature, const std::filesystem::path& file,
                                                  const TrainerKeyring& keyring);

}  // namespace zkdv
