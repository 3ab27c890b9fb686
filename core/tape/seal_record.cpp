#include "zkdv/tape/seal_record.h"

#include <nlohmann/json.hpp>

#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

SealRecord SealRecord::parse(ByteSpan payload)
{
    using nlohmann::json;
    const json seal = parseUntrustedJson(payload.asString(), "seal record");
    auto count = [&](const char* name) -> std::uint64_t {
        auto it = seal.find(name);
        if (it == seal.end() || !it->is_number_unsigned())
            throw FormatError(std::string("seal record: ") + name + " must be a non-negative integer");
        return it->get<std::uint64_t>();
    };
    if (!seal.is_object())
        throw FormatError("seal record: expected a JSON object");
    SealRecord record;
    record.records = count("records");
    record.transactions = count("transactions");
    record.snapshots = count("snapshots");
    auto head = seal.find("chain_head");
    if (head == seal.end() || !head->is_string() || !digestFromHex(head->get<std::string>()))
        throw FormatError("seal record: chain_head must be 64 hex digits");
    record.chainHead = *digestFromHex(head->get<std::string>());
    auto signature = seal.find("signature");
    if (signature == seal.end())
        throw FormatError("seal record: missing member signature");
    record.signatureJson = signature->dump();
    return record;
}

}  // namespace zkdv
