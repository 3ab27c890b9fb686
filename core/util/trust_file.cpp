#include "zkdv/util/trust_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <system_error>

#include "zkdv/util/error.h"

namespace zkdv {

namespace fs = std::filesystem;

namespace {

// The kernel's own limit on links followed in one path (ELOOP): a longer chain is a loop.
constexpr int kMostLinks = 40;

std::string octalMode(mode_t mode)
{
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
    return text;
}

struct stat statOf(const fs::path& path, bool followLink, const std::string& what)
{
    struct stat status {};
    if ((followLink ? ::stat(path.c_str(), &status) : ::lstat(path.c_str(), &status)) != 0)
        throw Error("cannot read " + what + " " + path.string() + ": " + std::strerror(errno));
    return status;
}

// What someone else owns they may change at will, permissions or not.
void requireOwnedByUser(const fs::path& path, const struct stat& status, const std::string& what)
{
    if (status.st_uid != ::geteuid() && status.st_uid != 0)
        throw Error(what + " " + path.string() + " belongs to user id " + std::to_string(status.st_uid) +
                    ", not to this user or root; refusing to use it (replace it with one of your own)");
}

// The folder `path` lies in: whoever may write there may replace what lies in it, unless the
// folder is sticky, where only an entry's owner may rename or remove it.
void requireFolderOf(const fs::path& path, const fs::path& named, const std::string& what)
{
    const fs::path folder = path.parent_path();
    if (folder.empty())
        return;
    const struct stat status = statOf(folder, true, "the folder of " + what);
    if (status.st_uid != ::geteuid() && status.st_uid != 0)
        throw Error(what + " " + named.string() + " lies in the folder " + folder.string() + ", which belongs to user id " +
                    std::to_string(status.st_uid) + ", not to this user or root; refusing to use it (move it to a folder of your own)");
    if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0 && (status.st_mode & S_ISVTX) == 0)
        throw Error(what + " " + named.string() + " lies in the folder " + folder.string() + " with permissions " + octalMode(status.st_mode) +
                    ", where other users may replace it; refusing to use it. Fix it with: chmod go-w " + folder.string());
}

// Where `named` ends after its symbolic links, each link's own folder judged on the way: a
// link others may replace points wherever they like, however well kept its target is.
fs::path followLinks(const fs::path& named, const std::string& what)
{
    std::error_code error;
    fs::path path = fs::absolute(named, error).lexically_normal();
    if (error)
        throw Error("cannot read " + what + " " + named.string() + ": " + error.message());
    for (int hop = 0;; ++hop) {
        requireFolderOf(path, named, what);
        if (!S_ISLNK(statOf(path, false, what).st_mode))
            return path;
        if (hop == kMostLinks)
            throw Error(what + " " + named.string() + " is a chain of more than " + std::to_string(kMostLinks) + " symbolic links");
        const fs::path target = fs::read_symlink(path, error);
        if (error)
            throw Error("cannot read the symbolic link " + path.string() + " (" + what + " " + named.string() + "): " + error.message());
        path = (target.is_absolute() ? target : path.parent_path() / target).lexically_normal();
    }
}

std::string linkedTo(const fs::path& named, const fs::path& real)
{
    std::error_code error;
    return real == fs::absolute(named, error).lexically_normal() ? std::string() : " (a link to " + real.string() + ")";
}

}  // namespace

void requireTrustFile(const fs::path& file, TrustFileUse use, const std::string& what)
{
    const fs::path real = followLinks(file, what);
    const struct stat status = statOf(real, true, what);
    if (!S_ISREG(status.st_mode))
        throw Error(what + " " + file.string() + linkedTo(file, real) + " is not a regular file");
    requireOwnedByUser(real, status, what);
    const bool secret = use == TrustFileUse::Secret;
    // A private key anyone can read signs for anyone; a key or list anyone can write vouches for anyone.
    const mode_t open = secret ? (S_IRWXG | S_IRWXO) : (S_IWGRP | S_IWOTH);
    if ((status.st_mode & open) != 0)
        throw Error(what + " " + file.string() + linkedTo(file, real) + " has permissions " + octalMode(status.st_mode) +
                    ", which let other users " + (secret ? "read it" : "change it") + "; refusing to use it. Fix it with: chmod " +
                    (secret ? "600" : "go-w") + " " + real.string());
}

std::vector<fs::path> trustFolderFiles(const fs::path& folder, const std::string& extension, const std::string& what)
{
    std::error_code error;
    if (fs::symlink_status(folder, error).type() == fs::file_type::not_found)
        return {};
    if (error)  // there, perhaps, but unreadable: refused, not taken for empty
        throw Error("cannot read " + what + " " + folder.string() + ": " + error.message());
    const fs::path real = followLinks(folder, what);
    const struct stat status = statOf(real, true, what);
    if (!S_ISDIR(status.st_mode))
        throw Error(what + " " + folder.string() + linkedTo(folder, real) + " is not a folder");
    requireOwnedByUser(real, status, what);
    // Sticky or not: a folder others may add to is one they may add a key to.
    if ((status.st_mode & (S_IWGRP | S_IWOTH)) != 0)
        throw Error(what + " " + folder.string() + linkedTo(folder, real) + " has permissions " + octalMode(status.st_mode) +
                    ", which let other users add files to it; refusing to use it. Fix it with: chmod go-w " + real.string());
    std::vector<fs::path> files;
    for (fs::directory_iterator it(real, error), end; !error && it != end; it.increment(error))
        if (it->path().extension() == extension)
            files.push_back(folder / it->path().filename());
    if (error)
        throw Error("cannot read " + what + " " + folder.string() + ": " + error.message());
    std::sort(files.begin(), files.end());
    for (const fs::path& file : files)
        requireTrustFile(file, TrustFileUse::Vouching, "the key file");
    return files;
}

}  // namespace zkdv
