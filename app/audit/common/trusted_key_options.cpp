#include "trusted_key_options.h"

#include <exception>

namespace zkdv::cli {

void addTrustedKeyOptions(ArgumentParser& parser, const std::string& failure)
{
    parser.addRepeatedOption("trusted-key", "KEY", "a trainer's public key (PEM) to trust; repeat for several");
    parser.addFlag("require-trusted", failure + " unless a trusted key signed the tape");
}

TrustedKeyOptions readTrustedKeyOptions(const ArgumentParser& parser)
{
    TrustedKeyOptions options;
    for (const std::string& file : parser.values("trusted-key"))
        options.files.emplace_back(file);
    options.required = parser.has("require-trusted");
    try {
        options.keyring = TrainerKeyring::load(options.files);
    } catch (const std::exception& error) {
        throw UsageError(error.what());
    }
    return options;
}

}  // namespace zkdv::cli
