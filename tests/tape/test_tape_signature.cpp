// Signed tapes (format 1.11, spec section 7.1): the key and envelope primitives against
// published test vectors, and tapes recorded with a key of each kind against the attacks a
// forger has: re-chaining a changed tape under the old signature, a flipped byte in the
// signature or the statement, another tape's signature, and a signature by the forger's own key.

#include <QtTest>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "dishonest_trainer.h"
#include "temp_dir.h"
#include "zkdv/audit/selection.h"
#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/report/audit_report.h"
#include "zkdv/store/case_store.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/tape_signature.h"
#include "zkdv/util/dsse.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/signing_key.h"
#include "zkdv/util/trainer_keyring.h"

using namespace zkdv;

namespace {

std::string text(const std::vector<std::uint8_t>& bytes) { return std::string(bytes.begin(), bytes.end()); }

// The seal's signature member of a sealed tape, as written.
std::string sealSignature(const std::string& tape)
{
    const TapeSummary summary = scanTape(tape);
    return summary.seal ? summary.seal->signatureJson : std::string();
}

std::string problemOf(const std::string& tape)
{
    const TapeSummary summary = scanTape(tape);
    return summary.problem ? summary.problem->message : std::string();
}

// Where the seal's frame starts: the bytes a signature's statement says precede it.
struct SealPlace : TapeVisitor {
    void onSeal(const SealRecord&, const RecordLocation& location) override { offset = location.offset; }
    std::uint64_t offset = 0;
};

}  // namespace

class TestTapeSignature : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void base64FollowsRfc4648();
    void preAuthEncodingFollowsDsse();
    void keysSignAndVerifyAndRefuseOthers();
    void keyFilesRoundTripAndBadOnesSayWhy();
    void recordedTapesVerifyWithTheirSigner_data();
    void recordedTapesVerifyWithTheirSigner();
    void anUnsignedTapeReadsAsUnsigned();
    void aChangedTapeUnderTheOldSignatureFails();
    void aFlippedByteInSignatureOrStatementFails();
    void anotherTapesSignatureFails();
    void theForgersOwnKeyIsNotTrusted();
    void aCaseKeepsTheSignerAndTheReportSaysWhetherItIsTrusted();

private:
    std::string writeKey(KeyAlgorithm algorithm, const std::string& name);
    std::string record(const std::string& name, const std::string& keyFile, std::uint64_t seed = 7);

    test::TempDir dir_;
    std::string p256Key_, ed25519Key_, p256Tape_, ed25519Tape_;
};

std::string TestTapeSignature::writeKey(KeyAlgorithm algorithm, const std::string& name)
{
    const SigningKey key = SigningKey::generate(algorithm);
    const std::string path = dir_.file(name);
    std::ofstream(path) << key.privatePem();
    std::ofstream(path + ".pub") << key.publicKey().pem();
    return path;
}

std::string TestTapeSignature::record(const std::string& name, const std::string& keyFile, std::uint64_t seed)
{
    CnnDemoOptions options;
    options.steps = 5;  // off the interval: the final snapshot is its own (spec 2.4)
    options.batchSize = 4;
    options.seed = seed;
    options.updateCheckProbability = 0.5;
    options.stateCheckProbability = 0.5;
    options.signingKeyFile = keyFile;
    const std::string path = dir_.file(name);
    runCnnDemo(path, options);
    return path;
}

void TestTapeSignature::initTestCase()
{
    p256Key_ = writeKey(KeyAlgorithm::EcdsaP256, "trainer-p256.pem");
    ed25519Key_ = writeKey(KeyAlgorithm::Ed25519, "trainer-ed25519.pem");
    p256Tape_ = record("p256.zkdv", p256Key_);
    ed25519Tape_ = record("ed25519.zkdv", ed25519Key_);
}

void TestTapeSignature::base64FollowsRfc4648()
{
    // RFC 4648, section 10.
    const std::pair<const char*, const char*> vectors[] = {{"", ""},         {"f", "Zg=="},         {"fo", "Zm8="},        {"foo", "Zm9v"},
                                                           {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}};
    for (const auto& [plain, encoded] : vectors) {
        QCOMPARE(base64Encode(ByteSpan(std::string_view(plain))), std::string(encoded));
        QCOMPARE(text(base64Decode(encoded, "test")), std::string(plain));
    }
    for (const char* bad : {"Zg=", "Z===", "Zm9v!A==", "Zg==Zg==", "=Zg="})
        QVERIFY_THROWS_EXCEPTION(FormatError, base64Decode(bad, "test"));
}

