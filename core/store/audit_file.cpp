#include "zkdv/store/audit_file.h"

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/error.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

AuditFileKind sniffAuditFile(const std::string& path)
{
    std::error_code error;
    if (std::filesystem::is_directory(path, error))
        throw IoError("cannot read " + path + ": it is a folder");
    // MappedFile refuses FIFOs and devices, which a plain open would wait on or read forever.
    const MappedFile file(path);
    char head[16] = {};
    const std::uint64_t got = std::min<std::uint64_t>(file.size(), sizeof head);
    file.read(0, head, got);
    if (got >= 8 && std::memcmp(head, tape::kMagic, sizeof tape::kMagic) == 0)
        return AuditFileKind::Tape;
    if (got == 16 && std::memcmp(head, "SQLite format 3", 16) == 0)
        return AuditFileKind::Case;
    return AuditFileKind::Other;
}

}  // namespace zkdv
