#pragma once
// What kind of file the auditor handed over, told from its first bytes (not its name):
// a tape, an audit case, or something else (perhaps a sealed program).

#include <string>

namespace zkdv {

enum class AuditFileKind { Tape, Case, Other };

// Throws IoError naming the path when it cannot be read (or is a directory).
AuditFileKind sniffAuditFile(const std::string& path);

}  // namespace zkdv