void TestTapeSignature::preAuthEncodingFollowsDsse()
{
    // The example of the DSSE protocol document (secure-systems-lab/dsse, protocol.md).
    QCOMPARE(text(dssePreAuthEncoding("http://example.com/HelloWorld", ByteSpan(std::string_view("hello world")))),
             std::string("DSSEv1 29 http://example.com/HelloWorld 11 hello world"));
}

void TestTapeSignature::keysSignAndVerifyAndRefuseOthers()
{
    for (KeyAlgorithm algorithm : {KeyAlgorithm::EcdsaP256, KeyAlgorithm::Ed25519}) {
        const SigningKey key = SigningKey::generate(algorithm), other = SigningKey::generate(algorithm);
        const std::string message = "a statement";
        std::vector<std::uint8_t> signature = key.sign(ByteSpan(std::string_view(message)));
        QVERIFY(key.publicKey().verify(ByteSpan(std::string_view(message)), ByteSpan(signature)));
        QVERIFY(!other.publicKey().verify(ByteSpan(std::string_view(message)), ByteSpan(signature)));
        QVERIFY(!key.publicKey().verify(ByteSpan(std::string_view("another statement")), ByteSpan(signature)));
        signature[signature.size() / 2] ^= 0x01;
        QVERIFY(!key.publicKey().verify(ByteSpan(std::string_view(message)), ByteSpan(signature)));
        QCOMPARE(key.publicKey().keyId().size(), std::size_t(64));
        QVERIFY(key.publicKey().keyId() != other.publicKey().keyId());

        const DsseEnvelope envelope = DsseEnvelope::sign(kInTotoPayloadType, {'{', '}'}, key);
        const DsseEnvelope read = DsseEnvelope::parse(parseUntrustedJson(envelope.toJson().dump(), "test"), "test");
        QVERIFY(read.verifiedBy(key.publicKey()));
        QVERIFY(!read.verifiedBy(other.publicKey()));
    }
}

void TestTapeSignature::keyFilesRoundTripAndBadOnesSayWhy()
{
    const SigningKey key = SigningKey::fromPemFile(p256Key_);
    QCOMPARE(key.publicKey().algorithm(), KeyAlgorithm::EcdsaP256);
    QCOMPARE(VerifyingKey::fromPemFile(p256Key_ + ".pub").keyId(), key.publicKey().keyId());
    const std::string junk = dir_.file("junk.pem");
    std::ofstream(junk) << "-----BEGIN PRIVATE KEY-----\nnot base64 at all\n-----END PRIVATE KEY-----\n";
    try {
        SigningKey::fromPemFile(junk);
        QFAIL("a junk key was read");
    } catch (const Error& error) {
        QVERIFY2(std::string(error.what()).find(junk) != std::string::npos, error.what());
    }
    QVERIFY_THROWS_EXCEPTION(Error, SigningKey::fromPemFile(dir_.file("missing.pem")));
    // A public key is not a signing key.
    QVERIFY_THROWS_EXCEPTION(Error, SigningKey::fromPemFile(p256Key_ + ".pub"));
    // A recorder with a key it cannot read refuses before it writes anything.
    CnnDemoOptions options;
    options.steps = 1;
    options.signingKeyFile = junk;
    QVERIFY_THROWS_EXCEPTION(std::exception, runCnnDemo(dir_.file("never.zkdv"), options));
    QVERIFY(!std::filesystem::exists(dir_.file("never.zkdv")));
}

void TestTapeSignature::recordedTapesVerifyWithTheirSigner_data()
{
    QTest::addColumn<QString>("tape");
    QTest::addColumn<QString>("key");
    QTest::newRow("ecdsa-p256") << QString::fromStdString(p256Tape_) << QString::fromStdString(p256Key_);
    QTest::newRow("ed25519") << QString::fromStdString(ed25519Tape_) << QString::fromStdString(ed25519Key_);
}

