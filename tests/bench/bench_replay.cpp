// Benchmark: what a replay costs, side by side in one run.
//
//   bench_replay [--steps N] [--rounds R] [--dir DIR] [--sample K]
//
//  1. Replay of every transaction of a CNN-demo tape on the CPU (one worker) against the
//     step time the tape recorded and against the same training loop without a recorder.
//  2. Replay of K random transactions in C++ against tests/bench/python_replay.py, a PyTorch
//     eager loop over the same tape and the same transactions (snapshot, then torch.optim).
// Rounds alternate the contenders so drift hits both; medians are reported.

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkdv/cnn_demo/cnn_demo.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/tensor/torch_build.h"

namespace {

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values.empty() ? 0 : values[values.size() / 2];
}

std::string capture(const std::string& command)
{
    std::string output;
    if (FILE* pipe = popen(command.c_str(), "r")) {
        char buffer[4096];
        std::size_t n;
        while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
            output.append(buffer, n);
        pclose(pipe);
    }
    return output;
}

zkdv::ReplaySummary replay(zkdv::CaseStore& store, const std::string& spec, std::uint64_t seed, unsigned threads)
{
    zkdv::ReplayRequest request;
    request.selection = zkdv::SelectionSpec::parse(spec);
    request.seed = seed;
    request.threads = threads;
    return zkdv::runReplay(store, request);
}

}  // namespace

int main(int argc, char** argv)
{
    std::uint64_t steps = 600;
    int rounds = 3;
    std::string dir = "/tmp";
    std::uint64_t sample = 100;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--steps")
            steps = std::stoull(argv[i + 1]);
        else if (flag == "--rounds")
            rounds = std::stoi(argv[i + 1]);
        else if (flag == "--dir")
            dir = argv[i + 1];
        else if (flag == "--sample")
            sample = std::stoull(argv[i + 1]);
    }
    const std::string tape = dir + "/bench-replay.zkdv", casePath = dir + "/bench-replay.zkaudit", plainTape = dir + "/bench-replay-plain.zkdv";
    unlink(tape.c_str());
    unlink(casePath.c_str());

    zkdv::CnnDemoOptions options;
    options.steps = steps;
    options.overwrite = true;
    std::vector<double> plainStep;
    for (int round = 0; round < rounds; ++round) {
        zkdv::CnnDemoOptions plain = options;
        plain.record = false;
        plainStep.push_back(zkdv::runCnnDemo(plainTape, plain).seconds / static_cast<double>(steps));
    }
    zkdv::runCnnDemo(tape, options);
    zkdv::CaseStore store(casePath, zkdv::CaseStore::Access::ReadWrite);
    store.ingestTape(tape);
    const double recordedStep = store.database().queryInt64("SELECT avg(wall_time_ns) FROM transactions").value_or(0) * 1e-9;

    std::vector<double> replayAll, cppSample, pythonSample, pythonProcess;
    std::uint64_t exact = 0, replayed = 0, pythonMismatches = 0;
    for (int round = 0; round < rounds; ++round) {
        const zkdv::ReplaySummary all = replay(store, "all", 0, 1);
        replayAll.push_back(all.seconds / static_cast<double>(all.replayed));
        exact = all.exact;
        replayed = all.replayed;

        const zkdv::ReplaySummary chosen = replay(store, "random:" + std::to_string(sample), static_cast<std::uint64_t>(round + 1), 1);
        cppSample.push_back(chosen.seconds);
        std::string ids;
        for (std::uint64_t index : chosen.selected)
            ids += (ids.empty() ? "" : ",") + std::to_string(index);
        const auto started = std::chrono::steady_clock::now();
        const std::string output = capture(ZKDV_TEST_PYTHON " " ZKDV_TESTS_SOURCE_DIR "/bench/python_replay.py " + tape + " --threads " +
                                           std::to_string(zkdv::defaultIntraOpThreads()) + " --ids " + ids);
        pythonProcess.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
        const nlohmann::json python = nlohmann::json::parse(output, nullptr, false);
        if (python.is_discarded() || !python.contains("seconds")) {
            std::fprintf(stderr, "python_replay.py failed: %s\n", output.c_str());
            return 1;
        }
        pythonSample.push_back(python["seconds"].get<double>());
        pythonMismatches = python["mismatches"].get<std::uint64_t>();
    }

    std::printf("CNN demo tape, %llu transactions, CPU, libtorch %s, %d intra-op thread(s), %d rounds (median)\n",
                static_cast<unsigned long long>(steps), zkdv::libtorchVersion().c_str(), zkdv::defaultIntraOpThreads(), rounds);
    std::printf("  training step without recorder   %7.3f ms\n", median(plainStep) * 1e3);
    std::printf("  training step as recorded (tape)  %7.3f ms\n", recordedStep * 1e3);
    std::printf("  replay per transaction (all, 1 worker) %7.3f ms  (%llu of %llu exact)\n", median(replayAll) * 1e3,
                static_cast<unsigned long long>(exact), static_cast<unsigned long long>(replayed));
    std::printf("  replay / recorded step: %.3f   replay / unrecorded step: %.3f\n", median(replayAll) / recordedStep,
                median(replayAll) / median(plainStep));
    std::printf("random:%llu, 1 worker: C++ replay %.3f s, PyTorch eager loop %.3f s (process %.3f s incl. interpreter start, %llu mismatches)\n",
                static_cast<unsigned long long>(sample), median(cppSample), median(pythonSample), median(pythonProcess),
                static_cast<unsigned long long>(pythonMismatches));
    std::printf("  C++ / Python: %.3f (loop), %.3f (whole process)\n", median(cppSample) / median(pythonSample),
                median(cppSample) / median(pythonProcess));
    unlink(tape.c_str());
    unlink(plainTape.c_str());
    unlink(casePath.c_str());
    return 0;
}
