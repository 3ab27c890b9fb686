#include "zkdv/util/trainer_keyring.h"

#include <algorithm>
#include <system_error>

#include "zkdv/util/auditor_key.h"

namespace zkdv {

std::string signatureTrustName(SignatureTrust trust)
{
    switch (trust) {
    case SignatureTrust::Unsigned: return "unsigned";
    case SignatureTrust::UnknownKey: return "unknown-key";
    case SignatureTrust::Trusted: return "trusted";
    }
    return "unsigned";
}

std::filesystem::path TrainerKeyring::userFolder() { return configFolder() / "trainer-keys"; }

TrainerKeyring TrainerKeyring::load(const std::vector<std::filesystem::path>& files, bool withUserFolder)
{
    namespace fs = std::filesystem;
    std::vector<fs::path> all = files;
    if (withUserFolder) {
        std::error_code error;
        std::vector<fs::path> inFolder;
        for (fs::directory_iterator it(userFolder(), error), end; !error && it != end; it.increment(error))
            if (it->path().extension() == ".pem" && it->is_regular_file(error))
                inFolder.push_back(it->path());
        std::sort(inFolder.begin(), inFolder.end());
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
        return SignatureTrust::Unsigned;
    return find(*signerKeyId) ? SignatureTrust::Trusted : SignatureTrust::UnknownKey;
}

}  // namespace zkdv
