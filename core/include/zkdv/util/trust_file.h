#pragma once
// The one rule for every file and folder the auditor's trust rests on (the signing key, the
// trusted-keys file, the trainer-keys folder and each key in it, a key named on the command
// line): as ssh judges ~/.ssh, what someone else may change is not the user's to trust.

#include <filesystem>
#include <string>
#include <vector>

namespace zkdv {

// What a trust file is to its user, which decides what others may not do to it.
enum class TrustFileUse {
    Secret,   // a private key: others may neither read nor write it (chmod 600)
    Vouching  // a public key or a trust list: others may not write it (chmod go-w)
};

// Throws Error naming the file (or the folder), its mode and the fix unless `file` is a
// regular file owned by this user or root, that `use` keeps from others, in a folder others
// may not write (unless it is sticky, where only a file's owner may replace it). A symbolic
// link is followed link by link: each link's own folder is judged too, and the file it ends at.
// `what` names the file in the message ("the trusted-keys file").
void requireTrustFile(const std::filesystem::path& file, TrustFileUse use, const std::string& what);

// The files named `*extension` in the trust folder `folder`, sorted, each judged by
// requireTrustFile(Vouching). The folder itself (followed through links as a file is) must be
// owned by this user or root and writable by nobody else, sticky or not: anyone who may add a
// file to it adds a key. A missing folder holds no files; one that cannot be read throws.
std::vector<std::filesystem::path> trustFolderFiles(const std::filesystem::path& folder, const std::string& extension, const std::string& what);

}  // namespace zkdv
