// Benchmark of verify and ingest on a large tape: throughput against a plain SHA-256 of
// the same file, peak memory of each command, side by side in one run.
//
//   bench_tape [--transactions N] [--batch-size B] [--dir DIR] [--runs R] [--baseline ZKDV_AUDIT]
//
// Each measured command runs as a child process, so its peak RSS and CPU time are its own.
// --baseline names another zkdv-audit (an older build): its verify and ingest then run in
// turn with this build's, so both see the same machine load, and the table shows both.

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/tape/tape_scanner.h"

namespace {

struct Measurement {
    double seconds = 0;
    double cpuSeconds = 0;  // user + system
    long peakRssKiB = 0;
    int exitCode = 0;
};

Measurement runChild(const std::vector<std::string>& command)
{
    std::vector<char*> argv;
    for (const std::string& part : command)
        argv.push_back(const_cast<char*>(part.c_str()));
    argv.push_back(nullptr);
    auto start = std::chrono::steady_clock::now();
    pid_t pid = fork();
    if (pid == 0) {
        // Only the figures of this benchmark go to stdout.
        if (int devnull = open("/dev/null", O_WRONLY); devnull >= 0)
            dup2(devnull, STDOUT_FILENO);
        execv(argv[0], argv.data());
        std::perror("execv");
        _exit(127);
    }
    int status = 0;
    struct rusage usage {};
    wait4(pid, &status, 0, &usage);
    Measurement m;
    m.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    m.peakRssKiB = usage.ru_maxrss;
    m.cpuSeconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                   static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
    m.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return m;
}

std::string findProgram(const char* name)
{
    for (const char* dir : {"/usr/bin", "/bin"}) {
        std::string path = std::string(dir) + "/" + name;
        if (access(path.c_str(), X_OK) == 0)
            return path;
    }
    return name;
}

}  // namespace

