#include "zkdv/replay/element_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "replay_worker_pool.h"
#include "sealed_program_check.h"
#include "worker_log.h"
#include "worker_process.h"
#include "zkdv/audit/replay_plan.h"
#include "zkdv/graph/exported_graph.h"
#include "zkdv/replay/replay_device_check.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/replay/worker_protocol.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/store/transaction_detail.h"
#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/scalar_value.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

namespace {

std::vector<double> widened(DType dtype, const std::vector<std::uint8_t>& bytes)
{
    const std::size_t size = dtypeSize(dtype);
    std::vector<double> values(bytes.size() / size);
    for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = scalarToDouble(dtype, bytes.data() + i * size);
    return values;
}

}  // namespace

std::vector<WorstElement> worstElements(DType dtype, const std::vector<std::int64_t>& shape, const std::vector<std::uint8_t>& recorded,
                                        const std::vector<std::uint8_t>& replayed, std::size_t count)
{
    const std::size_t size = dtypeSize(dtype);
    if (recorded.size() != replayed.size() || recorded.size() % size != 0)
        throw Error("worstElements: the two tensors hold " + std::to_string(recorded.size()) + " and " + std::to_string(replayed.size()) +
                    " bytes of " + std::string(dtypeName(dtype)));
    const std::size_t elements = recorded.size() / size;
    std::vector<std::pair<double, std::size_t>> differing;  // (|difference|, element)
    for (std::size_t i = 0; i < elements; ++i) {
        if (std::memcmp(recorded.data() + i * size, replayed.data() + i * size, size) == 0)
            continue;
        const double a = scalarToDouble(dtype, recorded.data() + i * size);
        const double b = scalarToDouble(dtype, replayed.data() + i * size);
        double difference = std::abs(b - a);
        if (std::isnan(a) != std::isnan(b))
            difference = std::numeric_limits<double>::infinity();
        else if (std::isnan(difference))
            difference = std::isnan(a) ? 0.0 : std::numeric_limits<double>::infinity();  // NaN payloads; opposite infinities
        differing.emplace_back(difference, i);
    }
    const std::size_t kept = std::min(count, differing.size());
    std::partial_sort(differing.begin(), differing.begin() + static_cast<std::ptrdiff_t>(kept), differing.end(),
                      [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; });
    std::vector<WorstElement> worst;
    for (std::size_t k = 0; k < kept; ++k) {
        const std::size_t i = differing[k].second;
        WorstElement element;
        element.flatIndex = i;
        std::uint64_t rest = i;
        element.position.assign(shape.size(), 0);
        for (std::size_t d = shape.size(); d-- > 0;) {
            const std::uint64_t extent = static_cast<std::uint64_t>(std::max<std::int64_t>(1, shape[d]));
            element.position[d] = static_cast<std::int64_t>(rest % extent);
            rest /= extent;
        }
        element.recorded = scalarToDouble(dtype, recorded.data() + i * size);
        element.replayed = scalarToDouble(dtype, replayed.data() + i * size);
        element.absDifference = differing[k].first;
        // The one ULP definition (computeDivergence), on this pair alone.
        element.ulp = computeDivergence(dtype, 1, ByteSpan(recorded.data() + i * size, size), ByteSpan(replayed.data() + i * size, size)).maxUlp;
        worst.push_back(std::move(element));
    }
    return worst;
}

