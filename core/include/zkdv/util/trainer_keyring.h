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
// does not verify makes the tape itself fail its check). UnsignedExpected: no signature, where
// the auditor's keyring holds keys and so expects one; stripping a forger's signature must not
// read better than keeping it (docs/threat-model.md, row 32).
enum class SignatureTrust { Unsigned, UnsignedExpected, UnknownKey, Trusted };

// "unsigned", "unsigned-expected", "unknown-key", "trusted": as --json spells them.
std::string signatureTrustName(SignatureTrust trust);
inline bool isUnsigned(SignatureTrust trust) { return trust == SignatureTrust::Unsigned || trust == SignatureTrust::UnsignedExpected; }
// Why a tape of this trust is not signed by a trusted key, as a clause ("the tape is not
// signed"); empty for Trusted. `keyId` names the signer's key.
std::string untrustedSignerText(SignatureTrust trust, const std::string& keyId);

class TrainerKeyring {
public:
    struct Entry {
        VerifyingKey key;
        std::filesystem::path file;
    };

    // The keys in `files`, then (when `withUserFolder`) those in the user's keyring folder.
    // Throws Error naming the file when one cannot be read as a public key, or when a file or
    // the folder is not kept from other users (requireTrustFile, trustFolderFiles); a missing
    // keyring folder is an empty one.
    static TrainerKeyring load(const std::vector<std::filesystem::path>& files, bool withUserFolder = true);
    // configFolder()/trainer-keys.
    static std::filesystem::path userFolder();

    const Entry* find(const std::string& keyId) const;
    // Without a signer Unsigned, or UnsignedExpected when the keyring holds a key; otherwise
    // Trusted when its key id is in the keyring.
    SignatureTrust trustOf(const std::optional<std::string>& signerKeyId) const;
    const std::vector<Entry>& entries() const { return entries_; }

private:
    std::vector<Entry> entries_;
};

}  // namespace zkdv