void TestTapeSignature::recordedTapesVerifyWithTheirSigner()
{
    QFETCH(QString, tape);
    QFETCH(QString, key);
    const TapeSummary summary = scanTape(tape.toStdString());
    QVERIFY2(summary.complete(), summary.problem ? summary.problem->message.c_str() : "unsealed");
    QCOMPARE(summary.formatMinor, tape::kMinorVersion);  // what this recorder writes, signed since 1.11
    QVERIFY(summary.signer);
    const VerifyingKey expected = VerifyingKey::fromPemFile(key.toStdString() + ".pub");
    QCOMPARE(summary.signer->keyId, expected.keyId());
    QCOMPARE(summary.signer->algorithm, expected.algorithm());
    // The statement names the tape by what the reader found.
    const nlohmann::json signature = parseUntrustedJson(summary.seal->signatureJson, "test");
    const DsseEnvelope envelope = DsseEnvelope::parse(signature["dsse"], "test");
    const nlohmann::json statement = parseUntrustedJson(text(envelope.payload), "test");
    QCOMPARE(statement["subject"][0]["digest"]["zkdv-chain-head"].get<std::string>(), toHex(summary.seal->chainHead));
    QCOMPARE(statement["subject"][1]["digest"]["sha256"].get<std::string>(), toHex(summary.root->programSha256));
    QCOMPARE(statement["predicate"]["final_state_sha256"].get<std::string>(), toHex(*summary.finalStateDigest));
    QCOMPARE(statement["predicate"]["counts"]["transactions"].get<std::uint64_t>(), std::uint64_t(5));
    // Trust is the keyring's: the signer's own public key, and no other.
    QCOMPARE(TrainerKeyring::load({key.toStdString() + ".pub"}, false).trustOf(summary.signer->keyId), SignatureTrust::Trusted);
    const std::string otherKey = key.toStdString() == p256Key_ ? ed25519Key_ : p256Key_;
    QCOMPARE(TrainerKeyring::load({otherKey + ".pub"}, false).trustOf(summary.signer->keyId), SignatureTrust::UnknownKey);
}

void TestTapeSignature::anUnsignedTapeReadsAsUnsigned()
{
    const std::string tape = record("unsigned.zkdv", "");
    const TapeSummary summary = scanTape(tape);
    QVERIFY(summary.complete());
    QVERIFY(!summary.signer);
    QCOMPARE(summary.seal->signatureJson, std::string("null"));
    QCOMPARE(TrainerKeyring::load({}, false).trustOf(std::nullopt), SignatureTrust::Unsigned);
}

void TestTapeSignature::aChangedTapeUnderTheOldSignatureFails()
{
    // The forger changes an update, re-chains and re-seals, and keeps the trainer's signature.
    const std::string forged = dir_.file("forged.zkdv");
    const auto change = [](test::RawRecord& record) {
        if (test::isTransaction(record, 2))
            test::scaleElement(record, "loss", 0, 1.5f);
    };
    test::rewriteTape(p256Tape_, forged, change, test::Draws::Regrind, sealSignature(p256Tape_));
    const std::string problem = problemOf(forged);
    QVERIFY2(problem.find("signed statement differs from this tape at /subject/0/digest/zkdv-chain-head") != std::string::npos, problem.c_str());
    // Re-sealed unsigned instead, the tape reads, but as unsigned: no key vouches for it.
    const std::string stripped = dir_.file("stripped.zkdv");
    test::rewriteTape(p256Tape_, stripped, change, test::Draws::Regrind, "null");
    QVERIFY(scanTape(stripped).complete());
    QVERIFY(!scanTape(stripped).signer);
}

