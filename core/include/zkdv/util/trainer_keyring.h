#pragma once
// The trainers' public keys an auditor trusts to sign tapes (docs/signing.md): PEM files
// named on the command line, and every *.pem in configFolder()/trainer-keys (the keyring
// beside the auditors' trusted-keys file). A key is matched by its key id, never by name.

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/util/signing_key.h"

namespace zkdv {

// What an auditor can say about who signed a tape whose signature verified (a signature that
// does not verify makes the tape itself fail its check).
enum class SignatureTrust { Unsigned, UnknownKey, Trusted };

// "unsigned", "unknown-key", "trusted": as --json spells them.
std::string signatureTrustName(SignatureTrust trust);

class TrainerKeyring {
public:
    struct Entry {
        VerifyingKey key;
        std::filesystem::path file;
    };

    // The keys in `files`, then (when `withUserFolder`) those in the user's keyring folder.
    // Throws Error naming the file when one cannot be read as a public key; a missing keyring
    // folder is an empty one.
    static TrainerKeyring load(const std::vector<std::filesystem::path>& files, bool withUserFolder = true);
    // configFolder()/trainer-keys.
    static std::filesystem::path userFolder();

    const Entry* find(const std::string& keyId) const;
    // Unsigned without a signer; otherwise Trusted when its key id is in the keyring.
    SignatureTrust trustOf(const std::optional<std::string>& signerKeyId) const;
    const std::vector<Entry>& entries() const { return entries_; }

private:
    std::vector<Entry> entries_;
};

}  // namespace zkdv