ElementComparison compareTransactionElements(CaseStore& store, const ElementComparisonRequest& request)
{
    ReplayStore replayStore(store.database());
    const std::optional<CaseTape> tape = store.tape(request.tapeId);
    if (!tape)
        throw ReplayError("case " + store.path() + " holds no tape with id " + std::to_string(request.tapeId));
    const std::optional<RecordRef> transaction = replayStore.transactionRecord(tape->id, request.index);
    if (!transaction)
        throw ReplayError("tape " + std::to_string(tape->id) + " has no transaction " + std::to_string(request.index));
    if (!transactionHasDeltas(store.database(), tape->id, request.index))
        throw ReplayError("transaction " + std::to_string(request.index) +
                          " carries no recorded deltas (only its fingerprints were recorded): there are no elements to compare");
    RootRecord root;
    try {
        root = RootRecord::parse(ByteSpan(std::string_view(tape->rootJson)));
    } catch (const Error& error) {
        throw ReplayError("tape " + std::to_string(tape->id) + "'s root record in the case does not parse: " + error.what());
    }
    const std::uint64_t interval = static_cast<std::uint64_t>(std::max(1, tape->snapshotInterval));
    std::vector<std::uint64_t> unplannable;
    ReplayPlan plan = planReplay({request.index}, interval, replayStore.snapshotTransactions(tape->id), &unplannable);
    if (!unplannable.empty() || plan.segments.size() != 1)
        throw ReplayError("the tape holds no snapshot to start transaction " + std::to_string(request.index) + "'s segment from");
    ReplaySegment& segment = plan.segments.front();
    segment.capture = {request.index};

    std::string workerPath;
    const KernelProfile profile = kernelProfileFor(request.kernels, root.numerics, NumericEnvironment::hostCpu());
    std::vector<std::unique_ptr<worker::WorkerProcess>> started;
    try {
        workerPath = request.workerPath.empty() ? worker::findReplayWorker() : request.workerPath;
        started.push_back(std::make_unique<worker::WorkerProcess>(workerPath, profile));
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
    worker::WorkerLog log(store.path() + ".compare-" + std::to_string(request.index) + ".log");
    CheckedProgram checked = checkSealedProgram(replayStore, root);
    if (checked.check != ProgramCheck::Matched)
        throw ReplayError(checked.problem);
    const std::vector<std::uint8_t> program = std::move(checked.bytes);

    worker::WorkerJob job;
    worker::RecordPlan& records = job.records;
    if (const std::string why = chooseRecordSource(*tape, records.embedded); !why.empty())
        throw ReplayError(why);
    records.tapePath = tape->path;
    records.casePath = store.path();
    records.tapeId = tape->id;
    records.snapshotInterval = interval;
    records.beforeFirstSnapshot = digestBeforeFirstSnapshot(*tape, root, program);
    for (std::uint64_t k : {segment.snapshot, segment.lastTransaction + 1})
        if (auto ref = replayStore.snapshotRecord(tape->id, k))
            records.snapshots.emplace(k, *ref);
    for (std::uint64_t t = segment.snapshot == 0 ? 0 : segment.snapshot - 1; t <= segment.lastTransaction; ++t)
        if (auto ref = replayStore.transactionRecord(tape->id, t))
            records.transactions.emplace(t, *ref);

    worker::WorkerHello hello;
    try {
        hello = worker::awaitHello(*started.front(), request.limits.startSeconds, log);
        job.device = checkReplayDevice(request.device, hello.cudaDevices, hello.libtorchVersion, hello.cudaVersion);
    } catch (const Error& error) {
        throw ReplayError(error.what());
    }
    const bool cpu = job.device == "cpu";
    job.rootJson = tape->rootJson;
    job.intraOpThreads = cpu && root.intraOpThreads > 0 ? root.intraOpThreads : hello.defaultIntraOpThreads;
    std::uint64_t largestSnapshot = 0, largestTransaction = 0;
    for (const auto& [k, ref] : records.snapshots)
        largestSnapshot = std::max(largestSnapshot, ref.frameSize);
    for (const auto& [t, ref] : records.transactions)
        largestTransaction = std::max(largestTransaction, ref.frameSize);
    if (cpu)
        job.memoryLimitBytes = request.limits.memoryLimitBytes
                                   ? request.limits.memoryLimitBytes
                                   : ReplayLimits::defaultMemoryLimit(program.size(), largestSnapshot, largestTransaction, job.intraOpThreads) +
                                         2 * kMaxComparedValueBytes;
    job.program = std::move(program);

    worker::WorkerPoolSetup setup;
    setup.executable = workerPath;
    setup.profile = profile;
    setup.workers = 1;
    setup.snapshotInterval = interval;
    setup.memoryLimitBytes = job.memoryLimitBytes;
    setup.limits = request.limits;
    setup.snapshotBytes = [&records](const ReplaySegment& s, std::uint64_t t) { return worker::segmentSnapshotBytes(records, s, t); };
    setup.log = &log;
    setup.job = worker::encodeJob(job);

    ElementComparison result;
    result.tapeId = tape->id;
    result.index = request.index;
    result.device = job.device;
    std::optional<TransactionOutcome> found;
    std::uint64_t done = 0;
    const std::vector<ReplaySegment> segments = plan.segments;
    worker::ReplayWorkerPool pool(segments, std::move(setup), std::move(started));
    const bool finished = pool.run(
        [&](std::vector<TransactionOutcome>& outcomes) {
            for (TransactionOutcome& outcome : outcomes) {
                if (outcome.index == request.index)
                    found = std::move(outcome);
                ++done;
            }
            if (request.progress)
                request.progress->report(done, segment.length(), "replaying");
        },
        [&] { return request.progress && request.progress->cancelRequested(); });
    if (!finished)
        throw OperationCancelled();
    if (!found)
        throw ReplayError("the replay of transaction " + std::to_string(request.index) + " brought no outcome back");
    result.verdict = found->verdict;
    result.detail = found->detail;
    result.omitted = found->valuesOmitted;
    if (found->values.empty() && found->verdict == Verdict::Unverifiable)
        throw ReplayError("transaction " + std::to_string(request.index) + " could not be replayed: " + found->detail);
    for (ComparedValues& values : found->values) {
        ElementTensor tensor;
        tensor.tensor = values.tensor;
        tensor.slot = values.slot;
        tensor.dtype = std::string(dtypeName(values.dtype));
        tensor.shape = values.shape;
        tensor.recorded = widened(values.dtype, values.recorded);
        tensor.replayed = widened(values.dtype, values.replayed);
        for (const TensorComparison& c : found->comparisons)
            if (c.tensor == values.tensor && c.slot == values.slot)
                tensor.comparison = c;
        if (!values.replayed.empty())
            tensor.worst = worstElements(values.dtype, values.shape, values.recorded, values.replayed);
        result.deltas.push_back(std::move(tensor));
    }
    return result;
}

}  // namespace zkdv
