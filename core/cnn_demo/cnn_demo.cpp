#include "zkdv/cnn_demo/cnn_demo.h"

#include <chrono>
#include <deque>
#include <numeric>

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/jit/api/module.h>

#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/optim/contract_registry.h"
#include "zkdv/recorder/recorder.h"
#include "zkdv/program/sealed_program.h"

namespace zkdv {

namespace {

constexpr int kImageSize = 12;
constexpr int kClasses = 4;

// The training step, in TorchScript. BatchNorm runs in training mode, so its running
// statistics (buffers) change at every step and the tape must carry them.
constexpr const char* kTrainingStep = R"(
def training_step(self, batch: List[Tensor]) -> Tensor:
    images = batch[0]
    labels = batch[1]
    h = torch.conv2d(images, self.conv1.weight, self.conv1.bias, [1, 1], [1, 1])
    h = torch.batch_norm(h, self.bn1.weight, self.bn1.bias, self.bn1.running_mean, self.bn1.running_var, True, 0.1, 1e-05, False)
    self.bn1.num_batches_tracked.add_(1)
    h = torch.max_pool2d(torch.relu(h), [2, 2])
    h = torch.relu(torch.conv2d(h, self.conv2.weight, self.conv2.bias, [1, 1], [1, 1]))
    features = h.mean([2, 3])
    logits = torch.linear(features, self.fc.weight, self.fc.bias)
    return torch.nll_loss(torch.log_softmax(logits, 1), labels)
)";

torch::jit::Module layer(const char* type, std::initializer_list<std::pair<const char*, at::Tensor>> parameters,
                         std::initializer_list<std::pair<const char*, at::Tensor>> buffers = {})
{
    torch::jit::Module module(type);
    for (const auto& [name, value] : parameters)
        module.register_parameter(name, value.requires_grad_(true), false);
    for (const auto& [name, value] : buffers)
        module.register_buffer(name, value);
    return module;
}

torch::jit::Module buildModel(at::Generator& generator, const c10::Device& device)
{
    auto init = [&](std::vector<std::int64_t> shape, double scale) { return at::randn(shape, generator).mul_(scale); };
    torch::jit::Module model("ZkdvDemoCnn");
    model.register_module("conv1", layer("Conv1", {{"weight", init({8, 1, 3, 3}, 0.3)}, {"bias", at::zeros({8})}}));
    model.register_module("bn1", layer("BatchNorm1", {{"weight", at::ones({8})}, {"bias", at::zeros({8})}},
                                       {{"running_mean", at::zeros({8})}, {"running_var", at::ones({8})},
                                        {"num_batches_tracked", at::zeros({}, at::kLong)}}));
    model.register_module("conv2", layer("Conv2", {{"weight", init({16, 8, 3, 3}, 0.1)}, {"bias", at::zeros({16})}}));
    model.register_module("fc", layer("Classifier", {{"weight", init({kClasses, 16}, 0.25)}, {"bias", at::zeros({kClasses})}}));
    model.define(kTrainingStep);
    model.to(device);
    return model;
}

// Images whose class is a bright horizontal or vertical bar in one half, under noise.
std::pair<at::Tensor, at::Tensor> makeBatch(at::Generator& generator, int batchSize, const c10::Device& device)
{
    at::Tensor labels = at::randint(kClasses, {batchSize}, generator, at::kLong);
    at::Tensor images = at::randn({batchSize, 1, kImageSize, kImageSize}, generator).mul_(0.5);
    auto label = labels.accessor<std::int64_t, 1>();
    for (int i = 0; i < batchSize; ++i) {
        const std::int64_t c = label[i];
        const int offset = (c % 2 == 0) ? 3 : 8;
        if (c < 2)
            images[i][0].narrow(0, offset, 2).add_(1.5);
        else
            images[i][0].narrow(1, offset, 2).add_(1.5);
    }
    return {images.to(device), labels.to(device)};
}

optim::GroupOptions optionsFor(const optim::OptimizerContract& contract)
{
    optim::GroupOptions options = optim::GroupOptions::object();
    const std::string name = contract.name();
    if (name == "SGD")
        options = {{"lr", 0.05}, {"momentum", 0.9}};
    else if (name == "Adam" || name == "AdamW" || name == "NAdam" || name == "RAdam" || name == "Adamax")
        options = {{"lr", 3e-3}};
    else if (contract.defaults().value("lr", nlohmann::json()).is_null())
        options = {{"lr", 0.01}};
    return options;
}

}  // namespace

