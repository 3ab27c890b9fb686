#include "zkdv/provenance/dataset_files.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <thread>

#include "zkdv/util/error.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/utf8.h"

namespace zkdv {

namespace fs = std::filesystem;

namespace {

constexpr unsigned kMaxThreads = 8;
constexpr std::size_t kChunkBytes = 1u << 20;

// The folder walk's own paths use '/' on every platform this builds on; a committed path is
// the generic form, which is '/'-separated everywhere.
std::string committedPathOf(const fs::path& relative)
{
    return relative.generic_string();
}

CommittedFile hashOne(const DatasetFile& source, std::atomic<std::uint64_t>& bytesDone, const std::atomic<bool>& stop)
{
    const int fd = ::open(source.file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        throw IoError("cannot open " + source.file + ": " + std::strerror(errno));
    Sha256 hasher;
    std::vector<std::uint8_t> buffer(kChunkBytes);
    std::uint64_t size = 0;
    for (;;) {
        if (stop.load(std::memory_order_relaxed))
            break;
        const ssize_t got = ::read(fd, buffer.data(), buffer.size());
        if (got < 0) {
            if (errno == EINTR)
                continue;
            const int error = errno;
            ::close(fd);
            throw IoError("cannot read " + source.file + ": " + std::strerror(error));
        }
        if (got == 0)
            break;
        hasher.update(ByteSpan(buffer.data(), static_cast<std::size_t>(got)));
        size += static_cast<std::uint64_t>(got);
        bytesDone.fetch_add(static_cast<std::uint64_t>(got), std::memory_order_relaxed);
    }
    ::close(fd);
    CommittedFile result;
    result.path = source.path;
    result.size = size;
    result.sha256 = hasher.finish();
    return result;
}

}  // namespace

std::vector<DatasetFile> listDatasetFolder(const std::string& folder, const std::string& exclude)
{
    std::error_code error;
    if (!fs::is_directory(folder, error))
        throw IoError(folder + " is not a readable folder" + (error ? ": " + error.message() : std::string()));
    std::optional<fs::path> excluded;
    if (!exclude.empty() && fs::exists(exclude, error))
        excluded = fs::canonical(exclude, error);
    std::vector<DatasetFile> files;
    fs::recursive_directory_iterator it(folder, fs::directory_options::none, error);
    if (error)
        throw IoError("cannot read the folder " + folder + ": " + error.message());
    for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
        if (error)
            throw IoError("cannot read the folder " + folder + ": " + error.message());
        const fs::directory_entry& entry = *it;
        std::error_code statError;
        if (!entry.is_regular_file(statError))
            continue;  // folders are walked; sockets, devices and dangling links hold no data
        if (excluded) {
            std::error_code same;
            if (fs::equivalent(entry.path(), *excluded, same))
                continue;
        }
        DatasetFile file;
        file.path = committedPathOf(entry.path().lexically_relative(folder));
        if (!isValidUtf8(file.path))
            throw Error("cannot commit " + toValidUtf8(entry.path().string()) + ": its name is not valid UTF-8");
        file.file = entry.path().string();
        file.size = entry.file_size(statError);
        files.push_back(std::move(file));
    }
    if (error)
        throw IoError("cannot read the folder " + folder + ": " + error.message());
    std::sort(files.begin(), files.end(), [](const DatasetFile& a, const DatasetFile& b) { return commitmentPathLess(a.path, b.path); });
    return files;
}

std::vector<DatasetFile> listDatasetFiles(const std::vector<std::string>& paths)
{
    std::vector<DatasetFile> files;
    for (const std::string& given : paths) {
        const fs::path path(given);
        if (path.is_absolute())
            throw Error(given + ": give files by a relative path (it is what the commitment records), or commit their folder");
        const fs::path normal = path.lexically_normal();
        if (!normal.empty() && *normal.begin() == "..")
            throw Error(given + ": the path climbs out of the current folder with \"..\"; commit from a folder above it");
        std::error_code error;
        if (!fs::is_regular_file(path, error))
            throw IoError(given + " is not a readable regular file" + (error ? ": " + error.message() : std::string()));
        DatasetFile file;
        file.path = committedPathOf(normal);
        file.file = given;
        file.size = fs::file_size(path, error);
        files.push_back(std::move(file));
    }
    std::sort(files.begin(), files.end(), [](const DatasetFile& a, const DatasetFile& b) { return commitmentPathLess(a.path, b.path); });
    return files;
}

std::vector<CommittedFile> hashDatasetFiles(const std::vector<DatasetFile>& files, ProgressSink* progress, unsigned threads)
{
    if (threads == 0)
        threads = std::max(1u, std::min(std::thread::hardware_concurrency(), kMaxThreads));
    threads = static_cast<unsigned>(std::min<std::size_t>(threads, std::max<std::size_t>(files.size(), 1)));
    std::uint64_t totalBytes = 0;
    for (const DatasetFile& file : files)
        totalBytes += file.size;

    std::vector<CommittedFile> results(files.size());
    std::atomic<std::size_t> next{0};
    std::atomic<std::uint64_t> bytesDone{0};
    std::atomic<std::size_t> filesDone{0};
    std::atomic<bool> stop{false};
    std::mutex failureMutex;
    std::exception_ptr failure;
    auto work = [&]() {
        for (;;) {
            const std::size_t index = next.fetch_add(1);
            if (index >= files.size() || stop.load())
                return;
            try {
                results[index] = hashOne(files[index], bytesDone, stop);
            } catch (...) {
                std::lock_guard<std::mutex> lock(failureMutex);
                if (!failure)
                    failure = std::current_exception();
                stop.store(true);
                return;
            }
            filesDone.fetch_add(1);
        }
    };
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned t = 0; t < threads; ++t)
        pool.emplace_back(work);
    // The sink is not shared with the workers: this thread reports and polls for a stop.
    bool cancelled = false;
    while (filesDone.load() < files.size() && !stop.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        if (progress) {
            // Files may have grown since they were listed: never report past the total.
            progress->report(std::min(bytesDone.load(), totalBytes), totalBytes, "hashing");
            if (progress->cancelRequested()) {
                cancelled = true;
                stop.store(true);
            }
        }
    }
    for (std::thread& thread : pool)
        thread.join();
    if (failure)
        std::rethrow_exception(failure);
    if (cancelled)
        throw OperationCancelled();
    if (progress)
        progress->report(totalBytes, totalBytes, "hashing");
    return results;
}

}  // namespace zkdv
