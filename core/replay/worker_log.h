#pragma once
// What replay workers print (the trainer's program may print anything): kept out of the
// parent's stdout and stderr, in one bounded log file per run, and the last lines of each
// worker kept to explain a crash.

#include <cstdio>
#include <map>
#include <string>

namespace zkdv::worker {

class WorkerLog {
public:
    static constexpr std::size_t kMaxBytes = 4u << 20;
    static constexpr std::size_t kTailBytes = 600;

    // The file is created at the first output, not before. Output that comes before the log
    // has a path (a run's log is named after the run) is kept until setPath().
    explicit WorkerLog(std::string path = {}) : path_(std::move(path)) {}
    void setPath(std::string path);
    ~WorkerLog();
    WorkerLog(const WorkerLog&) = delete;
    WorkerLog& operator=(const WorkerLog&) = delete;

    void append(unsigned worker, const char* stream, const std::string& text);
    // The end of what the worker wrote to stderr (then stdout), on one line; "" when nothing.
    std::string tail(unsigned worker) const;
    // The log's path once something was written to it, else "".
    std::string writtenPath() const { return file_ ? path_ : std::string(); }

private:
    void write(std::string chunk);

    std::string path_;
    std::FILE* file_ = nullptr;
    bool failed_ = false;
    std::size_t written_ = 0;
    std::string lastSource_;
    std::string pending_;  // written before the log had a path
    std::map<std::pair<unsigned, bool>, std::string> tails_;  // (worker, stderr?) -> last bytes
};

}  // namespace zkdv::worker