void TestTapeSignature::aFlippedByteInSignatureOrStatementFails()
{
    nlohmann::json signature = parseUntrustedJson(sealSignature(ed25519Tape_), "test");
    DsseEnvelope envelope = DsseEnvelope::parse(signature["dsse"], "test");

    DsseEnvelope badSignature = envelope;
    badSignature.signatures[0].signature[7] ^= 0x20;
    signature["dsse"] = badSignature.toJson();
    const std::string tape1 = dir_.file("bad-signature.zkdv");
    test::rewriteTape(ed25519Tape_, tape1, [](test::RawRecord&) {}, test::Draws::Leave, signature.dump());
    QVERIFY2(problemOf(tape1).find("does not verify") != std::string::npos, problemOf(tape1).c_str());

    DsseEnvelope badStatement = envelope;
    const std::string statement = text(envelope.payload);
    const std::size_t at = statement.find("\"transactions\":5");
    QVERIFY(at != std::string::npos);
    badStatement.payload[at + 15] = '4';
    signature["dsse"] = badStatement.toJson();
    const std::string tape2 = dir_.file("bad-statement.zkdv");
    test::rewriteTape(ed25519Tape_, tape2, [](test::RawRecord&) {}, test::Draws::Leave, signature.dump());
    QVERIFY2(problemOf(tape2).find("does not verify") != std::string::npos, problemOf(tape2).c_str());

    // A key that is not one: the tape is corrupt at the seal, not unreadable.
    nlohmann::json badKey = parseUntrustedJson(sealSignature(ed25519Tape_), "test");
    badKey["public_key"] = "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n";
    const std::string tape4 = dir_.file("bad-key.zkdv");
    test::rewriteTape(ed25519Tape_, tape4, [](test::RawRecord&) {}, test::Draws::Leave, badKey.dump());
    const TapeSummary badKeySummary = scanTape(tape4);
    QCOMPARE(badKeySummary.status, TapeStatus::Corrupt);
    QVERIFY2(problemOf(tape4).find("public_key") != std::string::npos, problemOf(tape4).c_str());

    // Not an envelope at all.
    const std::string tape3 = dir_.file("not-an-envelope.zkdv");
    test::rewriteTape(ed25519Tape_, tape3, [](test::RawRecord&) {}, test::Draws::Leave, "\"signed, honestly\"");
    QVERIFY2(problemOf(tape3).find("seal signature") != std::string::npos, problemOf(tape3).c_str());
}

void TestTapeSignature::anotherTapesSignatureFails()
{
    // The same training and key, another seed: a valid signature, for another tape.
    const std::string other = record("other.zkdv", p256Key_, 8);
    const std::string swapped = dir_.file("swapped.zkdv");
    test::rewriteTape(p256Tape_, swapped, [](test::RawRecord&) {}, test::Draws::Leave, sealSignature(other));
    const std::string problem = problemOf(swapped);
    QVERIFY2(problem.find("signed statement differs from this tape") != std::string::npos, problem.c_str());
}

void TestTapeSignature::theForgersOwnKeyIsNotTrusted()
{
    // The forger changes the tape and signs it anew with a key of their own: the signature is
    // valid, and names a key the auditor does not trust.
    const std::string forgerKey = writeKey(KeyAlgorithm::EcdsaP256, "forger.pem");
    const SigningKey forger = SigningKey::fromPemFile(forgerKey);
    const std::string changed = dir_.file("changed.zkdv");
    test::rewriteTape(p256Tape_, changed, [](test::RawRecord& record) {
        if (test::isTransaction(record, 1))
            test::scaleElement(record, "loss", 0, 2.0f);
    });
    SealPlace place;
    const TapeSummary summary = scanTape(changed, &place);
    SealFacts facts;
    facts.root = &*summary.root;
    facts.chainHead = summary.seal->chainHead;
    facts.bytesBeforeSeal = place.offset;
    facts.records = summary.seal->records;
    facts.transactions = summary.transactionCount;
    facts.snapshots = summary.snapshotCount;
    facts.finalStateDigest = *summary.finalStateDigest;
    const std::string resigned = dir_.file("resigned.zkdv");
    test::rewriteTape(changed, resigned, [](test::RawRecord&) {}, test::Draws::Leave, signTape(facts, forger).dump());
    const TapeSummary read = scanTape(resigned);
    QVERIFY2(read.complete(), read.problem ? read.problem->message.c_str() : "unsealed");
    QVERIFY(read.signer);
    QCOMPARE(read.signer->keyId, forger.publicKey().keyId());
    QCOMPARE(TrainerKeyring::load({p256Key_ + ".pub"}, false).trustOf(read.signer->keyId), SignatureTrust::UnknownKey);
}

