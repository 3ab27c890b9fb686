#include "zkdv/util/trainer_keyring.h"

#include "zkdv/util/auditor_key.h"
#include "zkdv/util/trust_file.h"

namespace zkdv {

std::string signatureTrustName(SignatureTrust trust)
{
    switch (trust) {
    case SignatureTrust::Unsigned: return "unsigned";
    case SignatureTrust::UnsignedExpected: return "unsigned-expected";
    case SignatureTrust::UnknownKey: return "unknown-key";
    case SignatureTrust::Trusted: return "trusted";
    }
    return "unsigned";
}

std::string untrustedSignerText(SignatureTrust trust, const std::string& keyId)
{
    switch (trust) {
    case SignatureTrust::Trusted: return {};
    case SignatureTrust::UnknownKey: return "the tape is signed by a key that is not trusted (key id " + keyId + ")";
    case SignatureTrust::UnsignedExpected:
        return "the tape is not signed, though the trainer keyring holds keys to check its signature with: a signature can be "
               "stripped from a tape, so nothing says who made this one";
    case SignatureTrust::Unsigned: break;
    }
    return "the tape is not signed";
}

std::filesystem::path TrainerKeyring::userFolder() { return configFolder() / "trainer-keys"; }

TrainerKeyring TrainerKeyring::load(const std::vector<std::filesystem::path>& files, bool withUserFolder)
{
    namespace fs = std::filesystem;
    // Every key is a file the auditor's trust rests on, named or found: one rule for both.
    for (const fs::path& file : files)
        requireTrustFile(file, TrustFileUse::Vouching, "the trainer key file");
    std::vector<fs::path> all = files;
    if (withUserFolder) {
        const std::vector<fs::path> inFolder = trustFolderFiles(userFolder(), ".pem", "the trainer-keys folder");
        all.insert(all.end(), inFolder.begin(), inFolder.end());
    }
    TrainerKeyring keyring;
    for (const fs::path& file : all)
        keyring.entries_.push_back({VerifyingKey::fromPemFile(file), file});
    return keyring;
}

const TrainerKeyring::Entry* TrainerKeyring::find(const std::string& keyId) const
{
    for (const Entry& entry : entries_)
        if (entry.key.keyId() == keyId)
            return &entry;
    return nullptr;
}

SignatureTrust TrainerKeyring::trustOf(const std::optional<std::string>& signerKeyId) const
{
    if (!signerKeyId)
        return entries_.empty() ? SignatureTrust::Unsigned : SignatureTrust::UnsignedExpected;
    return find(*signerKeyId) ? SignatureTrust::Trusted : SignatureTrust::UnknownKey;
}

}  // namespace zkdv