int main(int argc, char** argv)
{
    std::uint64_t transactions = 1000000;
    int batchSize = 20;
    int runs = 3;
    std::string dir = std::filesystem::temp_directory_path() / "zkdv-bench";
    std::string baseline;
    const char* usage = "usage: bench_tape [--transactions N] [--batch-size B] [--dir DIR] [--runs R] [--baseline ZKDV_AUDIT]\n";
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
            std::printf("%s", usage);
            return 0;
        }
    if (argc % 2 == 0) {
        std::fprintf(stderr, "bench_tape: %s needs a value\n%s", argv[argc - 1], usage);
        return 2;
    }
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--transactions")
            transactions = std::stoull(argv[i + 1]);
        else if (flag == "--batch-size")
            batchSize = std::stoi(argv[i + 1]);
        else if (flag == "--dir")
            dir = argv[i + 1];
        else if (flag == "--runs")
            runs = std::stoi(argv[i + 1]);
        else if (flag == "--baseline")
            baseline = argv[i + 1];
        else {
            std::fprintf(stderr, "bench_tape: unknown option %s\n%s", flag.c_str(), usage);
            return 2;
        }
    }
    std::filesystem::create_directories(dir);
    const std::string tape = dir + "/bench-" + std::to_string(transactions) + "-" + std::to_string(batchSize) + ".zkdv";
    if (!std::filesystem::exists(tape)) {
        std::fprintf(stderr, "writing %s ...\n", tape.c_str());
        zkdv::SyntheticDemoOptions options;
        options.steps = transactions;
        options.batchSize = batchSize;
        options.overwrite = true;
        auto start = std::chrono::steady_clock::now();
        auto result = zkdv::writeSyntheticDemoTape(tape + ".part", options);
        std::filesystem::rename(tape + ".part", tape);
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::fprintf(stderr, "wrote %.2f GB in %.1f s\n", static_cast<double>(result.bytes) / 1e9, seconds);
    }
    const double gigabytes = static_cast<double>(std::filesystem::file_size(tape)) / 1e9;
    const std::string audit = ZKDV_AUDIT_EXECUTABLE;
    const std::string caseFile = dir + "/bench.zkaudit";

    struct Row {
        std::string name;
        std::vector<std::string> command;
        bool freshCase;
        std::vector<Measurement> samples;
    };
    std::vector<Row> rows = {
        {"sha256sum (one core, reference)", {findProgram("sha256sum"), tape}, false, {}},
        // The SHA-256 every record digest goes through (OpenSSL, SHA-NI where the CPU has it).
        {"openssl dgst -sha256 (one core, reference)", {findProgram("openssl"), "dgst", "-sha256", tape}, false, {}},
        {"zkdv-audit verify", {audit, "verify", "--quiet", tape}, false, {}},
        {"zkdv-audit verify --sha256", {audit, "verify", "--quiet", "--sha256", tape}, false, {}},
        {"zkdv-audit ingest (new case)", {audit, "ingest", "--quiet", "--case", caseFile, tape}, true, {}},
        {"zkdv-audit ingest --sha256 (new case)", {audit, "ingest", "--quiet", "--sha256", "--case", caseFile, tape}, true, {}},
    };
    if (!baseline.empty()) {
        rows.push_back({"baseline verify", {baseline, "verify", "--quiet", tape}, false, {}});
        rows.push_back({"baseline verify --sha256", {baseline, "verify", "--quiet", "--sha256", tape}, false, {}});
        rows.push_back({"baseline ingest (new case)", {baseline, "ingest", "--quiet", "--case", caseFile, tape}, true, {}});
        // Alternate: this build's command, then the baseline's same command.
        std::vector<Row> alternated;
        for (std::size_t i : {0, 1, 2, 6, 3, 7, 4, 8, 5})
            alternated.push_back(std::move(rows[i]));
        rows = std::move(alternated);
    }
    // Warm the page cache so every command reads from memory, as all later runs do.
    runChild(rows[0].command);
    for (int run = 0; run < runs; ++run)
        for (Row& row : rows) {
            if (row.freshCase)
                for (const char* suffix : {"", "-wal", "-shm"})
                    std::filesystem::remove(caseFile + suffix);
            row.samples.push_back(runChild(row.command));
        }

    std::printf("tape: %s, %.3f GB, %llu transactions; %d runs each, median shown\n", tape.c_str(), gigabytes,
                static_cast<unsigned long long>(transactions), runs);
    std::printf("%-34s %9s %9s %11s %9s %10s %5s\n", "command", "seconds", "GB/s", "vs sha256", "CPU s", "peak RSS", "exit");
    double reference = 0;
    for (Row& row : rows) {
        std::sort(row.samples.begin(), row.samples.end(), [](auto& a, auto& b) { return a.seconds < b.seconds; });
        const Measurement& median = row.samples[row.samples.size() / 2];
        long peak = 0;
        for (const Measurement& m : row.samples)
            peak = std::max(peak, m.peakRssKiB);
        if (reference == 0)
            reference = median.seconds;
        std::vector<double> cpu;
        for (const Measurement& m : row.samples)
            cpu.push_back(m.cpuSeconds);
        std::sort(cpu.begin(), cpu.end());
        std::printf("%-34s %9.3f %9.3f %10.2fx %9.2f %7ld MB %5d\n", row.name.c_str(), median.seconds,
                    gigabytes / median.seconds, reference / median.seconds, cpu[cpu.size() / 2], peak / 1024,
                    median.exitCode);
        std::fflush(stdout);
    }
    if (!baseline.empty()) {
        // The rows alternate: this build's command, then the baseline's.
        std::printf("\nthis build's median time / the baseline's, same run:\n");
        for (std::size_t i = 2; i + 1 < rows.size(); ++i) {
            if (rows[i + 1].name.rfind("baseline ", 0) != 0)
                continue;
            const auto median = [](const Row& row) { return row.samples[row.samples.size() / 2].seconds; };
            std::printf("  %-32s %6.2fx\n", rows[i].name.c_str(), median(rows[i]) / median(rows[i + 1]));
        }
    }
    return 0;
}
