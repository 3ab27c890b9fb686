#pragma once
// A read-only memory map of a whole file whose pages can be handed back as reading moves on,
// so resident memory stays bounded however large the file is. The file stays open, so it
// can also be read with plain positioned reads into the caller's buffers, which is cheaper
// than first-touching the map page by page when the bytes are read once, in order.

#include <cstdint>
#include <string>

#include "zkdv/util/byte_span.h"

namespace zkdv {

class MappedFile {
public:
    // Throws IoError naming the path and the system's reason.
    // Only regular files: a FIFO, socket, device or directory is refused before anything
    // waits on it.
    explicit MappedFile(const std::string& path);
    // Bytes already in memory, read through the same interface as a file's (the caller
    // keeps them alive; release() does nothing): lets a parser of files run on a buffer, as
    // the fuzz targets do, without a scratch file.
    MappedFile(ByteSpan bytes, std::string name);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::string& path() const { return path_; }
    std::uint64_t size() const { return size_; }
    ByteSpan bytes() const { return ByteSpan(data_, size_); }
    ByteSpan bytes(std::uint64_t offset, std::uint64_t length) const { return ByteSpan(data_ + offset, length); }

    // Drops the pages wholly inside [offset, offset + length) from this process's resident
    // set; they stay in the page cache and fault back in if read again.
    void release(std::uint64_t offset, std::uint64_t length) const;

    // Copies bytes [offset, offset + length) into `into` with pread(); the range must lie
    // within size(). Safe to call from several threads. Throws IoError naming the path
    // when the system refuses or the file has shrunk since it was opened.
    void read(std::uint64_t offset, void* into, std::uint64_t length) const;

private:
    std::string path_;
    int fd_ = -1;
    const std::uint8_t* data_ = nullptr;
    std::uint64_t size_ = 0;
    bool owned_ = true;  // mapped by this object (and fd_ is open)
};

}  // namespace zkdv
