#include "zkdv/tape/tape_signature.h"

#include "zkdv/tape/dtype.h"
#include "zkdv/util/dsse.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {

nlohmann::json tensorSpecs(const std::vector<TensorSpec>& specs)
{
    nlohmann::json list = nlohmann::json::array();
    for (const TensorSpec& spec : specs)
        list.push_back({{"name", spec.name}, {"shape", spec.shape}, {"dtype", std::string(dtypeName(spec.dtype))}});
    return list;
}

// The first place where two JSON documents differ, as a JSON pointer ("" when equal).
std::string firstDifference(const nlohmann::json& expected, const nlohmann::json& found)
{
    const nlohmann::json patch = nlohmann::json::diff(expected, found);
    return patch.empty() ? std::string() : patch.front().value("path", std::string("/"));
}

}  // namespace

nlohmann::json tapeStatement(const SealFacts& facts)
{
    const RootRecord& root = *facts.root;
    // The model's layout by digest: a statement stays small for a model of a thousand tensors.
    const nlohmann::json layout = {{"parameters", tensorSpecs(root.parameters)}, {"buffers", tensorSpecs(root.buffers)}};
    nlohmann::json groups = nlohmann::json::array();
    for (const OptimizerGroup& group : root.optimizerGroups)
        groups.push_back({{"parameters", group.parameters}, {"options", parseUntrustedJson(group.optionsJson, "optimizer group options")}});
    const nlohmann::json predicate = {
        {"format", std::to_string(root.formatMajor) + "." + std::to_string(root.formatMinor)},
        {"layout_sha256", toHex(Sha256::of(ByteSpan(std::string_view(layout.dump()))))},
        {"optimizer", {{"contract", root.optimizerContract}, {"groups", groups},
                       {"schedule", root.optimizerSchedule ? nlohmann::json(root.optimizerSchedule->options) : nlohmann::json(nullptr)}}},
        {"sampling", {{"generator", root.samplingGenerator}, {"seed", root.samplingSeed}, {"state_check_probability", root.stateCheckProbability},
                      {"update_check_probability", root.updateCheckProbability}, {"snapshot_interval", root.snapshotInterval}}},
        {"program", {{"kind", root.programKind}, {"entry", root.programEntry}, {"embedded", root.programEmbedded}}},
        {"producer", {{"name", root.producerName}, {"version", root.producerVersion}, {"torch", root.torchVersion}, {"device", root.device}}},
        {"counts", {{"records", facts.records}, {"transactions", facts.transactions}, {"snapshots", facts.snapshots}}},
        {"final_state_sha256", toHex(facts.finalStateDigest)},
    };
    return {
        {"_type", kInTotoStatementType},
        {"subject", nlohmann::json::array({
                        {{"name", "tape"}, {"digest", {{"zkdv-chain-head", toHex(facts.chainHead)}}},
                         {"annotations", {{"bytes_before_seal", facts.bytesBeforeSeal}}}},
                        {{"name", "program"}, {"digest", {{"sha256", toHex(root.programSha256)}}}},
                    })},
        {"predicateType", kTapeStatementPredicateType},
        {"predicate", predicate},
    };
}

nlohmann::json signTape(const SealFacts& facts, const SigningKey& key)
{
    const std::string statement = tapeStatement(facts).dump();
    const DsseEnvelope envelope = DsseEnvelope::sign(kInTotoPayloadType, std::vector<std::uint8_t>(statement.begin(), statement.end()), key);
    return {{"dsse", envelope.toJson()}, {"public_key", key.publicKey().pem()}};
}

std::optional<TapeSigner> checkTapeSignature(const std::string& signatureJson, const SealFacts& found)
{
    const nlohmann::json signature = parseUntrustedJson(signatureJson, "seal signature");
    if (signature.is_null())
        return std::nullopt;
    if (!signature.is_object() || !signature.contains("dsse") || !signature.contains("public_key") || !signature["public_key"].is_string())
        throw FormatError("seal signature: expected null or an object with members dsse (a DSSE envelope) and public_key (PEM)");
    // A key that does not read is a malformed seal like any other: the tape is corrupt there.
    const VerifyingKey key = [&] {
        try {
            return VerifyingKey::fromPem(signature["public_key"].get<std::string>(), "seal signature: public_key");
        } catch (const FormatError&) {
            throw;
        } catch (const Error& error) {
            throw FormatError(error.what());
        }
    }();
    const DsseEnvelope envelope = DsseEnvelope::parse(signature["dsse"], "seal signature: dsse");
    if (envelope.payloadType != kInTotoPayloadType)
        throw FormatError("seal signature: payloadType is \"" + envelope.payloadType + "\", expected \"" + kInTotoPayloadType + "\"");
    if (!envelope.verifiedBy(key))
        throw FormatError("seal signature: the signature does not verify with the key it names (key id " + key.keyId() +
                          "): the statement or the signature was altered");
    const nlohmann::json statement = parseUntrustedJson(std::string_view(reinterpret_cast<const char*>(envelope.payload.data()), envelope.payload.size()),
                                                        "seal signature statement");
    if (const std::string where = firstDifference(tapeStatement(found), statement); !where.empty())
        throw FormatError("seal signature: the signed statement differs from this tape at " + where +
                          ": the signature was made for another tape, or the tape was changed after it was signed");
    return TapeSigner{key.keyId(), key.algorithm(), key.pem()};
}

}  // namespace zkdv
