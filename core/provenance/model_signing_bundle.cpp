#include "zkdv/provenance/model_signing_bundle.h"

#include <system_error>
#include <vector>

#include "zkdv/provenance/dataset_files.h"
#include "zkdv/report/report_file.h"
#include "zkdv/tape/tape_signature.h"
#include "zkdv/util/dsse.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/small_file.h"

namespace zkdv {

namespace {

using nlohmann::json;

// A bundle over one file is a few kilobytes; a folder's with many files more, but never this.
constexpr std::uint64_t kMaxBundleBytes = 16 << 20;

// model_signing's own list (its CLI's --ignore-git-paths default), so the statement we write
// is the one it writes for the same file, byte for byte apart from key and signature.
const char* const kIgnoredGitPaths[] = {".git", ".gitattributes", ".gitignore", ".github"};

// A single file is serialized as one resource named "." (the path relative to itself).
constexpr char kSingleFileResource[] = ".";

const json& member(const json& object, const char* name, const std::string& where)
{
    if (!object.is_object())
        throw FormatError(where + " must be a JSON object");
    const auto found = object.find(name);
    if (found == object.end())
        throw FormatError(where + " has no member \"" + name + "\"");
    return *found;
}

std::string stringMember(const json& object, const char* name, const std::string& where)
{
    const json& value = member(object, name, where);
    if (!value.is_string())
        throw FormatError(where + "." + name + " must be a string");
    return value.get<std::string>();
}

Digest digestMember(const json& object, const char* name, const std::string& where)
{
    const std::string hex = stringMember(object, name, where);
    const std::optional<Digest> digest = digestFromHex(hex);
    if (!digest)
        throw FormatError(where + "." + name + ": expected 64 hex digits");
    return *digest;
}

// The subject's digest: SHA-256 over the resources' digests in order, as model_signing's
// manifest is summarised.
Digest manifestDigest(const std::vector<Digest>& resources)
{
    Sha256 hasher;
    for (const Digest& digest : resources)
        hasher.update(ByteSpan(digest.data(), digest.size()));
    return hasher.finish();
}

Digest sha256OfFile(const std::filesystem::path& file)
{
    DatasetFile source;
    source.path = kSingleFileResource;
    source.file = file.string();
    return hashDatasetFiles({source}, nullptr, 1).front().sha256;
}

}  // namespace

std::filesystem::path detachedSignaturePathOf(const std::filesystem::path& file)
{
    std::filesystem::path signature = file;
    signature += ".sig";
    return signature;
}

std::string modelSigningKeyHint(const VerifyingKey& key)
{
    return toHex(Sha256::of(ByteSpan(std::string_view(key.pem()))));
}

json modelSigningStatement(const std::string& fileName, const Digest& fileSha256)
{
    json ignored = json::array();
    for (const char* path : kIgnoredGitPaths)
        ignored.push_back(path);
    return {
        {"_type", kInTotoStatementType},
        {"subject", json::array({{{"name", fileName}, {"digest", {{"sha256", toHex(manifestDigest({fileSha256}))}}}}})},
        {"predicateType", kModelSigningPredicateType},
        {"predicate",
         {{"resources", json::array({{{"name", kSingleFileResource}, {"algorithm", "sha256"}, {"digest", toHex(fileSha256)}}})},
          {"serialization", {{"method", "files"}, {"allow_symlinks", false}, {"hash_type", "sha256"}, {"ignore_paths", ignored}}}}},
    };
}

json signModelSigningBundle(const std::string& fileName, const Digest& fileSha256, const SigningKey& key)
{
    const std::string statement = modelSigningStatement(fileName, fileSha256).dump(2);
    const DsseEnvelope envelope = DsseEnvelope::sign(kInTotoPayloadType, std::vector<std::uint8_t>(statement.begin(), statement.end()), key);
    return {{"mediaType", kSigstoreBundleType},
            {"verificationMaterial", {{"publicKey", {{"hint", modelSigningKeyHint(key.publicKey())}}}, {"tlogEntries", json::array()}}},
            {"dsseEnvelope", envelope.toJson()}};
}

void writeDetachedSignature(const std::filesystem::path& file, const std::filesystem::path& signature, const SigningKey& key, bool overwrite)
{
    std::error_code error;
    if (!overwrite && std::filesystem::exists(signature, error))
        throw IoError(signature.string() + " exists; give --overwrite to replace it");
    const json bundle = signModelSigningBundle(file.filename().string(), sha256OfFile(file), key);
    writeReportFile(signature.string(), bundle.dump(2) + "\n");
}

DetachedSignatureCheck checkDetachedSignature(std::string_view bundleText, const Digest& fileSha256, const TrainerKeyring& keyring)
{
    const json bundle = parseUntrustedJson(bundleText, "signature bundle");
    if (stringMember(bundle, "mediaType", "signature bundle") != kSigstoreBundleType)
        throw FormatError(std::string("signature bundle: mediaType is not ") + kSigstoreBundleType);
    DetachedSignatureCheck check;
    if (bundle.contains("verificationMaterial")) {
        const json& material = bundle["verificationMaterial"];
        if (material.is_object() && material.contains("publicKey") && material["publicKey"].is_object() &&
            material["publicKey"].contains("hint") && material["publicKey"]["hint"].is_string())
            check.keyHint = material["publicKey"]["hint"].get<std::string>();
    }
    const DsseEnvelope envelope = DsseEnvelope::parse(member(bundle, "dsseEnvelope", "signature bundle"), "signature bundle: dsseEnvelope");
    if (envelope.payloadType != kInTotoPayloadType)
        throw FormatError("signature bundle: payloadType is \"" + envelope.payloadType + "\", expected \"" + kInTotoPayloadType + "\"");

    const json statement = parseUntrustedJson(std::string_view(reinterpret_cast<const char*>(envelope.payload.data()), envelope.payload.size()),
                                              "signature bundle statement");
    if (stringMember(statement, "_type", "statement") != kInTotoStatementType)
        throw FormatError(std::string("statement: _type is not ") + kInTotoStatementType);
    if (stringMember(statement, "predicateType", "statement") != kModelSigningPredicateType)
        throw FormatError(std::string("statement: predicateType is not ") + kModelSigningPredicateType + " (OpenSSF model signing v1.0)");
    const json& subjects = member(statement, "subject", "statement");
    if (!subjects.is_array() || subjects.size() != 1)
        throw FormatError("statement.subject must hold exactly one subject");
    const Digest subjectDigest = digestMember(member(subjects[0], "digest", "statement.subject[0]"), "sha256", "statement.subject[0].digest");
    const json& predicate = member(statement, "predicate", "statement");
    const json& serialization = member(predicate, "serialization", "statement.predicate");
    if (stringMember(serialization, "method", "statement.predicate.serialization") != "files")
        throw FormatError("statement.predicate.serialization.method: only \"files\" is supported (a model sharded by model_signing is not one file)");
    if (stringMember(serialization, "hash_type", "statement.predicate.serialization") != "sha256")
        throw FormatError("statement.predicate.serialization.hash_type: only \"sha256\" is supported (sign with model_signing's default hash)");
    const json& resources = member(predicate, "resources", "statement.predicate");
    if (!resources.is_array() || resources.size() != 1)
        throw FormatError("statement.predicate.resources: a signature over one file holds one resource, this one holds " +
                          std::to_string(resources.is_array() ? resources.size() : 0) + " (it signs a folder?)");
    const std::string where = "statement.predicate.resources[0]";
    if (stringMember(resources[0], "name", where) != kSingleFileResource || stringMember(resources[0], "algorithm", where) != "sha256")
        throw FormatError(where + " is not one file's SHA-256 (name \".\", algorithm \"sha256\")");
    check.signedSha256 = digestMember(resources[0], "digest", where);
    if (manifestDigest({check.signedSha256}) != subjectDigest)
        throw FormatError("statement: the subject's digest is not the digest of its resources (an inconsistent manifest)");

    for (const TrainerKeyring::Entry& entry : keyring.entries())
        if (envelope.verifiedBy(entry.key)) {
            check.trust = SignatureTrust::Trusted;
            check.keyId = entry.key.keyId();
            check.trustedKeyFile = entry.file.string();
            break;
        }
    if (check.trust != SignatureTrust::Trusted)
        for (const TrainerKeyring::Entry& entry : keyring.entries())
            if (check.keyHint == modelSigningKeyHint(entry.key) || check.keyHint == entry.key.keyId())
                throw Error("the signature does not verify with the key it names (" + entry.file.string() + ", key id " + entry.key.keyId() + ")");
    if (check.signedSha256 != fileSha256)
        throw Error("the signature is over other content (sha256 " + toHex(check.signedSha256) + "), not this file (sha256 " + toHex(fileSha256) + ")");
    return check;
}

DetachedSignatureCheck checkDetachedSignatureFile(const std::filesystem::path& signature, const std::filesystem::path& file,
                                                  const TrainerKeyring& keyring)
{
    const std::string text = readSmallFile(signature.string(), kMaxBundleBytes, "a signature bundle");
    return checkDetachedSignature(text, sha256OfFile(file), keyring);
}

}  // namespace zkdv
