// Detached signatures in OpenSSF model signing's format (docs/signing.md, "Detached
// signatures"): round trips with fresh keys of both types, a bundle the real model_signing
// 1.1.1 wrote (tests/data/model_signing), and every way a bundle can lie: another key, other
// content, a changed statement, an inconsistent manifest, a folder's bundle, garbage.

#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "zkdv/provenance/model_signing_bundle.h"
#include "zkdv/util/dsse.h"
#include "zkdv/util/error.h"
#include "zkdv/util/small_file.h"

using namespace zkdv;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

Digest digestOf(const std::string& text) { return Sha256::of(ByteSpan(std::string_view(text))); }

// A keyring holding the public halves of `keys`, as files in `folder`.
TrainerKeyring keyringOf(const fs::path& folder, const std::vector<const SigningKey*>& keys)
{
    std::vector<fs::path> files;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const fs::path file = folder / ("trusted-" + std::to_string(i) + ".pub");
        std::ofstream(file) << keys[i]->publicKey().pem();
        files.push_back(file);
    }
    return TrainerKeyring::load(files, /*withUserFolder=*/false);
}

// The bundle with its statement replaced by `statement`, re-signed by `key` (a forger's own).
std::string resigned(const json& statement, const SigningKey& key)
{
    const std::string text = statement.dump();
    json bundle = signModelSigningBundle("x", Digest{}, key);
    bundle["dsseEnvelope"] = DsseEnvelope::sign(kInTotoPayloadType, std::vector<std::uint8_t>(text.begin(), text.end()), key).toJson();
    return bundle.dump();
}

}  // namespace

class TestModelSigningBundle : public QObject {
    Q_OBJECT

    QTemporaryDir dir_;
    fs::path folder() const { return fs::path(dir_.path().toStdString()); }

private Q_SLOTS:
    void aBundleVerifiesWithItsKeyForItsContentOnly_data()
    {
        QTest::addColumn<int>("algorithm");
        QTest::newRow("ecdsa-p256") << int(KeyAlgorithm::EcdsaP256);
        QTest::newRow("ed25519") << int(KeyAlgorithm::Ed25519);
    }
    void aBundleVerifiesWithItsKeyForItsContentOnly()
    {
        QFETCH(int, algorithm);
        const SigningKey key = SigningKey::generate(KeyAlgorithm(algorithm));
        const SigningKey other = SigningKey::generate(KeyAlgorithm(algorithm));
        const Digest content = digestOf("the tape's bytes");
        const std::string bundle = signModelSigningBundle("run.zkdv", content, key).dump();

        const DetachedSignatureCheck trusted = checkDetachedSignature(bundle, content, keyringOf(folder(), {&other, &key}));
        QCOMPARE(int(trusted.trust), int(SignatureTrust::Trusted));
        QCOMPARE(trusted.keyId, key.publicKey().keyId());
        QCOMPARE(trusted.keyHint, modelSigningKeyHint(key.publicKey()));
        QVERIFY(trusted.trustedKeyFile.find("trusted-1.pub") != std::string::npos);

        // Nobody trusted made it: it proves nothing, though the content matches.
        const DetachedSignatureCheck unknown = checkDetachedSignature(bundle, content, keyringOf(folder(), {&other}));
        QCOMPARE(int(unknown.trust), int(SignatureTrust::UnknownKey));
        QVERIFY(unknown.keyId.empty());

        // The same bundle presented for other content.
        QVERIFY_THROWS_EXCEPTION(Error, checkDetachedSignature(bundle, digestOf("the tape's bytes, changed"), keyringOf(folder(), {&key})));
    }

    void aBundleTheRealModelSigningWroteVerifies()
    {
        const fs::path data = fs::path(ZKDV_TEST_DATA_DIR) / "model_signing";
        const TrainerKeyring keyring = TrainerKeyring::load({data / "signer.pub"}, false);
        const DetachedSignatureCheck check = checkDetachedSignatureFile(data / "weights.bin.sig", data / "weights.bin", keyring);
        QCOMPARE(int(check.trust), int(SignatureTrust::Trusted));
        QCOMPARE(check.keyHint, modelSigningKeyHint(keyring.entries().front().key));
        // What we would write for that file is the statement model_signing wrote.
        const json bundle = json::parse(readSmallFile((data / "weights.bin.sig").string(), 1 << 20, "a bundle"));
        const DsseEnvelope envelope = DsseEnvelope::parse(bundle["dsseEnvelope"], "bundle");
        // (model_signing keeps ignore_paths in a set: their order is not part of the statement.)
        auto withSortedIgnores = [](json statement) {
            json& ignored = statement["predicate"]["serialization"]["ignore_paths"];
            std::vector<std::string> paths = ignored.get<std::vector<std::string>>();
            std::sort(paths.begin(), paths.end());
            ignored = paths;
            return statement;
        };
        const json written = withSortedIgnores(json::parse(envelope.payload));
        QVERIFY2(written == withSortedIgnores(modelSigningStatement("weights.bin", check.signedSha256)), written.dump().c_str());
        // Another file's content does not match it.
        QVERIFY_THROWS_EXCEPTION(Error, checkDetachedSignatureFile(data / "weights.bin.sig", data / "README.md", keyring));
    }

