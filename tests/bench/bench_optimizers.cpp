// Benchmark: a contract's step against the same torch's own optimizers on the same shapes.
//
//   bench_optimizers [--parameters N] [--tensors T] [--steps S] [--python PATH] [--verbose]
//
// Adam, AdamW and SGD with momentum over N float32 parameters (default 100M) in T tensors
// (default 50), against libtorch's C++ optimizer (torch::optim) and, with --python, against
// torch.optim in Python with foreach left at its default and with foreach=True, stepped by
// one persistent torch_optim_stepper.py (beside this file) on that interpreter. Each round
// times one step of every side in turn, so drift hits all; the median step time of each side
// and the ratio contract / side are printed; --verbose adds every round's wall and CPU
// times and the page faults, to judge the noise.
//
// Every case runs twice, first with the contract's tensors allocated (and its state made)
// before libtorch's, then after: which copy comes first decides where the allocator puts it,
// and that alone moved a bandwidth-bound step (SGD) by 3-6 % either way. The "both" row is
// the geometric mean of the two orders' ratios.

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/tensor/torch_build.h"

extern char** environ;

namespace {

// A step's wall time, with what tells noise from work on a loaded machine: the CPU time of
// its process meanwhile (all threads, so OpenMP's spin-waits count too) and the page faults
// it took (temporaries landing in fresh pages, which depends on the allocator's history in
// that process, not on the optimizer).
struct Timing {
    double wall, cpu;
    long faults;
};

std::pair<double, long> cpuAndFaults()
{
    rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6; };
    return {seconds(usage.ru_utime) + seconds(usage.ru_stime), usage.ru_minflt + usage.ru_majflt};
}

Timing timed(const std::function<void()>& work)
{
    const auto start = std::chrono::steady_clock::now();
    const auto [cpuStart, faultsStart] = cpuAndFaults();
    work();
    const auto [cpu, faults] = cpuAndFaults();
    return {std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), cpu - cpuStart, faults - faultsStart};
}

Timing parseTiming(const std::string& reply)
{
    Timing timing{};
    if (std::sscanf(reply.c_str(), "%lf %lf %ld", &timing.wall, &timing.cpu, &timing.faults) != 3)
        throw std::runtime_error("unexpected reply from the Python stepper: " + reply);
    return timing;
}

double median(std::vector<double> values)
{
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

std::vector<torch::Tensor> makeParameters(std::int64_t total, int tensors)
{
    std::vector<torch::Tensor> parameters;
    const std::int64_t each = total / tensors;
    for (int i = 0; i < tensors; ++i) {
        auto p = torch::randn({each}).set_requires_grad(true);
        p.mutable_grad() = torch::randn({each});
        parameters.push_back(p);
    }
    return parameters;
}

// torch_optim_stepper.py as one child process for the whole run: a request line on its
// stdin, a reply line on its stdout; its stderr is ours, so its errors show.
class PythonStepper {
public:
    PythonStepper(const std::string& python, std::int64_t total, int tensors, int threads)
    {
        // A stepper that died must surface as an error from request(), not kill us on write.
        signal(SIGPIPE, SIG_IGN);
        int in[2], out[2];
        if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0)
            throw std::runtime_error("pipe2 failed");
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_adddup2(&actions, in[0], 0);
        posix_spawn_file_actions_adddup2(&actions, out[1], 1);
        const std::string totalText = std::to_string(total), tensorsText = std::to_string(tensors), threadsText = std::to_string(threads);
        std::vector<const char*> argv = {python.c_str(), ZKDV_BENCH_STEPPER, "--parameters", totalText.c_str(), "--tensors", tensorsText.c_str(),
                                         "--threads", threadsText.c_str(), nullptr};
        const int failed = posix_spawnp(&pid_, python.c_str(), &actions, nullptr, const_cast<char* const*>(argv.data()), environ);
        posix_spawn_file_actions_destroy(&actions);
        close(in[0]);
        close(out[1]);
        if (failed != 0)
            throw std::runtime_error("cannot start " + python);
        to_ = fdopen(in[1], "w");
        from_ = fdopen(out[0], "r");
        ready_ = reply();
    }

    ~PythonStepper()
    {
        fclose(to_);  // end of input: the stepper exits
        fclose(from_);
        waitpid(pid_, nullptr, 0);
    }

    const std::string& ready() const { return ready_; }

    std::string request(const std::string& line)
    {
        if (std::fputs((line + "\n").c_str(), to_) < 0 || std::fflush(to_) != 0)
            throw std::runtime_error("the Python stepper is gone (its error is above)");
        return reply();
    }

private:
    std::string reply()
    {
        char buffer[512];
        if (!std::fgets(buffer, sizeof buffer, from_))
            throw std::runtime_error("the Python stepper exited without replying (its error is above)");
        std::string text = buffer;
        if (!text.empty() && text.back() == '\n')
            text.pop_back();
        return text;
    }

    pid_t pid_ = -1;
    FILE* to_ = nullptr;
    FILE* from_ = nullptr;
    std::string ready_;
};

