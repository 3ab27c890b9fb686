#include "zkdv/demo/synthetic_demo.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <vector>

#include <nlohmann/json.hpp>

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/sampling_schedule.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tape/state_digest.h"
#include "zkdv/tape/tape_writer.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/util/sampling_generator.h"
#include "zkdv/version.h"

namespace zkdv {

namespace {

// The data stream reuses the sampling generator: small, fast, the same on every machine.
class DemoRandom : public SamplingGenerator {
public:
    using SamplingGenerator::SamplingGenerator;
    float noise() { return static_cast<float>(uniform() * 2.0 - 1.0); }
};

constexpr const char* kProgramSource = R"(# Synthetic example program (not replayable): the training step the demo runs in C++.
def training_step(self, batch: List[Tensor]) -> Tensor:
    x, y = batch[0], batch[1]
    self.input_mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
    self.batches_seen.add_(1)
    return torch.nn.functional.cross_entropy(x @ self.weight.t() + self.bias, y)
)";

struct Model {
    int features, classes;
    std::vector<float> weight, bias;             // parameters
    std::vector<float> inputMean;                // buffer
    std::int64_t batchesSeen = 0;                // buffer
    std::vector<float> weightMomentum, biasMomentum;
    bool hasMomentum = false;
};

ByteSpan bytesOf(const std::vector<float>& values) { return ByteSpan(values.data(), values.size() * sizeof(float)); }

template <typename Sink>
void visitState(const Model& model, Sink&& sink)
{
    const std::vector<std::int64_t> weightShape{model.classes, model.features}, biasShape{model.classes};
    sink(parameterTensorName("weight"), DType::F32, weightShape, bytesOf(model.weight));
    sink(parameterTensorName("bias"), DType::F32, biasShape, bytesOf(model.bias));
    sink(bufferTensorName("input_mean"), DType::F32, std::vector<std::int64_t>{model.features}, bytesOf(model.inputMean));
    sink(bufferTensorName("batches_seen"), DType::I64, std::vector<std::int64_t>{}, ByteSpan(&model.batchesSeen, sizeof model.batchesSeen));
    if (model.hasMomentum) {
        sink(stateTensorName("weight", "momentum_buffer"), DType::F32, weightShape, bytesOf(model.weightMomentum));
        sink(stateTensorName("bias", "momentum_buffer"), DType::F32, biasShape, bytesOf(model.biasMomentum));
    }
}

void writeSnapshot(TapeWriter& writer, const Model& model, std::uint64_t beforeTransaction)
{
    SafetensorsBuilder blob;
    blob.setMetadata("zkdv.record", "snapshot");
    blob.setMetadata("before_transaction", std::to_string(beforeTransaction));
    visitState(model, [&](const std::string& name, DType dtype, const std::vector<std::int64_t>& shape, ByteSpan data) {
        blob.add(name, dtype, shape, data);
    });
    std::vector<std::uint8_t> header;
    writer.append(tape::RecordType::Snapshot, blob.pieces(header));
}

void fingerprint(const std::vector<float>& delta, double& l2, double& maxAbs)
{
    double sum = 0.0;
    maxAbs = 0.0;
    for (float d : delta) {
        sum += static_cast<double>(d) * d;
        maxAbs = std::max(maxAbs, std::fabs(static_cast<double>(d)));
    }
    l2 = std::sqrt(sum);
}

}  // namespace

