// Benchmark: a contract's step against libtorch's own optimizer on the same tensors.
//
//   bench_optimizers [--parameters N] [--tensors T] [--steps S]
//
// Adam, AdamW and SGD with momentum over N float32 parameters (default 100M) in T tensors
// (default 50). Each round times one step of each side, alternating, so drift hits both;
// the median step time and the ratio contract / libtorch are printed.

#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "zkdv/optim/contract_optimizer.h"

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

struct Side {
    std::vector<torch::Tensor> parameters;
    std::vector<double> times;
};

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

void run(const char* name, std::int64_t total, int tensors, int steps, const std::function<std::unique_ptr<torch::optim::Optimizer>(std::vector<torch::Tensor>)>& makeTorch,
         const std::function<std::unique_ptr<zkdv::optim::ContractOptimizer>(std::vector<torch::Tensor>)>& makeContract)
{
    Side ours, theirs;
    ours.parameters = makeParameters(total, tensors);
    theirs.parameters = makeParameters(total, tensors);
    auto contract = makeContract(ours.parameters);
    auto reference = makeTorch(theirs.parameters);
    torch::NoGradGuard noGrad;
    // The first step creates state on both sides; it is not counted.
    contract->step();
    reference->step();
    for (int step = 0; step < steps; ++step) {
        ours.times.push_back(seconds([&] { contract->step(); }));
        theirs.times.push_back(seconds([&] { reference->step(); }));
    }
    const double a = median(ours.times), b = median(theirs.times);
    std::printf("%-16s contract %8.1f ms   libtorch %8.1f ms   ratio %.3f\n", name, a * 1e3, b * 1e3, a / b);
}

}  // namespace

int main(int argc, char** argv)
{
    std::int64_t total = 100'000'000;
    int tensors = 50, steps = 7;
    for (int i = 1; i + 1 < argc; i += 2) {
        std::string flag = argv[i];
        if (flag == "--parameters")
            total = std::stoll(argv[i + 1]);
        else if (flag == "--tensors")
            tensors = std::stoi(argv[i + 1]);
        else if (flag == "--steps")
            steps = std::stoi(argv[i + 1]);
    }
    std::printf("%lld float32 parameters in %d tensors, %d timed steps, %d threads; median step time\n",
                static_cast<long long>(total), tensors, steps, torch::get_num_threads());
    using zkdv::optim::ContractOptimizer;
    run("Adam", total, tensors, steps,
        [](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::Adam>(p, torch::optim::AdamOptions(1e-3)); },
        [](std::vector<torch::Tensor> p) { return std::make_unique<ContractOptimizer>("Adam", p, nlohmann::json{{"lr", 1e-3}}); });
    run("AdamW", total, tensors, steps,
        [](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::AdamW>(p, torch::optim::AdamWOptions(1e-3)); },
        [](std::vector<torch::Tensor> p) { return std::make_unique<ContractOptimizer>("AdamW", p, nlohmann::json{{"lr", 1e-3}}); });
    run("SGD momentum", total, tensors, steps,
        [](std::vector<torch::Tensor> p) { return std::make_unique<torch::optim::SGD>(p, torch::optim::SGDOptions(0.01).momentum(0.9)); },
        [](std::vector<torch::Tensor> p) { return std::make_unique<ContractOptimizer>("SGD", p, nlohmann::json{{"lr", 0.01}, {"momentum", 0.9}}); });
    return 0;
}
