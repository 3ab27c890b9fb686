#include "zkdv/store/audit_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/error.h"

namespace zkdv {

AuditFileKind sniffAuditFile(const std::string& path)
{
    std::error_code error;
    if (std::filesystem::is_directory(path, error))
        throw IoError("cannot read " + path + ": it is a folder");
    std::ifstream file(path, std::ios::binary);
    if (!file)
        throw IoError("cannot open " + path + ": " + std::strerror(errno));
    char head[16] = {};
    file.read(head, sizeof head);
    if (file.gcount() >= 8 && std::memcmp(head, tape::kMagic, sizeof tape::kMagic) == 0)
        return AuditFileKind::Tape;
    if (file.gcount() == 16 && std::memcmp(head, "SQLite format 3", 16) == 0)
        return AuditFileKind::Case;
    return AuditFileKind::Other;
}

}  // namespace zkdv
