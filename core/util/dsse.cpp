#include "zkdv/util/dsse.h"

#include <array>

#include "zkdv/util/error.h"

namespace zkdv {

namespace {

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
// An envelope names a handful of signers; more is not an envelope this reader takes.
constexpr std::size_t kMaxSignatures = 16;

const std::string& stringMember(const nlohmann::json& json, const char* name, std::string_view what)
{
    const auto it = json.find(name);
    if (it == json.end() || !it->is_string())
        throw FormatError(std::string(what) + ": member \"" + name + "\" must be a string");
    return it->get_ref<const std::string&>();
}

}  // namespace

std::string base64Encode(ByteSpan bytes)
{
    std::string text;
    text.reserve((bytes.size + 2) / 3 * 4);
    for (std::size_t i = 0; i < bytes.size; i += 3) {
        const std::uint32_t a = bytes.data[i];
        const std::uint32_t b = i + 1 < bytes.size ? bytes.data[i + 1] : 0;
        const std::uint32_t c = i + 2 < bytes.size ? bytes.data[i + 2] : 0;
        const std::uint32_t triple = (a << 16) | (b << 8) | c;
        text += kAlphabet[(triple >> 18) & 63];
        text += kAlphabet[(triple >> 12) & 63];
        text += i + 1 < bytes.size ? kAlphabet[(triple >> 6) & 63] : '=';
        text += i + 2 < bytes.size ? kAlphabet[triple & 63] : '=';
    }
    return text;
}

std::vector<std::uint8_t> base64Decode(std::string_view text, std::string_view what)
{
    std::array<int, 256> value{};
    value.fill(-1);
    for (int i = 0; i < 64; ++i)
        value[static_cast<unsigned char>(kAlphabet[i])] = i;
    if (text.size() % 4 != 0)
        throw FormatError(std::string(what) + ": base64 of " + std::to_string(text.size()) + " characters (not a multiple of 4)");
    std::vector<std::uint8_t> bytes;
    bytes.reserve(text.size() / 4 * 3);
    for (std::size_t i = 0; i < text.size(); i += 4) {
        int quad[4];
        int padding = 0;
        for (int k = 0; k < 4; ++k) {
            const char ch = text[i + k];
            // Padding only at the very end, at most two.
            if (ch == '=' && i + 4 == text.size() && k >= 2 && (k == 3 || text[i + 3] == '=')) {
                quad[k] = 0;
                ++padding;
                continue;
            }
            quad[k] = value[static_cast<unsigned char>(ch)];
            if (quad[k] < 0 || padding)
                throw FormatError(std::string(what) + ": not base64 at character " + std::to_string(i + k));
        }
        const std::uint32_t triple = (std::uint32_t(quad[0]) << 18) | (std::uint32_t(quad[1]) << 12) | (std::uint32_t(quad[2]) << 6) | std::uint32_t(quad[3]);
        bytes.push_back(static_cast<std::uint8_t>(triple >> 16));
        if (padding < 2)
            bytes.push_back(static_cast<std::uint8_t>(triple >> 8));
        if (padding < 1)
            bytes.push_back(static_cast<std::uint8_t>(triple));
    }
    return bytes;
}

std::vector<std::uint8_t> dssePreAuthEncoding(std::string_view payloadType, ByteSpan payload)
{
    const std::string head = "DSSEv1 " + std::to_string(payloadType.size()) + " " + std::string(payloadType) + " " + std::to_string(payload.size) + " ";
    std::vector<std::uint8_t> bytes(head.begin(), head.end());
    bytes.insert(bytes.end(), payload.data, payload.data + payload.size);
    return bytes;
}

DsseEnvelope DsseEnvelope::sign(std::string payloadType, std::vector<std::uint8_t> payload, const SigningKey& key)
{
    DsseEnvelope envelope;
    envelope.payloadType = std::move(payloadType);
    envelope.payload = std::move(payload);
    const std::vector<std::uint8_t> signed_ = dssePreAuthEncoding(envelope.payloadType, ByteSpan(envelope.payload));
    envelope.signatures.push_back({key.publicKey().keyId(), key.sign(ByteSpan(signed_))});
    return envelope;
}

nlohmann::json DsseEnvelope::toJson() const
{
    nlohmann::json signatures = nlohmann::json::array();
    for (const DsseSignature& signature : this->signatures)
        signatures.push_back({{"keyid", signature.keyId}, {"sig", base64Encode(ByteSpan(signature.signature))}});
    return {{"payloadType", payloadType}, {"payload", base64Encode(ByteSpan(payload))}, {"signatures", signatures}};
}

DsseEnvelope DsseEnvelope::parse(const nlohmann::json& json, std::string_view what)
{
    if (!json.is_object())
        throw FormatError(std::string(what) + " must be a JSON object (a DSSE envelope)");
    DsseEnvelope envelope;
    envelope.payloadType = stringMember(json, "payloadType", what);
    envelope.payload = base64Decode(stringMember(json, "payload", what), std::string(what) + " payload");
    const auto signatures = json.find("signatures");
    if (signatures == json.end() || !signatures->is_array() || signatures->empty() || signatures->size() > kMaxSignatures)
        throw FormatError(std::string(what) + ": member \"signatures\" must be an array of 1 to " + std::to_string(kMaxSignatures) + " signatures");
    for (const nlohmann::json& entry : *signatures) {
        if (!entry.is_object())
            throw FormatError(std::string(what) + ": a signature must be a JSON object");
        const std::string where = std::string(what) + " signature";
        DsseSignature signature;
        if (const auto keyId = entry.find("keyid"); keyId != entry.end()) {
            if (!keyId->is_string())
                throw FormatError(where + ": member \"keyid\" must be a string");
            signature.keyId = keyId->get<std::string>();
        }
        signature.signature = base64Decode(stringMember(entry, "sig", where), where);
        envelope.signatures.push_back(std::move(signature));
    }
    return envelope;
}

bool DsseEnvelope::verifiedBy(const VerifyingKey& key) const
{
    const std::vector<std::uint8_t> signed_ = dssePreAuthEncoding(payloadType, ByteSpan(payload));
    for (const DsseSignature& signature : signatures)
        if ((signature.keyId.empty() || signature.keyId == key.keyId()) && key.verify(ByteSpan(signed_), ByteSpan(signature.signature)))
            return true;
    return false;
}

}  // namespace zkdv