SyntheticDemoResult writeSyntheticDemoTape(const std::string& path, const SyntheticDemoOptions& options)
{
    const int F = options.features, C = options.classes, B = options.batchSize;
    if (F < 1 || C < 2 || B < 1 || options.snapshotInterval < 1)
        throw Error("demo: features >= 1, classes >= 2, batch size >= 1 and snapshot interval >= 1 are required");

    DemoRandom data(options.seed ^ 0x5A4B4456ull);
    Model model{F, C, std::vector<float>(static_cast<std::size_t>(C * F)), std::vector<float>(static_cast<std::size_t>(C)),
                std::vector<float>(static_cast<std::size_t>(F)), 0, {}, {}, false};
    for (float& w : model.weight)
        w = 0.1f * data.noise();
    std::vector<float> centers(static_cast<std::size_t>(C * F));
    for (float& c : centers)
        c = 2.0f * data.noise();

    RootRecord root;
    root.producerName = "zkdv-audit demo (synthetic)";
    root.producerVersion = kVersion;
    root.torchVersion = "none";
    root.device = "cpu";
    root.parameters = {{"weight", {C, F}, DType::F32}, {"bias", {C}, DType::F32}};
    root.buffers = {{"input_mean", {F}, DType::F32}, {"batches_seen", {}, DType::I64}};
    root.optimizerContract = "SGD";
    nlohmann::json sgd = {{"lr", options.learningRate}, {"momentum", options.momentum}, {"dampening", 0.0}, {"weight_decay", 0.0},
                          {"nesterov", false}, {"maximize", false}, {"foreach", nullptr}, {"differentiable", false}};
    root.optimizerGroups = {{{"weight", "bias"}, sgd.dump()}};
    root.programKind = "synthetic";
    root.programSha256 = Sha256::of(ByteSpan(std::string_view(kProgramSource)));
    root.programEmbedded = true;
    root.snapshotInterval = options.snapshotInterval;
    root.stateCheckProbability = options.stateCheckProbability;
    root.updateCheckProbability = options.updateCheckProbability;
    root.samplingSeed = options.seed;
    root.metadataJson = nlohmann::json{{"example", "synthetic softmax classifier"}, {"classes", C}, {"features", F}}.dump();

    TapeWriter writer(path, options.overwrite ? TapeWriter::OpenMode::Overwrite : TapeWriter::OpenMode::CreateNew);
    std::string rootJson = root.toJson();
    SamplingSchedule sampling(root);
    Digest samplingAnchor = writer.append(tape::RecordType::Root, ByteSpan(std::string_view(rootJson)));
    writer.append(tape::RecordType::Program, ByteSpan(std::string_view(kProgramSource)));

    SyntheticDemoResult result;
    std::vector<float> x(static_cast<std::size_t>(B * F)), probabilities(static_cast<std::size_t>(C));
    std::vector<std::int64_t> y(static_cast<std::size_t>(B));
    std::vector<float> gradWeight(model.weight.size()), gradBias(model.bias.size());
    std::vector<float> deltaWeight(model.weight.size()), deltaBias(model.bias.size());
    const float lr = static_cast<float>(options.learningRate), momentum = static_cast<float>(options.momentum);

    for (std::uint64_t step = 0; step < options.steps; ++step) {
        if (step % static_cast<std::uint64_t>(options.snapshotInterval) == 0)
            writeSnapshot(writer, model, step);
        const auto started = std::chrono::steady_clock::now();
        const SampledChecks checks = sampling.next(samplingAnchor);
        const bool updateCheck = checks.update;
        const bool stateCheck = checks.state;

        for (int i = 0; i < B; ++i) {
            y[static_cast<std::size_t>(i)] = static_cast<std::int64_t>(data.next() % static_cast<std::uint64_t>(C));
            for (int f = 0; f < F; ++f)
                x[static_cast<std::size_t>(i * F + f)] = centers[static_cast<std::size_t>(y[static_cast<std::size_t>(i)] * F + f)] + data.noise();
        }

        // Forward and backward of mean cross-entropy over a linear layer.
        float loss = 0.0f;
        std::fill(gradWeight.begin(), gradWeight.end(), 0.0f);
        std::fill(gradBias.begin(), gradBias.end(), 0.0f);
        for (int i = 0; i < B; ++i) {
            const float* row = &x[static_cast<std::size_t>(i * F)];
            float peak = -INFINITY;
            for (int c = 0; c < C; ++c) {
                float logit = model.bias[static_cast<std::size_t>(c)];
                for (int f = 0; f < F; ++f)
                    logit += model.weight[static_cast<std::size_t>(c * F + f)] * row[f];
                probabilities[static_cast<std::size_t>(c)] = logit;
                peak = std::max(peak, logit);
            }
            float total = 0.0f;
            for (float& p : probabilities)
                total += (p = std::exp(p - peak));
            const std::int64_t label = y[static_cast<std::size_t>(i)];
            loss -= std::log(probabilities[static_cast<std::size_t>(label)] / total);
            for (int c = 0; c < C; ++c) {
                float g = (probabilities[static_cast<std::size_t>(c)] / total - (c == label ? 1.0f : 0.0f)) / static_cast<float>(B);
                gradBias[static_cast<std::size_t>(c)] += g;
                for (int f = 0; f < F; ++f)
                    gradWeight[static_cast<std::size_t>(c * F + f)] += g * row[f];
            }
        }
        loss /= static_cast<float>(B);
        for (int f = 0; f < F; ++f) {
            float mean = 0.0f;
            for (int i = 0; i < B; ++i)
                mean += x[static_cast<std::size_t>(i * F + f)];
            model.inputMean[static_cast<std::size_t>(f)] = 0.9f * model.inputMean[static_cast<std::size_t>(f)] + 0.1f * mean / static_cast<float>(B);
        }
        ++model.batchesSeen;

        // torch.optim.SGD with momentum: the first step copies the gradient into the buffer.
        auto sgd = [&](std::vector<float>& parameter, const std::vector<float>& grad, std::vector<float>& buffer, std::vector<float>& delta) {
            if (!model.hasMomentum)
                buffer = grad;
            else
                for (std::size_t i = 0; i < buffer.size(); ++i)
                    buffer[i] = momentum * buffer[i] + grad[i];
            for (std::size_t i = 0; i < parameter.size(); ++i) {
                float before = parameter[i];
                parameter[i] = before - lr * buffer[i];
                delta[i] = parameter[i] - before;
            }
        };
        sgd(model.weight, gradWeight, model.weightMomentum, deltaWeight);
        sgd(model.bias, gradBias, model.biasMomentum, deltaBias);
        model.hasMomentum = true;

        const auto wallTime = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - started).count();
        TransactionRecordBuilder record(step, static_cast<std::uint64_t>(wallTime));
        record.setLoss(DType::F32, ByteSpan(&loss, sizeof loss));
        record.addBatchTensor(DType::F32, {B, F}, bytesOf(x));
        record.addBatchTensor(DType::I64, {B}, ByteSpan(y.data(), y.size() * sizeof(std::int64_t)));
        record.setOptimizerValue("lr", {options.learningRate});
        std::vector<double> l2(2), maxAbs(2);
        fingerprint(deltaWeight, l2[0], maxAbs[0]);
        fingerprint(deltaBias, l2[1], maxAbs[1]);
        record.setUpdateFingerprints(l2, maxAbs);
        if (updateCheck) {
            record.addDelta("weight", DType::F32, {C, F}, bytesOf(deltaWeight));
            record.addDelta("bias", DType::F32, {C}, bytesOf(deltaBias));
        }
        if (stateCheck) {
            StateDigest digest;
            visitState(model, [&](const std::string& name, DType dtype, const std::vector<std::int64_t>& shape, ByteSpan bytes) {
                digest.add(name, dtype, shape, bytes);
            });
            record.setStateDigest(digest.finish());
        }
        SafetensorsBuilder blob = record.blob();
        std::vector<std::uint8_t> header;
        samplingAnchor = writer.append(tape::RecordType::Transaction, blob.pieces(header));

        if (step == 0)
            result.firstLoss = loss;
        result.lastLoss = loss;
        result.transactions = step + 1;
        if (options.progress && (step % 1024 == 0 || step + 1 == options.steps)) {
            options.progress->report(step + 1, options.steps, "training");
            if (options.progress->cancelRequested())
                throw OperationCancelled();
        }
    }
    // A sealed tape ends with the final state (spec 2.4); an unsealed one stops as a running
    // recorder would, after the snapshots of the interval.
    if (options.steps % static_cast<std::uint64_t>(options.snapshotInterval) == 0 || options.seal)
        writeSnapshot(writer, model, options.steps);
    if (options.seal)
        writer.seal();
    writer.flush();
    result.bytes = writer.bytesWritten();
    result.chainHead = writer.chainHead();
    return result;
}

}  // namespace zkdv