void TestTapeSignature::aCaseKeepsTheSignerAndTheReportSaysWhetherItIsTrusted()
{
    // The keyring read is the one in the config folder (here a fresh one): first empty.
    const std::string config = dir_.file("config");
    std::filesystem::create_directories(config);
    qputenv("ZKDV_CONFIG_HOME", QByteArray::fromStdString(config));
    const std::string casePath = dir_.file("signed.zkaudit");
    CaseStore store(casePath, CaseStore::Access::ReadWrite);
    const std::int64_t signedTape = store.ingestTape(ed25519Tape_).tapeId;
    const std::int64_t unsignedTape = store.ingestTape(record("unsigned-in-case.zkdv", "")).tapeId;
    const CaseTape tape = *store.tape(signedTape);
    QVERIFY(tape.isSigned());
    QCOMPARE(tape.signerKeyId, VerifyingKey::fromPemFile(ed25519Key_ + ".pub").keyId());
    QCOMPARE(tape.signerAlgorithm, std::string("ed25519"));
    QVERIFY(!store.tape(unsignedTape)->isSigned());

    for (const std::int64_t id : {signedTape, unsignedTape}) {
        ReplayRequest request;
        request.tapeId = id;
        request.selection = SelectionSpec::parse("ids:0");
        runReplay(store, request);
    }
    ReportOptions options;
    options.tapeId = signedTape;
    ReportData report = buildAuditReport(store, options);
    QCOMPARE(report.signatureTrust, SignatureTrust::UnknownKey);
    QCOMPARE(report.signerKeyId, tape.signerKeyId);
    QVERIFY(std::any_of(report.warnings.begin(), report.warnings.end(),
                        [](const std::string& warning) { return warning.find("not in the trainer keyring") != std::string::npos; }));
    // A trusted signer required: the forger's key cannot pass.
    options.requireTrustedSigner = true;
    const ReportData forged = buildAuditReport(store, options);
    QVERIFY(!forged.passed());
    QVERIFY2(forged.outcome != AuditOutcome::Passed, forged.headline.c_str());
    QVERIFY(std::any_of(forged.warnings.begin(), forged.warnings.end(),
                        [](const std::string& warning) { return warning.find("requires a trusted signer") != std::string::npos; }));
    options.requireTrustedSigner = false;

    // The trainer's public key in the keyring: trusted, no warning about it.
    std::filesystem::create_directories(TrainerKeyring::userFolder());
    std::filesystem::copy_file(ed25519Key_ + ".pub", TrainerKeyring::userFolder() / "trainer.pem");
    report = buildAuditReport(store, options);
    QCOMPARE(report.signatureTrust, SignatureTrust::Trusted);
    QCOMPARE(report.trustedKeyFile, (TrainerKeyring::userFolder() / "trainer.pem").string());
    QVERIFY(std::none_of(report.warnings.begin(), report.warnings.end(),
                         [](const std::string& warning) { return warning.find("trainer keyring") != std::string::npos; }));
    const bool passedBefore = report.passed();
    // Required, and there: the conclusion stands.
    options.requireTrustedSigner = true;
    report = buildAuditReport(store, options);
    QCOMPARE(report.passed(), passedBefore);
    options.requireTrustedSigner = false;

    // The keyring holds a key, so a signature is expected: an unsigned tape (a stripped one reads
    // so) is warned of on the first page as the forger's key is, and does not pass when required.
    options.tapeId = unsignedTape;
    report = buildAuditReport(store, options);
    QCOMPARE(report.signatureTrust, SignatureTrust::UnsignedExpected);
    QVERIFY(std::any_of(report.warnings.begin(), report.warnings.end(),
                        [](const std::string& warning) { return warning.find("The tape is not signed, though the trainer keyring holds keys") == 0; }));
    const bool unsignedPassed = report.passed();
    options.requireTrustedSigner = true;
    report = buildAuditReport(store, options);
    QVERIFY(!report.passed());
    QVERIFY2(report.outcome != AuditOutcome::Passed, report.headline.c_str());
    QVERIFY(report.signerRequired);
    if (unsignedPassed)  // what would have passed says why it does not
        QVERIFY2(report.outcome == AuditOutcome::NotVerified && report.headline.find("not signed") != std::string::npos, report.headline.c_str());
    // Without keys there is nothing to expect.
    std::filesystem::remove_all(TrainerKeyring::userFolder());
    options.requireTrustedSigner = false;
    QCOMPARE(buildAuditReport(store, options).signatureTrust, SignatureTrust::Unsigned);
    qunsetenv("ZKDV_CONFIG_HOME");
}

QTEST_GUILESS_MAIN(TestTapeSignature)
#include "test_tape_signature.moc"
