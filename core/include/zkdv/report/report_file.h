#pragma once
// How a report reaches its file, the same for the CLI and the workstation: its format named
// by the file's extension, and an atomic write (a reader never sees half a report, and a
// failed write leaves the old file).

#include <string>

namespace zkdv {

// "json", "csv", "pdf" or "html" (".htm" too), by the extension of `path` in any case; ""
// for anything else.
std::string reportFormatOf(const std::string& path);

// Where a report is written before it is renamed over `path`: beside it, so the rename
// stays on one file system.
std::string reportTemporaryPath(const std::string& path);

// Replaces `path` with `content`: written to reportTemporaryPath(path), flushed, then
// renamed over it. Throws IoError naming `path`; the temporary file is removed then.
void writeReportFile(const std::string& path, const std::string& content);

// Renames a report written to reportTemporaryPath(path) over `path`; throws IoError naming
// `path` (and removes the temporary file) when it cannot.
void publishReportFile(const std::string& path);

}  // namespace zkdv
