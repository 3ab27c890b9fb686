#include "zkdv/replay/element_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>

#include "single_transaction_replay.h"
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
    if (!store.tape(request.tapeId))
        throw ReplayError("case " + store.path() + " holds no tape with id " + std::to_string(request.tapeId));
    if (!ReplayStore(store.database()).transactionRecord(request.tapeId, request.index))
        throw ReplayError("tape " + std::to_string(request.tapeId) + " has no transaction " + std::to_string(request.index));
    if (!transactionHasDeltas(store.database(), request.tapeId, request.index))
        throw ReplayError("transaction " + std::to_string(request.index) +
                          " carries no recorded deltas (only its fingerprints were recorded): there are no elements to compare");
    SingleTransactionReplay replay;
    replay.tapeId = request.tapeId;
    replay.index = request.index;
    replay.device = request.device;
    replay.kernels = request.kernels;
    replay.captureDeltas = true;
    replay.extraMemory = 2 * kMaxComparedValueBytes;
    replay.limits = request.limits;
    replay.workerPath = request.workerPath;
    replay.logSuffix = "compare-" + std::to_string(request.index);
    replay.progress = request.progress;
    SingleTransactionResult replayed = replaySingleTransaction(store, replay);

    ElementComparison result;
    result.tapeId = request.tapeId;
    result.index = request.index;
    result.device = replayed.device;
    TransactionOutcome& found = replayed.outcome;
    result.verdict = found.verdict;
    result.detail = found.detail;
    result.omitted = found.valuesOmitted;
    if (found.values.empty() && found.verdict == Verdict::Unverifiable)
        throw ReplayError("transaction " + std::to_string(request.index) + " could not be replayed: " + found.detail);
    for (ComparedValues& values : found.values) {
        ElementTensor tensor;
        tensor.tensor = values.tensor;
        tensor.slot = values.slot;
        tensor.dtype = std::string(dtypeName(values.dtype));
        tensor.shape = values.shape;
        tensor.recorded = widened(values.dtype, values.recorded);
        tensor.replayed = widened(values.dtype, values.replayed);
        for (const TensorComparison& c : found.comparisons)
            if (c.tensor == values.tensor && c.slot == values.slot)
                tensor.comparison = c;
        if (!values.replayed.empty())
            tensor.worst = worstElements(values.dtype, values.shape, values.recorded, values.replayed);
        result.deltas.push_back(std::move(tensor));
    }
    return result;
}

}  // namespace zkdv