struct Case {
    const char* label;
    const char* name;          // the contract's and torch.optim's name
    nlohmann::json options;    // the contract's and torch.optim's options
    std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)> makeLibtorch;  // the same options
};

// The ratios contract / side (libtorch, then the Python sides), medians of `steps` rounds.
std::vector<double> run(const Case& c, std::int64_t total, int tensors, int steps, bool verbose, PythonStepper* python, bool libtorchFirst)
{
    // Four copies of the tensors with their state live at once (6.4 GB for Adam over 100M
    // parameters, two in each process); every case frees its own before the next.
    if (python)
        python->request(std::string("setup ") + c.name + " " + c.options.dump());
    std::vector<torch::Tensor> ours, theirs;
    if (libtorchFirst) {
        theirs = makeParameters(total, tensors);
        ours = makeParameters(total, tensors);
    } else {
        ours = makeParameters(total, tensors);
        theirs = makeParameters(total, tensors);
    }
    zkdv::optim::ContractOptimizer contract(c.name, ours, c.options);
    auto libtorch = c.makeLibtorch(theirs);
    torch::NoGradGuard noGrad;
    // The first step creates the state (Python's did at setup); it is not counted.
    if (libtorchFirst)
        libtorch->step();
    contract.step();
    if (!libtorchFirst)
        libtorch->step();

    std::vector<std::function<Timing()>> sides = {
        [&] { return timed([&] { contract.step(); }); },
        [&] { return timed([&] { libtorch->step(); }); },
    };
    if (python) {
        sides.push_back([&] { return parseTiming(python->request("step default")); });
        sides.push_back([&] { return parseTiming(python->request("step foreach")); });
    }
    // Each round starts at the next side, so none always runs right after another (for
    // instance while the other process's OpenMP workers still spin).
    std::vector<std::vector<double>> wall(sides.size()), cpu(sides.size()), faults(sides.size());
    for (int round = 0; round < steps; ++round)
        for (std::size_t k = 0; k < sides.size(); ++k) {
            const std::size_t side = (round + k) % sides.size();
            const Timing timing = sides[side]();
            wall[side].push_back(timing.wall);
            cpu[side].push_back(timing.cpu);
            faults[side].push_back(static_cast<double>(timing.faults));
        }
    if (python)
        python->request("free");

    std::vector<double> medians;
    for (const auto& times : wall)
        medians.push_back(median(times));
    const std::string label = std::string(c.label) + (libtorchFirst ? " [lib 1st]" : " [ours 1st]");
    std::printf("%-24s %10.1f %10.1f %10.3f", label.c_str(), medians[0] * 1e3, medians[1] * 1e3, medians[0] / medians[1]);
    if (python)
        std::printf(" %10.1f %10.3f %10.1f %10.3f", medians[2] * 1e3, medians[0] / medians[2], medians[3] * 1e3, medians[0] / medians[3]);
    std::printf("\n");
    if (verbose) {
        static const char* const sideNames[] = {"contract", "libtorch", "py default", "py foreach"};
        for (std::size_t side = 0; side < sides.size(); ++side) {
            std::printf("  %-10s wall ms:", sideNames[side]);
            for (double time : wall[side])
                std::printf(" %.1f", time * 1e3);
            std::printf("\n  %-10s  cpu ms:", "");
            for (double time : cpu[side])
                std::printf(" %.1f", time * 1e3);
            std::printf("   median %.1f, page faults per step: median %.0f\n", median(cpu[side]) * 1e3, median(faults[side]));
        }
    }
    std::fflush(stdout);
    std::vector<double> ratios;
    for (std::size_t side = 1; side < medians.size(); ++side)
        ratios.push_back(medians[0] / medians[side]);
    return ratios;
}

}  // namespace

