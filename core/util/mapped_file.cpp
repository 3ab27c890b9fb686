#include "zkdv/util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "zkdv/util/error.h"

namespace zkdv {

namespace {
std::string systemError(const std::string& what, const std::string& path)
{
    return what + " " + path + ": " + std::strerror(errno);
}

std::uint64_t pageSize()
{
    static const std::uint64_t size = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    return size;
}

// For the message refusing a file that is not a regular one.
const char* kindOf(mode_t mode)
{
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    return "a special file";
}
}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path)
{
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever.
    // Only regular files are read, and for them the flag changes nothing.
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        throw IoError(systemError("cannot open", path));
    struct stat info {};
    if (::fstat(fd, &info) != 0) {
        int saved = errno;
        ::close(fd);
        errno = saved;
        throw IoError(systemError("cannot stat", path));
    }
    if (!S_ISREG(info.st_mode)) {
        ::close(fd);
        throw IoError("cannot read " + path + ": it is " + kindOf(info.st_mode) + ", not a regular file");
    }
    size_ = static_cast<std::uint64_t>(info.st_size);
    if (size_ > 0) {
        void* mapped = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (mapped == MAP_FAILED) {
            int saved = errno;
            ::close(fd);
            errno = saved;
            throw IoError(systemError("cannot map", path));
        }
        data_ = static_cast<const std::uint8_t*>(mapped);
        ::madvise(mapped, size_, MADV_SEQUENTIAL);
        // Tell the kernel the whole file will be read in order (read-ahead for read()).
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    fd_ = fd;
}

MappedFile::MappedFile(ByteSpan bytes, std::string name) : path_(std::move(name)), data_(bytes.data), size_(bytes.size), owned_(false) {}

MappedFile::~MappedFile()
{
    if (data_ && owned_)
        ::munmap(const_cast<std::uint8_t*>(data_), size_);
    if (fd_ >= 0)
        ::close(fd_);
}

void MappedFile::read(std::uint64_t offset, void* into, std::uint64_t length) const
{
    auto* out = static_cast<std::uint8_t*>(into);
    if (!owned_) {
        if (length > 0)
            std::memcpy(out, data_ + offset, length);
        return;
    }
    while (length > 0) {
        const std::size_t step = static_cast<std::size_t>(std::min<std::uint64_t>(length, 1u << 30));
        const ssize_t got = ::pread(fd_, out, step, static_cast<off_t>(offset));
        if (got < 0) {
            if (errno == EINTR)
                continue;
            throw IoError(systemError("cannot read", path_));
        }
        if (got == 0)
            throw IoError("cannot read " + path_ + ": the file ended at byte " + std::to_string(offset) +
                          ", it was " + std::to_string(size_) + " bytes long when opened");
        out += got;
        offset += static_cast<std::uint64_t>(got);
        length -= static_cast<std::uint64_t>(got);
    }
}

void MappedFile::release(std::uint64_t offset, std::uint64_t length) const
{
    if (!data_ || !owned_ || length == 0 || offset >= size_)
        return;
    std::uint64_t end = std::min(size_, offset + length);
    std::uint64_t first = (offset + pageSize() - 1) / pageSize() * pageSize();
    std::uint64_t last = end == size_ ? (end + pageSize() - 1) / pageSize() * pageSize() : end / pageSize() * pageSize();
    if (last > first)
        ::madvise(const_cast<std::uint8_t*>(data_) + first, last - first, MADV_DONTNEED);
}

}  // namespace zkdv
