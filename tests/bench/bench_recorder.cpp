// Benchmark: the demo training loop recorded vs not recorded, side by side, and peak memory
// of recorded runs of different lengths.
//
//   bench_recorder [--steps N] [--rounds R] [--dir DIR]
//
// Every run is a forked child (the parent never touches torch), so each peak RSS is that
// run's own; runs alternate recorded / unrecorded so machine drift hits both.

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "zkdv/cnn_demo/cnn_demo.h"

namespace {

struct Run {
    double seconds = 0;
    long peakRssKiB = 0;
};

Run runChild(const std::string& path, std::uint64_t steps, bool record)
{
    int channel[2];
    if (pipe(channel) != 0)
        return {};
    pid_t pid = fork();
    if (pid == 0) {
        close(channel[0]);
        zkdv::CnnDemoOptions options;
        options.steps = steps;
        options.record = record;
        options.overwrite = true;
        double seconds = -1;
        try {
            seconds = zkdv::runCnnDemo(path, options).seconds;
        } catch (const std::exception& error) {
            std::fprintf(stderr, "run failed: %s\n", error.what());
        }
        (void)!write(channel[1], &seconds, sizeof seconds);
        _exit(seconds < 0 ? 1 : 0);
    }
    close(channel[1]);
    Run run;
    (void)!read(channel[0], &run.seconds, sizeof run.seconds);
    close(channel[0]);
    int status = 0;
    struct rusage usage {};
    wait4(pid, &status, 0, &usage);
    run.peakRssKiB = usage.ru_maxrss;
    return run;
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    std::uint64_t steps = 600;
    int rounds = 3;
    std::string dir = "/tmp";
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--steps")
            steps = std::stoull(argv[i + 1]);
        else if (flag == "--rounds")
            rounds = std::stoi(argv[i + 1]);
        else if (flag == "--dir")
            dir = argv[i + 1];
    }
    const std::string tape = dir + "/bench-recorder.zkdv";
    std::vector<double> recorded, plain;
    long recordedPeak = 0, plainPeak = 0;
    for (int round = 0; round < rounds; ++round) {
        Run a = runChild(tape, steps, false), b = runChild(tape, steps, true);
        plain.push_back(a.seconds);
        recorded.push_back(b.seconds);
        plainPeak = std::max(plainPeak, a.peakRssKiB);
        recordedPeak = std::max(recordedPeak, b.peakRssKiB);
    }
    const double perStepPlain = median(plain) / static_cast<double>(steps), perStepRecorded = median(recorded) / static_cast<double>(steps);
    std::printf("CNN demo, %llu steps, snapshot every 12, 1%% sampling, %d rounds (median)\n", static_cast<unsigned long long>(steps), rounds);
    std::printf("  unrecorded  %7.3f ms/step   peak RSS %6ld MB\n", perStepPlain * 1e3, plainPeak / 1024);
    std::printf("  recorded    %7.3f ms/step   peak RSS %6ld MB\n", perStepRecorded * 1e3, recordedPeak / 1024);
    std::printf("  added wall time per step: %+.1f %%\n", (perStepRecorded / perStepPlain - 1) * 100);

    Run shortRun = runChild(tape, steps / 4, true), longRun = runChild(tape, steps * 2, true);
    std::printf("  peak RSS recorded: %llu steps %ld MB, %llu steps %ld MB (bounded by the snapshot pool, not the run length)\n",
                static_cast<unsigned long long>(steps / 4), shortRun.peakRssKiB / 1024, static_cast<unsigned long long>(steps * 2),
                longRun.peakRssKiB / 1024);
    unlink(tape.c_str());
    return 0;
}
