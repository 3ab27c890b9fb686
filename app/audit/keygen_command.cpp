#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "command_runner.h"
#include "commands.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/signing_key.h"

namespace zkdv::cli {

namespace {

// Creates `path` readable by its owner only, refusing one that exists: a private key is
// never written over another file, nor readable by others for a moment.
void writePrivateFile(const std::string& path, const std::string& text)
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        throw IoError("cannot create " + path + ": " + std::strerror(errno) + (errno == EEXIST ? " (keys are never replaced)" : ""));
    const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    const bool closed = ::close(fd) == 0;
    if (!ok || !closed) {
        ::unlink(path.c_str());
        throw IoError("cannot write " + path);
    }
}

}  // namespace

int runKeygen(int argc, char** argv)
{
    ArgumentParser parser("zkdv-audit keygen --out KEY [--algorithm ecdsa-p256|ed25519] [--json]",
                          "Makes a trainer's signing key: KEY (the private key, PEM, readable by you only) and\n"
                          "KEY.pub (the public key, PEM, for auditors: zkdv-audit verify --trusted-key KEY.pub).\n"
                          "Record with it to sign tapes (zkdv.torch's ZKDVConfig(signing_key=...), the C++\n"
                          "RecorderOptions::signingKeyFile, zkdv-audit demo --signing-key). Never replaces a file.");
    parser.addOption("out", "KEY", "where the private key goes (KEY.pub gets the public key)");
    parser.addOption("algorithm", "NAME", "ecdsa-p256 (default: what Sigstore and OpenSSF model signing use) or ed25519");
    parser.addFlag("json", "print the key id and files as JSON");
    return runCommand("keygen", parser, argc, argv, [&]() {
        if (!parser.has("out"))
            throw UsageError("--out KEY is required");
        const std::string algorithm = parser.value("algorithm", "ecdsa-p256");
        if (algorithm != "ecdsa-p256" && algorithm != "ed25519")
            throw UsageError("--algorithm must be ecdsa-p256 or ed25519, not \"" + algorithm + "\"");
        const SigningKey key = SigningKey::generate(algorithm == "ed25519" ? KeyAlgorithm::Ed25519 : KeyAlgorithm::EcdsaP256);
        const std::string path = parser.value("out");
        const std::string publicPath = path + ".pub";
        if (std::ifstream(publicPath))
            throw IoError("cannot create " + publicPath + ": it exists (keys are never replaced)");
        writePrivateFile(path, key.privatePem());
        {
            std::ofstream out(publicPath, std::ios::binary);
            out << key.publicKey().pem();
            if (!out.flush())
                throw IoError("cannot write " + publicPath);
        }
        if (parser.has("json"))
            std::printf("%s\n", toJsonText(nlohmann::json{{"key_id", key.publicKey().keyId()},
                                                          {"algorithm", keyAlgorithmName(key.publicKey().algorithm())},
                                                          {"private_key", path}, {"public_key", publicPath}}, 2).c_str());
        else
            std::printf("%s: %s key %s\n%s: its public key, for auditors\n", path.c_str(), keyAlgorithmName(key.publicKey().algorithm()).c_str(),
                        key.publicKey().keyId().c_str(), publicPath.c_str());
        return kExitOk;
    });
}

}  // namespace zkdv::cli
