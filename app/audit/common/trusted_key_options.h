#pragma once
// The trainer-key options verify, report and replay share: --trusted-key FILE (repeatable) and
// --require-trusted, read into the keyring the command judges a tape's signer with.

#include <filesystem>
#include <vector>

#include "argument_parser.h"
#include "zkdv/util/trainer_keyring.h"

namespace zkdv::cli {

struct TrustedKeyOptions {
    std::vector<std::filesystem::path> files;  // --trusted-key, in order
    bool required = false;                     // --require-trusted
    TrainerKeyring keyring;                    // those files, then the trainer-keys folder
};

// Adds --trusted-key and --require-trusted to `parser`; `failure` says what --require-trusted
// does to a tape no trusted key signed ("fail (exit 1)").
void addTrustedKeyOptions(ArgumentParser& parser, const std::string& failure);

// The options `parser` read, with the keyring loaded. A key that cannot be read, or a key file
// or keyring folder others may change (docs/signing.md, "Where trust rests"), is a UsageError
// (exit 2) naming it.
TrustedKeyOptions readTrustedKeyOptions(const ArgumentParser& parser);

}  // namespace zkdv::cli
