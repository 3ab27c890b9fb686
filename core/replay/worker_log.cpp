#include "worker_log.h"

#include <algorithm>

namespace zkdv::worker {

WorkerLog::~WorkerLog()
{
    if (file_)
        std::fclose(file_);
}

void WorkerLog::append(unsigned worker, const char* stream, const std::string& text)
{
    if (text.empty())
        return;
    std::string& tail = tails_[{worker, std::string(stream) == "stderr"}];
    tail += text;
    if (tail.size() > kTailBytes)
        tail.erase(0, tail.size() - kTailBytes);

    const std::string source = "worker " + std::to_string(worker) + " " + stream;
    std::string chunk;
    if (source != lastSource_)
        chunk = (written_ || !pending_.empty() ? "\n" : "") + std::string("--- ") + source + " ---\n";
    lastSource_ = source;
    chunk += text;
    if (path_.empty()) {
        pending_ += chunk.substr(0, kMaxBytes - std::min(kMaxBytes, pending_.size()));
        return;
    }
    write(chunk);
}

void WorkerLog::setPath(std::string path)
{
    path_ = std::move(path);
    if (!pending_.empty())
        write("");
}

void WorkerLog::write(std::string chunk)
{
    chunk.insert(0, pending_);
    pending_.clear();
    if (failed_ || written_ >= kMaxBytes)
        return;
    if (!file_) {
        file_ = std::fopen(path_.c_str(), "ab");
        if (!file_) {
            failed_ = true;  // the tails still explain crashes; the log is a convenience
            return;
        }
    }
    if (written_ + chunk.size() > kMaxBytes) {
        chunk.resize(kMaxBytes - written_);
        chunk += "\n--- log truncated at " + std::to_string(kMaxBytes) + " bytes ---\n";
    }
    std::fwrite(chunk.data(), 1, chunk.size(), file_);
    std::fflush(file_);
    written_ += chunk.size();
}

std::string WorkerLog::tail(unsigned worker) const
{
    std::string text;
    for (bool errors : {true, false}) {
        auto it = tails_.find({worker, errors});
        if (it != tails_.end() && text.find_first_not_of(" \n\t") == std::string::npos)
            text = it->second;
    }
    for (char& c : text)
        if (c == '\n' || c == '\r' || c == '\t' || static_cast<unsigned char>(c) < 0x20)
            c = ' ';
    const std::size_t first = text.find_first_not_of(' '), last = text.find_last_not_of(' ');
    return first == std::string::npos ? std::string() : text.substr(first, last - first + 1);
}

}  // namespace zkdv::worker
