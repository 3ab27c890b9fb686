#include "zkdv/report/report_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "zkdv/util/error.h"

namespace zkdv {

std::string reportFormatOf(const std::string& path)
{
    const std::size_t slash = path.find_last_of('/');
    const std::size_t dot = path.find_last_of('.');
    if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
        return {};
    std::string extension = path.substr(dot + 1);
    for (char& c : extension)
        c = static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    if (extension == "htm")
        return "html";
    return extension == "json" || extension == "csv" || extension == "pdf" || extension == "html" ? extension : std::string();
}

std::string reportTemporaryPath(const std::string& path) { return path + ".part"; }

void writeReportFile(const std::string& path, const std::string& content)
{
    const std::string temporary = reportTemporaryPath(path);
    {
        std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
        if (!out)
            throw IoError("cannot write " + path + ": cannot create " + temporary + " (" + std::strerror(errno) + ")");
        out.write(content.data(), static_cast<std::streamsize>(content.size()));
        if (!out.flush()) {
            std::remove(temporary.c_str());
            throw IoError("cannot write " + path + ": writing " + temporary + " failed");
        }
    }
    publishReportFile(path);
}

void publishReportFile(const std::string& path)
{
    const std::string temporary = reportTemporaryPath(path);
    if (std::rename(temporary.c_str(), path.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        std::remove(temporary.c_str());
        throw IoError("cannot write " + path + ": renaming " + temporary + " over it failed (" + reason + ")");
    }
}

}  // namespace zkdv
