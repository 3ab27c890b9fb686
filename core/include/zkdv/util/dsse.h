#pragma once
// DSSE, the Dead Simple Signing Envelope (github.com/secure-systems-lab/dsse, v1): a payload,
// its type, and signatures over the pre-authentication encoding of both, as in-toto
// attestations and Sigstore bundles carry them. Envelopes read from files are untrusted:
// parse() bounds and checks every member.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkdv/util/byte_span.h"
#include "zkdv/util/signing_key.h"

namespace zkdv {

inline constexpr char kInTotoPayloadType[] = "application/vnd.in-toto+json";
// A Sigstore bundle (v0.3) is how signed attestations and model signatures travel as files.
inline constexpr char kSigstoreBundleType[] = "application/vnd.dev.sigstore.bundle.v0.3+json";

std::string base64Encode(ByteSpan bytes);
// Standard alphabet with padding; throws FormatError naming `what` for anything else.
std::vector<std::uint8_t> base64Decode(std::string_view text, std::string_view what);

// "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body: the bytes a DSSE signature signs.
std::vector<std::uint8_t> dssePreAuthEncoding(std::string_view payloadType, ByteSpan payload);

struct DsseSignature {
    std::string keyId;
    std::vector<std::uint8_t> signature;
};

struct DsseEnvelope {
    std::string payloadType;
    std::vector<std::uint8_t> payload;
    std::vector<DsseSignature> signatures;

    // Signs `payload` with `key` into a one-signature envelope.
    static DsseEnvelope sign(std::string payloadType, std::vector<std::uint8_t> payload, const SigningKey& key);
    nlohmann::json toJson() const;
    // Throws FormatError naming `what` and the member at fault.
    static DsseEnvelope parse(const nlohmann::json& json, std::string_view what);
    // Whether a signature by `key` (matched by key id) verifies.
    bool verifiedBy(const VerifyingKey& key) const;
};

}  // namespace zkdv
