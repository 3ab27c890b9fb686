#include <cstdio>
#include <filesystem>

#include "command_runner.h"
#include "commands.h"
#include "zkdv/provenance/model_signing_bundle.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/signing_key.h"

namespace zkdv::cli {

int runSign(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit sign FILE --key KEY [--signature OUT] [--overwrite] [--json]",
                          "Writes a detached signature over FILE (a tape, or any file: a model's safetensors):\n"
                          "a Sigstore bundle in OpenSSF model signing's format (model_signing v1.0), by default\n"
                          "FILE.sig, which zkdv-audit verify reads beside a tape and which\n"
                          "'model_signing verify key --signature FILE.sig --public_key KEY.pub FILE' checks\n"
                          "(model_signing takes ECDSA P-256 keys, not Ed25519).");
    parser.setPositionals("FILE", "the file to sign", 1, false);
    parser.addOption("key", "KEY", "the PEM private key (ECDSA P-256 or Ed25519; zkdv-audit keygen makes one)");
    parser.addOption("signature", "OUT", "where the bundle goes (default FILE.sig)");
    parser.addFlag("overwrite", "replace an existing bundle");
    parser.addFlag("json", "print the bundle's file, the key id and the file's SHA-256 as JSON");
    return runCommand("sign", parser, argc, argv, [&]() {
        if (!parser.has("key"))
            throw UsageError("--key KEY is required");
        const std::filesystem::path file = parser.positionals().front();
        std::error_code error;
        if (!std::filesystem::is_regular_file(file, error))
            throw UsageError(file.string() + " is not a file (a folder is signed with model_signing itself)");
        SigningKey key = [&]() {
            try {
                return SigningKey::fromPemFile(parser.value("key"));
            } catch (const std::exception& failure) {
                throw UsageError(failure.what());
            }
        }();
        const std::filesystem::path signature = parser.has("signature") ? std::filesystem::path(parser.value("signature")) : detachedSignaturePathOf(file);
        writeDetachedSignature(file, signature, key, parser.has("overwrite"));
        if (parser.has("json"))
            std::printf("%s\n", toJsonText(nlohmann::json{{"file", file.string()},
                                                          {"signature", signature.string()},
                                                          {"key_id", key.publicKey().keyId()},
                                                          {"algorithm", keyAlgorithmName(key.publicKey().algorithm())}}, 2).c_str());
        else
            std::printf("%s: signed by %s key %s\n", signature.c_str(), keyAlgorithmName(key.publicKey().algorithm()).c_str(),
                        key.publicKey().keyId().c_str());
        if (key.publicKey().algorithm() != KeyAlgorithm::EcdsaP256)
            std::fprintf(stderr, "note: model_signing verifies ECDSA keys only; this %s bundle verifies with zkdv-audit verify\n",
                         keyAlgorithmName(key.publicKey().algorithm()).c_str());
        return kExitOk;
    });
}

}  // namespace zkdv::cli