CnnDemoResult runCnnDemo(const std::string& path, const CnnDemoOptions& options)
{
    const c10::Device device(options.device);
    if (device.is_cuda() && !at::hasCUDA())
        throw Error("device " + options.device + " is not available: this libtorch has no CUDA or no GPU is present");
    at::Generator generator = at::detail::createCPUGenerator(options.seed);
    torch::jit::Module model = buildModel(generator, device);
    model.train();

    optim::ContractRegistry registry;
    auto contract = registry.resolve(options.optimizer);
    std::vector<at::Tensor> parameters;
    for (const auto& p : model.named_parameters(true))
        parameters.push_back(p.value);
    optim::ContractOptimizer optimizer(contract, {optim::ParameterGroup{parameters, optionsFor(*contract)}});

    std::unique_ptr<Recorder> recorder;
    PreparedOptimizer* prepared = nullptr;
    if (options.record) {
        RecorderOptions config;
        config.stateCheckProbability = options.stateCheckProbability;
        config.updateCheckProbability = options.updateCheckProbability;
        config.samplingSeed = options.seed;
        config.overwrite = options.overwrite;
        config.signingKeyFile = options.signingKeyFile;
        config.producerName = "zkdv-audit demo";
        config.metadataJson = nlohmann::json{{"example", "CNN with BatchNorm on synthetic bar images"}, {"classes", kClasses},
                                             {"image_size", kImageSize}, {"batch_size", options.batchSize}, {"seed", options.seed}}
                                  .dump();
        config.maxInFlight = options.maxInFlight;
        config.replaySnapshotInterval = options.snapshotInterval;
        recorder = std::make_unique<Recorder>(path, config);
        recorder->prepare(model);
        prepared = &recorder->prepare(optimizer);
    }

    CnnDemoResult result;
    std::deque<double> recent;
    std::vector<double> first;
    const auto started = std::chrono::steady_clock::now();
    for (std::uint64_t step = 0; step < options.steps; ++step) {
        auto [images, labels] = makeBatch(generator, options.batchSize, device);
        double loss = 0;
        if (recorder) {
            Transaction transaction = recorder->transaction({images, labels});
            at::Tensor value = recorder->forward(model);
            recorder->backward(value);
            prepared->step();
            prepared->zeroGrad();
            loss = value.item<double>();
        } else {
            c10::List<at::Tensor> batch({images, labels});
            at::Tensor value = runTrainingStep(model, batch);
            torch::autograd::backward({value});
            optimizer.step();
            optimizer.zeroGrad();
            loss = value.item<double>();
        }
        if (first.size() < 50)
            first.push_back(loss);
        recent.push_back(loss);
        if (recent.size() > 50)
            recent.pop_front();
        result.transactions = step + 1;
        if (options.progress && (step % 50 == 0 || step + 1 == options.steps)) {
            options.progress->report(step + 1, options.steps, "training");
            if (options.progress->cancelRequested())
                throw OperationCancelled();
        }
    }
    if (recorder) {
        recorder->seal();
        result.snapshotPoolHighWater = recorder->statistics().snapshotPoolHighWater;
        result.chainHead = recorder->chainHead();
    }
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    result.firstLoss = first.empty() ? 0 : std::accumulate(first.begin(), first.end(), 0.0) / static_cast<double>(first.size());
    result.lastLoss = recent.empty() ? 0 : std::accumulate(recent.begin(), recent.end(), 0.0) / static_cast<double>(recent.size());
    return result;
}

}  // namespace zkdv
