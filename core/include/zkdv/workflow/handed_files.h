#pragma once
// What the auditor handed over at once (named on the command line, dropped on the window,
// chosen in a dialog), sorted by kind: folders stand for every file under them, and each
// file is told by its first bytes. One unreadable file is named, never the end of the rest.

#include <string>
#include <vector>

namespace zkdv {

// `paths` with each folder replaced by the readable files under it (recursively), those in
// byte order of their paths: the same order on every machine.
std::vector<std::string> expandFolders(const std::vector<std::string>& paths);

struct HandedFiles {
    std::vector<std::string> cases;   // audit cases, in the order given
    std::vector<std::string> tapes;
    std::vector<std::string> others;  // perhaps sealed programs (ingest says)
    std::vector<std::string> unreadable;  // one line each: the file and why
};

// Sorts `paths` (folders expanded) by their kind.
HandedFiles sortHandedFiles(const std::vector<std::string>& paths);

}  // namespace zkdv
