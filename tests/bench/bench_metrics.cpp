// Benchmark: the replay metric pass (computeDivergence) against copying the same bytes.
//
//   bench_metrics [--elements N] [--runs R]
//
// Two float32 tensors of N elements each (default 64M: 2 x 256 MiB). Each run times, in
// turn: memcpy of both tensors into two other buffers; computeDivergence on the recorded
// tensor against a non-identical replay (six elements in seven off by 1-3 ULPs, one in 4,096
// off by a relative 1e-3, so every block differs); computeDivergence against a
// bitwise-identical copy (the memcmp fast path). Prints the median of R runs of each.
// ZKDV_CPU_CAPABILITY=default measures the baseline (SSE2) kernels instead of AVX2.
//
// Throughput is bytes of input per second: for the metric pass the bytes of both tensors
// read (8 per element pair); for memcpy the bytes copied (8 per element pair, each byte
// read once and written once but counted once). The ratio metric / memcpy is therefore
// t_memcpy / t_metric: 1.0 means the metric pass is as fast as copying the two tensors.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "zkdv/audit/divergence.h"
#include "zkdv/util/sampling_generator.h"

namespace {

double seconds(const std::function<void()>& work)
{
    auto start = std::chrono::steady_clock::now();
    work();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv)
{
    std::uint64_t elements = 64ull << 20;
    int runs = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string flag = argv[i];
        if (flag == "--elements")
            elements = std::stoull(argv[i + 1]);
        else if (flag == "--runs")
            runs = std::max(1, std::stoi(argv[i + 1]));
    }
    const std::size_t bytes = elements * sizeof(float);

    // Recorded values: a sum of three uniforms, in (-3, 3); the replay moves each by -3..+3
    // ULPs and one in 4,096 by a relative 1e-3, like a replay on a different kernel.
    std::vector<float> recorded(elements), replayed(elements), identical(elements);
    std::vector<float> copyA(elements), copyB(elements);
    zkdv::SamplingGenerator generator(7);
    for (std::uint64_t i = 0; i < elements; ++i) {
        const double u = generator.uniform() + generator.uniform() + generator.uniform() - 1.5;
        recorded[i] = static_cast<float>(u * 2.0);
        std::uint32_t bits;
        std::memcpy(&bits, &recorded[i], sizeof bits);
        const std::uint64_t r = generator.next();
        bits += static_cast<std::uint32_t>(r % 7) - 3u;
        float value;
        std::memcpy(&value, &bits, sizeof value);
        if ((r >> 32) % 4096 == 0)
            value *= 1.001f;
        replayed[i] = value;
    }
    identical = recorded;
    std::memset(copyA.data(), 0, bytes);  // fault the destination pages in before timing
    std::memset(copyB.data(), 0, bytes);

    const zkdv::ByteSpan rec(recorded.data(), bytes), rep(replayed.data(), bytes), same(identical.data(), bytes);
    std::vector<double> copyTimes, metricTimes, equalTimes;
    zkdv::DivergenceMetrics differing, equal;
    for (int run = 0; run < runs; ++run) {
        copyTimes.push_back(seconds([&] {
            std::memcpy(copyA.data(), recorded.data(), bytes);
            std::memcpy(copyB.data(), replayed.data(), bytes);
        }));
        metricTimes.push_back(seconds([&] { differing = zkdv::computeDivergence(zkdv::DType::F32, elements, rec, rep); }));
        equalTimes.push_back(seconds([&] { equal = zkdv::computeDivergence(zkdv::DType::F32, elements, rec, same); }));
    }

    const double input = 2.0 * static_cast<double>(bytes);
    const double copy = median(copyTimes), metric = median(metricTimes), identicalTime = median(equalTimes);
    std::printf("2 x %llu float32 (%.0f MiB each), median of %d runs\n", static_cast<unsigned long long>(elements),
                static_cast<double>(bytes) / (1 << 20), runs);
    std::printf("%-36s %10s %8s %10s\n", "", "ms", "GB/s", "vs memcpy");
    std::printf("%-36s %10.1f %8.2f %10.2f\n", "memcpy of both tensors", copy * 1e3, input / copy / 1e9, 1.0);
    std::printf("%-36s %10.1f %8.2f %10.2f\n", "computeDivergence, non-identical", metric * 1e3, input / metric / 1e9,
                copy / metric);
    std::printf("%-36s %10.1f %8.2f %10.2f\n", "computeDivergence, identical", identicalTime * 1e3,
                input / identicalTime / 1e9, copy / identicalTime);
    std::printf("non-identical: maxUlp %.0f meanUlp %.3f relativeL2 %.3g cosine %.9f; identical: bitwiseEqual %d\n",
                differing.maxUlp, differing.meanUlp, differing.relativeL2, differing.cosine, equal.bitwiseEqual ? 1 : 0);
    const bool met = copy / metric >= 0.5;
    std::printf("target: metric pass >= 0.50 x memcpy bandwidth: %s\n", met ? "met" : "NOT met");
    return 0;
}