    void aChangedStatementOrSignatureFailsUnderTheKeyItNames()
    {
        const SigningKey key = SigningKey::generate(KeyAlgorithm::EcdsaP256);
        const Digest content = digestOf("content");
        const TrainerKeyring keyring = keyringOf(folder(), {&key});
        json bundle = signModelSigningBundle("run.zkdv", content, key);

        // A forger's statement for other content, signed by the forger but naming the trainer's key.
        const SigningKey forger = SigningKey::generate(KeyAlgorithm::EcdsaP256);
        json forged = json::parse(resigned(modelSigningStatement("run.zkdv", digestOf("forged")), forger));
        forged["verificationMaterial"]["publicKey"]["hint"] = modelSigningKeyHint(key.publicKey());
        QVERIFY_THROWS_EXCEPTION(Error, checkDetachedSignature(forged.dump(), digestOf("forged"), keyring));

        // One flipped bit of the signature.
        json flipped = bundle;
        std::vector<std::uint8_t> signature = base64Decode(flipped["dsseEnvelope"]["signatures"][0]["sig"].get<std::string>(), "sig");
        signature[signature.size() / 2] ^= 0x01;
        flipped["dsseEnvelope"]["signatures"][0]["sig"] = base64Encode(ByteSpan(signature.data(), signature.size()));
        QVERIFY_THROWS_EXCEPTION(Error, checkDetachedSignature(flipped.dump(), content, keyring));

        // The statement's resource changed under the original signature.
        json changed = bundle;
        const std::vector<std::uint8_t> decoded = base64Decode(changed["dsseEnvelope"]["payload"].get<std::string>(), "p");
        json statement = json::parse(decoded);
        statement["subject"][0]["name"] = "other.zkdv";
        const std::string text = statement.dump(2);
        changed["dsseEnvelope"]["payload"] = base64Encode(ByteSpan(std::string_view(text)));
        QVERIFY_THROWS_EXCEPTION(Error, checkDetachedSignature(changed.dump(), content, keyring));
    }

    void bundlesThatAreNotOneFilesSignatureAreRefusedAsMalformed()
    {
        const SigningKey key = SigningKey::generate(KeyAlgorithm::EcdsaP256);
        const Digest content = digestOf("content");
        const TrainerKeyring keyring = keyringOf(folder(), {&key});
        const json statement = modelSigningStatement("model", content);

        json folderStatement = statement;  // a folder's: one resource per file
        folderStatement["predicate"]["resources"].push_back({{"name", "b.bin"}, {"algorithm", "sha256"}, {"digest", toHex(content)}});
        QVERIFY_THROWS_EXCEPTION(FormatError, checkDetachedSignature(resigned(folderStatement, key), content, keyring));

        json inconsistent = statement;  // the subject is not the digest of the resources
        inconsistent["subject"][0]["digest"]["sha256"] = toHex(content);
        QVERIFY_THROWS_EXCEPTION(FormatError, checkDetachedSignature(resigned(inconsistent, key), content, keyring));

        json blake = statement;
        blake["predicate"]["serialization"]["hash_type"] = "blake2";
        QVERIFY_THROWS_EXCEPTION(FormatError, checkDetachedSignature(resigned(blake, key), content, keyring));

        json otherType = statement;
        otherType["predicateType"] = "https://slsa.dev/verification_summary/v1";
        QVERIFY_THROWS_EXCEPTION(FormatError, checkDetachedSignature(resigned(otherType, key), content, keyring));

        for (const char* garbage : {"", "{}", "[1,2]", "{\"mediaType\": 7}", "{\"mediaType\": \"application/vnd.dev.sigstore.bundle.v0.3+json\"}"})
            QVERIFY_THROWS_EXCEPTION(FormatError, checkDetachedSignature(garbage, content, keyring));
    }

    void theSignatureFileIsWrittenOnceAndBesideItsFile()
    {
        const SigningKey key = SigningKey::generate(KeyAlgorithm::EcdsaP256);
        const fs::path file = folder() / "run.zkdv";
        std::ofstream(file) << "tape bytes";
        QCOMPARE(detachedSignaturePathOf(file), folder() / "run.zkdv.sig");
        writeDetachedSignature(file, detachedSignaturePathOf(file), key);
        QVERIFY_THROWS_EXCEPTION(IoError, writeDetachedSignature(file, detachedSignaturePathOf(file), key));
        const DetachedSignatureCheck check = checkDetachedSignatureFile(detachedSignaturePathOf(file), file, keyringOf(folder(), {&key}));
        QCOMPARE(int(check.trust), int(SignatureTrust::Trusted));
        QCOMPARE(check.signedSha256, digestOf("tape bytes"));
        // No private key material in what is written.
        QVERIFY(readSmallFile(detachedSignaturePathOf(file).string(), 1 << 20, "a bundle").find("PRIVATE") == std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestModelSigningBundle)
#include "test_model_signing_bundle.moc"
