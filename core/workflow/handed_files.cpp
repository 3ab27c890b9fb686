#include "zkdv/workflow/handed_files.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "zkdv/store/audit_file.h"

namespace zkdv {

std::vector<std::string> expandFolders(const std::vector<std::string>& paths)
{
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        std::error_code error;
        if (!fs::is_directory(path, error)) {
            files.push_back(path);  // a missing file is named when it is read
            continue;
        }
        std::vector<std::string> inside;
        // Unreadable subfolders are skipped, and links are not followed: a link loop never hangs.
        fs::recursive_directory_iterator it(path, fs::directory_options::skip_permission_denied, error), end;
        for (; !error && it != end; it.increment(error))
            if (it->is_regular_file(error))
                inside.push_back(it->path().string());
        std::sort(inside.begin(), inside.end());
        files.insert(files.end(), inside.begin(), inside.end());
    }
    return files;
}

HandedFiles sortHandedFiles(const std::vector<std::string>& paths)
{
    HandedFiles sorted;
    for (const std::string& path : expandFolders(paths)) {
        try {
            switch (sniffAuditFile(path)) {
            case AuditFileKind::Case: sorted.cases.push_back(path); break;
            case AuditFileKind::Tape: sorted.tapes.push_back(path); break;
            case AuditFileKind::Other: sorted.others.push_back(path); break;
            }
        } catch (const std::exception& error) {
            sorted.unreadable.push_back(error.what());
        }
    }
    return sorted;
}

}  // namespace zkdv