int main(int argc, char** argv)
{
    std::int64_t total = 100'000'000;
    int tensors = 50, steps = 7;
    std::string python;
    bool verbose = false;
    for (int i = 1; i < argc; ++i) {
        const std::string flag = argv[i];
        if (flag == "--verbose") {
            verbose = true;
            continue;
        }
        const char* value = i + 1 < argc ? argv[++i] : nullptr;
        if (value && flag == "--parameters")
            total = std::stoll(value);
        else if (value && flag == "--tensors")
            tensors = std::stoi(value);
        else if (value && flag == "--steps")
            steps = std::stoi(value);
        else if (value && flag == "--python")
            python = value;
        else {
            std::fprintf(stderr, "usage: bench_optimizers [--parameters N] [--tensors T] [--steps S] [--python PATH] [--verbose]\n");
            return 2;
        }
    }
    try {
        // The same intra-op thread count on every side.
        const int threads = torch::get_num_threads();
        std::printf("%lld float32 parameters in %d tensors, %d timed steps, libtorch %s, %d intra-op threads; median step time (ms)\n",
                    static_cast<long long>(total), tensors, steps, zkdv::libtorchVersion().c_str(), threads);
        std::optional<PythonStepper> stepper;
        if (!python.empty()) {
            stepper.emplace(python, total, tensors, threads);
            std::printf("Python %s: %s\n", python.c_str(), stepper->ready().c_str());
        }
        std::printf("%-24s %10s %10s %10s", "optimizer", "contract", "libtorch", "ratio");
        if (stepper)
            std::printf(" %10s %10s %10s %10s", "py default", "ratio", "py foreach", "ratio");
        std::printf("\n");

        const std::vector<Case> cases = {
            {"Adam", "Adam", {{"lr", 1e-3}},
             [](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(1e-3)); }},
            {"AdamW", "AdamW", {{"lr", 1e-3}, {"weight_decay", 1e-2}},
             [](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::AdamW>(p, torch::optim::AdamWOptions(1e-3).weight_decay(1e-2)); }},
            {"SGD momentum", "SGD", {{"lr", 0.01}, {"momentum", 0.9}},
             [](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.01).momentum(0.9)); }},
        };
        for (const Case& c : cases) {
            const std::vector<double> first = run(c, total, tensors, steps, verbose, stepper ? &*stepper : nullptr, false);
            const std::vector<double> second = run(c, total, tensors, steps, verbose, stepper ? &*stepper : nullptr, true);
            std::printf("%-24s %10s %10s %10.3f", (std::string(c.label) + " [both]").c_str(), "", "", std::sqrt(first[0] * second[0]));
            for (std::size_t side = 1; side < first.size(); ++side)
                std::printf(" %10s %10.3f", "", std::sqrt(first[side] * second[side]));
            std::printf("\n");
        }
    } catch (const std::exception& error) {
        std::fprintf(stderr, "bench_optimizers: %s\n", error.what());
        return 1;
    }
    return 0;
}
