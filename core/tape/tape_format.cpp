#include "zkdv/tape/tape_format.h"

namespace zkdv::tape {

std::string_view recordTypeName(std::uint32_t type)
{
    switch (static_cast<RecordType>(type)) {
    case RecordType::Root: return "root";
    case RecordType::Program: return "program";
    case RecordType::Snapshot: return "snapshot";
    case RecordType::Transaction: return "transaction";
    case RecordType::Seal: return "seal";
    }
    return "unknown";
}

bool isKnownRecordType(std::uint32_t type) { return type >= 1 && type <= 5; }

}  // namespace zkdv::tape
