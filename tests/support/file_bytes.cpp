#include "file_bytes.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace zkdv::test {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int error)
{
    throw std::runtime_error(what + " " + path + (error ? ": " + std::string(std::strerror(error)) : std::string()));
}

// stdio rather than streams: every failing call sets errno, so the message says why.
template <typename Bytes>
Bytes readFile(const std::string& path)
{
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (!file)
        fail("cannot open", path, errno);
    Bytes bytes;
    char buffer[1 << 16];
    for (;;) {
        const std::size_t n = std::fread(buffer, 1, sizeof buffer, file);
        bytes.insert(bytes.end(), buffer, buffer + n);
        if (n < sizeof buffer)
            break;
    }
    const int error = std::ferror(file) ? errno : 0;
    std::fclose(file);
    if (error)
        fail("cannot read", path, error);
    return bytes;
}

void writeFile(const std::string& path, const void* data, std::size_t length)
{
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (!file)
        fail("cannot create", path, errno);
    const bool written = std::fwrite(data, 1, length, file) == length;
    const int writeError = written ? 0 : errno;
    // A full disk may show only when the buffer is flushed, at close.
    const bool closed = std::fclose(file) == 0;
    if (!written)
        fail("cannot write", path, writeError);
    if (!closed)
        fail("cannot write", path, errno);
}

}  // namespace

std::vector<std::uint8_t> readAll(const std::string& path) { return readFile<std::vector<std::uint8_t>>(path); }

std::string readText(const std::string& path) { return readFile<std::string>(path); }

void writeAll(const std::string& path, const std::vector<std::uint8_t>& bytes, std::size_t length)
{
    if (length > bytes.size())
        throw std::runtime_error("cannot write " + std::to_string(length) + " bytes to " + path + " from " +
                                 std::to_string(bytes.size()));
    writeFile(path, bytes.data(), length);
}

void writeAll(const std::string& path, const std::vector<std::uint8_t>& bytes) { writeAll(path, bytes, bytes.size()); }

void writeText(const std::string& path, const std::string& text) { writeFile(path, text.data(), text.size()); }

}  // namespace zkdv::test
