#include "zkdv/util/small_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "zkdv/util/error.h"

namespace zkdv {

std::string readSmallFile(const std::string& path, std::uint64_t maxBytes, const std::string& what)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw IoError("cannot read " + path + ": " + std::strerror(errno));
    std::string text;
    char buffer[1 << 16];
    while (in) {
        in.read(buffer, sizeof buffer);
        text.append(buffer, static_cast<std::size_t>(in.gcount()));
        if (text.size() > maxBytes)
            throw FormatError(path + " is larger than " + what + " can be (" + std::to_string(maxBytes >> 20) + " MiB)");
    }
    if (in.bad())
        throw IoError("cannot read " + path);
    return text;
}

}  // namespace zkdv
