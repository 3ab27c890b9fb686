// Fuzz target for signatures read from someone else: a seal's `signature` member (tape format
// 1.11, checkTapeSignature) and a signed audit verdict (checkAuditAttestation). Any bytes may
// be refused with a zkdv::Error (FormatError for malformed ones); nothing else may escape, and
// nothing made up verifies. See docs/fuzzing.md for how it is built and run.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/report/audit_attestation.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_signature.h"
#include "zkdv/util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string text(reinterpret_cast<const char*>(data), size);
    // A tape of nothing, and a key made for this run: no input can have been signed with it.
    static const zkdv::RootRecord root;
    static const zkdv::SigningKey key = zkdv::SigningKey::generate(zkdv::KeyAlgorithm::Ed25519);
    zkdv::SealFacts facts;
    facts.root = &root;
    try {
        (void)zkdv::checkTapeSignature(text, facts);
    } catch (const zkdv::Error&) {
    }
    try {
        (void)zkdv::checkAuditAttestation(text, {key.publicKey()});
        __builtin_trap();  // verified by a key nobody else has
    } catch (const zkdv::Error&) {
    }
    return 0;
}
