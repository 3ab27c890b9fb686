#include "zkdv/audit/envelope_calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "zkdv/util/json_text.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/small_file.h"

namespace zkdv {

namespace {
using nlohmann::json;

constexpr std::uint64_t kMaxCount = std::uint64_t(1) << 53;  // exact in a double
constexpr std::size_t kMaxKinds = 1024;
constexpr std::size_t kMaxSources = 100000;
constexpr double kMaxUlpValue = 18446744073709551616.0;  // 2^64: no two values are farther apart
constexpr double kMaxRelativeL2 = 1e300;

// The ⌈q·n⌉-th smallest of `sorted` (1-based), q in (0, 1].
double nearestRank(const std::vector<double>& sorted, double q)
{
    const double rank = std::ceil(q * static_cast<double>(sorted.size()));
    const std::size_t index = rank < 1 ? 0 : std::min(sorted.size(), static_cast<std::size_t>(rank)) - 1;
    return sorted[index];
}

json quantilesJson(const SampleQuantiles& q) { return {{"p50", q.p50}, {"p90", q.p90}, {"p99", q.p99}, {"max", q.max}}; }

std::string numberText(double value)
{
    char text[40];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

// Reads members of an untrusted document, naming the file and the member at fault.
class Reader {
public:
    explicit Reader(std::string where) : where_(std::move(where)) {}

    [[noreturn]] void fail(const std::string& member, const std::string& problem) const
    {
        throw FormatError(where_ + ": " + member + " " + problem);
    }
    const json& member(const json& object, const std::string& path, const char* name) const
    {
        auto it = object.find(name);
        if (it == object.end())
            fail(path.empty() ? std::string(name) : path + "." + name, "is missing");
        return *it;
    }
    const json& object(const json& parent, const std::string& path, const char* name) const
    {
        const json& value = member(parent, path, name);
        if (!value.is_object())
            fail(join(path, name), std::string("must be an object, found ") + value.type_name());
        return value;
    }
    std::string text(const json& parent, const std::string& path, const char* name, std::size_t maxLength = 256) const
    {
        const json& value = member(parent, path, name);
        if (!value.is_string())
            fail(join(path, name), std::string("must be a string, found ") + value.type_name());
        std::string out = value.get<std::string>();
        if (out.size() > maxLength)
            fail(join(path, name), "is " + std::to_string(out.size()) + " bytes long, at most " + std::to_string(maxLength));
        return out;
    }
    std::uint64_t count(const json& parent, const std::string& path, const char* name) const
    {
        const json& value = member(parent, path, name);
        if (!value.is_number_unsigned())
            fail(join(path, name), "must be a whole number from 0, found " + value.dump().substr(0, 40));
        const std::uint64_t out = value.get<std::uint64_t>();
        if (out > kMaxCount)
            fail(join(path, name), "is " + std::to_string(out) + ", more than 2^53");
        return out;
    }
    double number(const json& parent, const std::string& path, const char* name, double most) const
    {
        const json& value = member(parent, path, name);
        if (!value.is_number())
            fail(join(path, name), "must be a number, found " + value.dump().substr(0, 40));
        const double out = value.get<double>();
        if (!std::isfinite(out) || out < 0 || out > most)
            fail(join(path, name), "is " + numberText(out) + ", not a number from 0 to " + numberText(most));
        return out;
    }
    SampleQuantiles quantiles(const json& parent, const std::string& path, const char* name, std::uint64_t count, double most) const
    {
        const json& q = object(parent, path, name);
        const std::string at = join(path, name);
        SampleQuantiles out;
        out.count = count;
        out.p50 = number(q, at, "p50", most);
        out.p90 = number(q, at, "p90", most);
        out.p99 = number(q, at, "p99", most);
        out.max = number(q, at, "max", most);
        if (!(out.p50 <= out.p90 && out.p90 <= out.p99 && out.p99 <= out.max))
            fail(at, "holds quantiles out of order (p50 " + numberText(out.p50) + ", p90 " + numberText(out.p90) + ", p99 " +
                         numberText(out.p99) + ", max " + numberText(out.max) + "); each must be at most the next");
        return out;
    }
    NumericEnvironment environment(const json& parent, const std::string& path, const char* name) const
    {
        const json& value = object(parent, path, name);
        try {
            return NumericEnvironment::parse(value.dump(), where_ + ": " + join(path, name));
        } catch (const nlohmann::json::exception& error) {
            fail(join(path, name), std::string("is not a numerical environment: ") + error.what());
        }
    }
    DeterminismProfile determinism(const json& parent, const std::string& path, const char* name) const
    {
        const json& value = object(parent, path, name);
        try {
            return DeterminismProfile::parse(value.dump(), where_ + ": " + join(path, name));
        } catch (const nlohmann::json::exception& error) {
            fail(join(path, name), std::string("is not a determinism profile: ") + error.what());
        }
    }
    static std::string join(const std::string& path, const char* name) { return path.empty() ? std::string(name) : path + "." + name; }

private:
    std::string where_;
};

}  // namespace

SampleQuantiles quantilesOf(std::vector<double> values)
{
    SampleQuantiles q;
    q.count = values.size();
    if (values.empty())
        return q;
    std::sort(values.begin(), values.end());
    q.p50 = nearestRank(values, 0.50);
    q.p90 = nearestRank(values, 0.90);
    q.p99 = nearestRank(values, 0.99);
    q.max = values.back();
    return q;
}

std::uint64_t robustRank(std::uint64_t nonzero) { return nonzero < 2 ? 0 : std::max<std::uint64_t>(2, nonzero / 100 + 1); }

RobustRatio robustRatioOf(std::vector<double> ratios)
{
    ratios.erase(std::remove_if(ratios.begin(), ratios.end(), [](double r) { return !(r > 0); }), ratios.end());
    RobustRatio robust;
    robust.nonzero = ratios.size();
    robust.rank = robustRank(robust.nonzero);
    if (robust.rank == 0)
        return robust;
    // The rank-th largest: the (n − rank)-th element, 0-based, of the ascending order.
    const auto at = ratios.begin() + static_cast<std::ptrdiff_t>(ratios.size() - robust.rank);
    std::nth_element(ratios.begin(), at, ratios.end());
    robust.value = *at;
    return robust;
}

std::string calibrationKind(const std::string& slot)
{
    if (slot.rfind("total_norm/", 0) == 0)
        return "total_norm";
    if (slot == "loss" || slot == "delta" || slot == "update/l2" || slot == "update/max_abs" || slot == "snapshot/param" ||
        slot == "snapshot/buffer" || (slot.rfind("state/", 0) == 0 && slot.size() > 6))
        return slot;
    return {};
}

void CalibrationSampler::add(const TransactionOutcome& outcome)
{
    for (const TensorComparison& c : outcome.comparisons) {
        const std::string kind = calibrationKind(c.slot);
        if (kind.empty())
            continue;
        if (c.roundingNoise) {
            ++noiseExcluded_;
            continue;
        }
        // Measured (cross-environment, floating point): the ratio; bit for bit there it is 0.
        double ratio = c.envelopeRatio;
        if (std::isnan(ratio)) {
            if (c.metrics.bitwiseEqual)
                continue;
            // Equal values in other bits (-0 against +0, NaN payloads) pass every bound as they
            // are: a difference of 0.
            if (!(c.metrics.maxUlp == 0 && !c.metrics.finiteMismatch() && c.note.empty())) {
                ++unjudged_;
                continue;
            }
            ratio = 0;
        }
        if (!std::isfinite(ratio)) {
            ++unbounded_;
            continue;
        }
        Samples& s = samples_[kind];
        s.maxUlp.push_back(std::isfinite(c.metrics.maxUlp) ? c.metrics.maxUlp : kMaxUlpValue);
        s.relativeL2.push_back(std::isfinite(c.metrics.relativeL2) ? std::min(c.metrics.relativeL2, kMaxRelativeL2) : kMaxRelativeL2);
        // A ratio a file could not hold (replay refuses a file claiming more): what calibrate
        // writes, replay reads. Such a ratio is far above the ceiling: an outlier.
        s.ratio.push_back(std::min(ratio, kMaximumCalibrationRatio));
        if (ratio > 0)
            nonzero_.push_back({source_, outcome.index, c.tensor, c.slot, ratio});
    }
}

RobustRatio CalibrationSampler::robustRatio() const
{
    std::vector<double> ratios;
    ratios.reserve(nonzero_.size());
    for (const CalibrationComparison& c : nonzero_)
        ratios.push_back(std::min(c.ratio, kMaximumCalibrationRatio));  // as the kinds hold it
    return robustRatioOf(std::move(ratios));
}

std::vector<CalibrationComparison> CalibrationSampler::beyond(double fence) const
{
    std::vector<CalibrationComparison> out;
    for (const CalibrationComparison& c : nonzero_)
        if (std::min(c.ratio, kMaximumCalibrationRatio) > fence)
            out.push_back(c);
    std::stable_sort(out.begin(), out.end(), [](const CalibrationComparison& a, const CalibrationComparison& b) { return a.ratio > b.ratio; });
    return out;
}

std::vector<KindCalibration> CalibrationSampler::kinds() const
{
    std::vector<KindCalibration> out;
    for (const auto& [kind, s] : samples_)
        out.push_back({kind, quantilesOf(s.maxUlp), quantilesOf(s.relativeL2), quantilesOf(s.ratio)});
    return out;
}

namespace {
std::string deviceKind(const std::string& device) { return device.rfind("cuda", 0) == 0 ? "cuda" : "cpu"; }
}  // namespace

std::vector<std::string> EnvironmentPair::differences(const EnvironmentPair& other) const
{
    std::vector<std::string> out;
    for (const std::string& name : recorded.differences(other.recorded))
        out.push_back("recorded." + name);
    if (recordedTorch != other.recordedTorch)
        out.push_back("recorded.torch");
    if (deviceKind(recordedDevice) != deviceKind(other.recordedDevice))
        out.push_back("recorded.device");
    if (recordedDeterminism.has_value() != other.recordedDeterminism.has_value())
        out.push_back("recorded.determinism");
    else if (recordedDeterminism)
        for (const std::string& name : recordedDeterminism->differences(*other.recordedDeterminism))
            out.push_back("recorded.determinism." + name);
    for (const std::string& name : replayDeterminism.differences(other.replayDeterminism))
        out.push_back("replay.determinism." + name);
    for (const std::string& name : replay.differences(other.replay))
        out.push_back("replay." + name);
    if (replayLibtorch != other.replayLibtorch)
        out.push_back("replay.libtorch");
    if (device != other.device)
        out.push_back("device");
    return out;
}

std::string EnvironmentPair::describeDifferences(const EnvironmentPair& other) const
{
    std::string out;
    auto add = [&](const std::string& text) { out += (out.empty() ? "" : "; ") + text; };
    auto prefixed = [&](const std::string& side, const std::string& described) {
        // describeDifferences joins "name a -> b" with "; ".
        std::size_t start = 0;
        while (start < described.size()) {
            const std::size_t end = described.find("; ", start);
            add(side + described.substr(start, end == std::string::npos ? std::string::npos : end - start));
            start = end == std::string::npos ? described.size() : end + 2;
        }
    };
    auto quoted = [](const std::string& value) { return value.empty() ? std::string("(none)") : "\"" + value + "\""; };
    prefixed("recorded.", recorded.describeDifferences(other.recorded));
    if (recordedTorch != other.recordedTorch)
        add("recorded.torch " + quoted(recordedTorch) + " -> " + quoted(other.recordedTorch));
    if (deviceKind(recordedDevice) != deviceKind(other.recordedDevice))
        add("recorded.device " + quoted(recordedDevice) + " -> " + quoted(other.recordedDevice));
    if (recordedDeterminism.has_value() != other.recordedDeterminism.has_value())
        add(std::string("recorded.determinism ") + (recordedDeterminism ? "recorded" : "(none)") + " -> " +
            (other.recordedDeterminism ? "recorded" : "(none)"));
    else if (recordedDeterminism)
        prefixed("recorded.determinism.", recordedDeterminism->describeDifferences(*other.recordedDeterminism));
    prefixed("replay.determinism.", replayDeterminism.describeDifferences(other.replayDeterminism));
    prefixed("replay.", replay.describeDifferences(other.replay));
    if (replayLibtorch != other.replayLibtorch)
        add("replay.libtorch " + quoted(replayLibtorch) + " -> " + quoted(other.replayLibtorch));
    if (device != other.device)
        add("device " + quoted(device) + " -> " + quoted(other.device));
    return out;
}

std::uint64_t EnvelopeCalibration::samples() const
{
    std::uint64_t n = 0;
    for (const KindCalibration& k : kinds)
        n += k.ratio.count;
    return n;
}

double EnvelopeCalibration::maxRatio() const
{
    double most = 0;
    for (const KindCalibration& k : kinds)
        most = std::max(most, k.ratio.max);
    return most;
}

double EnvelopeCalibration::fence() const
{
    if (version < 2)
        return std::numeric_limits<double>::infinity();
    return std::min(ceiling, std::max(kMinimumCalibratedEnvelope, kCalibrationOutlierFactor * robust.value));
}

double EnvelopeCalibration::envelope() const
{
    if (version < 2)
        return std::max(kMinimumCalibratedEnvelope, maxRatio() * kCalibrationSafetyFactor);
    // The largest ratio only narrows what the robust ratio allows: one comparison below the
    // fence widens the envelope to at most kCalibrationOutlierFactor × a ratio it cannot move.
    const double robustBound = std::min(maxRatio() * kCalibrationSafetyFactor, kCalibrationOutlierFactor * robust.value);
    return std::min(ceiling, std::max(kMinimumCalibratedEnvelope, robustBound));
}

double EnvelopeCalibration::quantileLevel() const { return 1.0 - 1.0 / (static_cast<double>(samples()) + 1.0); }

std::string EnvelopeCalibration::refusal() const
{
    if (samples() < kMinimumCalibrationSamples)
        return "it holds " + std::to_string(samples()) + " honest comparisons, fewer than the " + std::to_string(kMinimumCalibrationSamples) +
               " whose largest bounds the 99 % quantile; calibrate on more transactions";
    return {};
}

std::string EnvelopeCalibration::toJson() const
{
    json kindList = json::array();
    for (const KindCalibration& k : kinds)
        kindList.push_back({{"kind", k.kind},
                            {"count", k.ratio.count},
                            {"max_ulp", quantilesJson(k.maxUlp)},
                            {"relative_l2", quantilesJson(k.relativeL2)},
                            {"ratio", quantilesJson(k.ratio)}});
    json sourceList = json::array();
    for (const CalibrationSource& s : sources)
        sourceList.push_back({{"tape_chain_head", s.tapeChainHead}, {"run", s.runId}, {"transactions", s.transactions}});
    json document = {{"zkdv_calibration", version},
                           {"created_at", createdAt},
                           {"zkdv_version", zkdvVersion},
                           {"recorded",
                            {{"numerics", json::parse(pair.recorded.toJson())},
                             {"torch", pair.recordedTorch},
                             {"device", pair.recordedDevice},
                             {"determinism", pair.recordedDeterminism ? json::parse(pair.recordedDeterminism->toJson()) : json(nullptr)}}},
                           {"replay",
                            {{"numerics", json::parse(pair.replay.toJson())},
                             {"libtorch", pair.replayLibtorch},
                             {"device", pair.device},
                             {"determinism", json::parse(pair.replayDeterminism.toJson())}}},
                           {"samples", samples()},
                           {"max_ratio", maxRatio()},
                           {"safety_factor", kCalibrationSafetyFactor},
                           {"envelope", envelope()},
                           {"excluded", {{"noise", noiseExcluded}, {"unbounded", unbounded}, {"unjudged", unjudged}}},
                           {"kinds", kindList},
                           {"sources", sourceList}};
    if (version >= 2) {
        document["robust_ratio"] = {{"nonzero", robust.nonzero}, {"rank", robust.rank}, {"value", robust.value}};
        document["outlier_factor"] = kCalibrationOutlierFactor;
        document["ceiling"] = ceiling;
    }
    return toJsonText(document, 2) + "\n";
}

EnvelopeCalibration EnvelopeCalibration::parse(std::string_view text, const std::string& where)
{
    const json document = parseUntrustedJson(text, where);
    const Reader in(where);
    if (!document.is_object())
        in.fail("the document", std::string("must be an object, found ") + document.type_name());
    EnvelopeCalibration c;
    const json& version = in.member(document, "", "zkdv_calibration");
    if (!version.is_number_unsigned() || version.get<std::uint64_t>() < 1 || version.get<std::uint64_t>() > static_cast<std::uint64_t>(kVersion))
        in.fail("zkdv_calibration", "is " + version.dump().substr(0, 40) + "; this zkdv reads calibration files of versions 1 to " + std::to_string(kVersion));
    c.version = static_cast<int>(version.get<std::uint64_t>());
    c.createdAt = in.text(document, "", "created_at", 64);
    c.zkdvVersion = in.text(document, "", "zkdv_version", 64);
    const json& recorded = in.object(document, "", "recorded");
    c.pair.recorded = in.environment(recorded, "recorded", "numerics");
    c.pair.recordedTorch = in.text(recorded, "recorded", "torch", 64);
    c.pair.recordedDevice = in.text(recorded, "recorded", "device", 64);
    if (!in.member(recorded, "recorded", "determinism").is_null())
        c.pair.recordedDeterminism = in.determinism(recorded, "recorded", "determinism");
    const json& replay = in.object(document, "", "replay");
    c.pair.replay = in.environment(replay, "replay", "numerics");
    c.pair.replayLibtorch = in.text(replay, "replay", "libtorch", 64);
    c.pair.device = in.text(replay, "replay", "device", 64);
    c.pair.replayDeterminism = in.determinism(replay, "replay", "determinism");
    const json& excluded = in.object(document, "", "excluded");
    c.noiseExcluded = in.count(excluded, "excluded", "noise");
    c.unbounded = in.count(excluded, "excluded", "unbounded");
    c.unjudged = in.count(excluded, "excluded", "unjudged");

    const json& kinds = in.member(document, "", "kinds");
    if (!kinds.is_array())
        in.fail("kinds", std::string("must be an array, found ") + kinds.type_name());
    if (kinds.size() > kMaxKinds)
        in.fail("kinds", "holds " + std::to_string(kinds.size()) + " kinds, at most " + std::to_string(kMaxKinds));
    std::set<std::string> seen;
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < kinds.size(); ++i) {
        const std::string at = "kinds[" + std::to_string(i) + "]";
        if (!kinds[i].is_object())
            in.fail(at, std::string("must be an object, found ") + kinds[i].type_name());
        KindCalibration k;
        k.kind = in.text(kinds[i], at, "kind", 128);
        if (calibrationKind(k.kind) != k.kind || k.kind.empty())
            in.fail(at + ".kind", "is \"" + k.kind + "\", not a kind of comparison an envelope judges");
        if (!seen.insert(k.kind).second)
            in.fail(at + ".kind", "is \"" + k.kind + "\" a second time");
        const std::uint64_t count = in.count(kinds[i], at, "count");
        if (count == 0)
            in.fail(at + ".count", "is 0: a kind is listed only when it was measured");
        if (__builtin_add_overflow(total, count, &total) || total > kMaxCount)
            in.fail(at + ".count", "makes more than 2^53 samples in all");
        k.maxUlp = in.quantiles(kinds[i], at, "max_ulp", count, kMaxUlpValue);
        k.relativeL2 = in.quantiles(kinds[i], at, "relative_l2", count, kMaxRelativeL2);
        k.ratio = in.quantiles(kinds[i], at, "ratio", count, kMaximumCalibrationRatio);
        c.kinds.push_back(std::move(k));
    }
    std::sort(c.kinds.begin(), c.kinds.end(), [](const KindCalibration& a, const KindCalibration& b) { return a.kind < b.kind; });

    // The summary members must be what the kinds say: a file edited in one place and not the
    // other is refused rather than believed in either.
    if (in.count(document, "", "samples") != c.samples())
        in.fail("samples", "is " + std::to_string(in.count(document, "", "samples")) + ", but the kinds' counts add up to " + std::to_string(c.samples()));
    const double maxRatio = in.number(document, "", "max_ratio", kMaximumCalibrationRatio);
    if (maxRatio != c.maxRatio())
        in.fail("max_ratio", "is " + numberText(maxRatio) + ", but the largest of the kinds' ratio.max is " + numberText(c.maxRatio()));
    const double factor = in.number(document, "", "safety_factor", 1e6);
    if (factor != kCalibrationSafetyFactor)
        in.fail("safety_factor", "is " + numberText(factor) + "; this zkdv derives envelopes with " + numberText(kCalibrationSafetyFactor));
    if (c.version >= 2) {
        // The robust ratio is one of the nonzero ratios counted, at the rank their number gives.
        const json& robust = in.object(document, "", "robust_ratio");
        c.robust.nonzero = in.count(robust, "robust_ratio", "nonzero");
        if (c.robust.nonzero > c.samples())
            in.fail("robust_ratio.nonzero", "is " + std::to_string(c.robust.nonzero) + ", more than the " + std::to_string(c.samples()) + " samples");
        c.robust.rank = in.count(robust, "robust_ratio", "rank");
        if (c.robust.rank != robustRank(c.robust.nonzero))
            in.fail("robust_ratio.rank", "is " + std::to_string(c.robust.rank) + "; of " + std::to_string(c.robust.nonzero) + " nonzero ratios it is " +
                                             std::to_string(robustRank(c.robust.nonzero)));
        c.robust.value = in.number(robust, "robust_ratio", "value", kMaximumCalibrationRatio);
        if ((c.robust.rank == 0) != (c.robust.value == 0) || c.robust.value > c.maxRatio())
            in.fail("robust_ratio.value", "is " + numberText(c.robust.value) + ", not the rank-" + std::to_string(c.robust.rank) +
                                              " largest of nonzero ratios at most max_ratio " + numberText(c.maxRatio()));
        const double outlierFactor = in.number(document, "", "outlier_factor", 1e6);
        if (outlierFactor != kCalibrationOutlierFactor)
            in.fail("outlier_factor", "is " + numberText(outlierFactor) + "; this zkdv derives envelopes with " + numberText(kCalibrationOutlierFactor));
        c.ceiling = in.number(document, "", "ceiling", kMaximumCalibrationRatio);
        if (c.ceiling < kMinimumCalibratedEnvelope)
            in.fail("ceiling", "is " + numberText(c.ceiling) + ", below the smallest envelope " + numberText(kMinimumCalibratedEnvelope));
        // calibrate refuses to write a calibration holding an outlier: one that does was not
        // written by it, whatever else it says.
        if (c.maxRatio() > c.fence())
            in.fail("max_ratio", "is " + numberText(c.maxRatio()) + ", beyond the fence " + numberText(c.fence()) +
                                     " (min(ceiling, outlier_factor x robust_ratio.value)): calibrate refuses a calibration holding such an outlier");
    }
    const double envelope = in.number(document, "", "envelope", kMaximumCalibrationRatio * kCalibrationSafetyFactor);
    if (std::fabs(envelope - c.envelope()) > 1e-9 * c.envelope())
        in.fail("envelope", "is " + numberText(envelope) + ", but " +
                                (c.version >= 2 ? "min(ceiling, max(1, min(max_ratio x safety_factor, outlier_factor x robust_ratio.value)))"
                                                : "max_ratio x safety_factor") +
                                " gives " + numberText(c.envelope()));

    const json& sources = in.member(document, "", "sources");
    if (!sources.is_array())
        in.fail("sources", std::string("must be an array, found ") + sources.type_name());
    if (sources.size() > kMaxSources)
        in.fail("sources", "holds " + std::to_string(sources.size()) + " replays, at most " + std::to_string(kMaxSources));
    for (std::size_t i = 0; i < sources.size(); ++i) {
        const std::string at = "sources[" + std::to_string(i) + "]";
        if (!sources[i].is_object())
            in.fail(at, std::string("must be an object, found ") + sources[i].type_name());
        CalibrationSource s;
        s.tapeChainHead = in.text(sources[i], at, "tape_chain_head", 64);
        s.runId = static_cast<std::int64_t>(in.count(sources[i], at, "run"));
        s.transactions = in.count(sources[i], at, "transactions");
        c.sources.push_back(std::move(s));
    }
    return c;
}

LoadedCalibration loadCalibration(const std::string& path)
{
    const std::string bytes = readSmallFile(path, kMaxCalibrationFileBytes, "a calibration file (zkdv-audit calibrate)");
    LoadedCalibration loaded;
    loaded.path = path;
    loaded.sha256 = toHex(Sha256::of(ByteSpan(std::string_view(bytes))));
    loaded.calibration = EnvelopeCalibration::parse(bytes, path);
    return loaded;
}

EnvelopeChoice chooseEnvelope(const std::optional<LoadedCalibration>& calibration, const std::optional<EnvironmentPair>& pair,
                              bool crossEnvironment, double envelope, bool given)
{
    EnvelopeChoice choice;
    choice.envelope = envelope;
    choice.source = given ? "tolerance" : "default";
    choice.calibration = calibration;
    char number[64];
    std::snprintf(number, sizeof number, "%g", envelope);
    const std::string fallback = given ? std::string("the envelope ") + number + " of --tolerance applies"
                                       : std::string("the default envelope ") + number + " applies";
    if (!calibration) {
        choice.note = crossEnvironment ? fallback : "the envelope does not apply: the replay runs in the recording's numerical environment";
        return choice;
    }
    const EnvelopeCalibration& c = calibration->calibration;
    const std::string named = "the calibration " + calibration->path + " (sha256 " + calibration->sha256.substr(0, 16) + "…)";
    if (!crossEnvironment) {
        choice.note = named + " is not used: the replay runs in the recording's numerical environment, where no envelope applies";
        return choice;
    }
    if (!pair) {
        choice.note = named + " is not used: the tape records no numerical environment (root numerics, format 1.5), so no calibration is for it; " + fallback;
        return choice;
    }
    if (const std::string differ = c.pair.describeDifferences(*pair); !differ.empty()) {
        choice.note = named + " is not used: it was measured for another pair of environments (calibration -> this run: " + differ + "); " + fallback;
        return choice;
    }
    if (const std::string refusal = c.refusal(); !refusal.empty()) {
        choice.note = named + " is not used: " + refusal + "; " + fallback;
        return choice;
    }
    // A calibration is measured on tapes the trainer may have recorded: it can narrow the
    // envelope, never widen it beyond the one the run would use without it (issue 48, item 3).
    // calibrate writes none above its ceiling (the same envelope); a version-1 file may be.
    choice.envelope = std::min(c.envelope(), envelope);
    choice.source = "calibrated";
    choice.calibrationUsed = true;
    char text[480];
    if (c.version >= 2)
        std::snprintf(text, sizeof text,
                      "calibrated: %g, the least of %g x the largest ratio %g, %g x the robust ratio %g (the p99 of the %llu nonzero ratios of "
                      "%llu honest comparisons, never the largest) and the ceiling %g, at least %g",
                      choice.envelope, kCalibrationSafetyFactor, c.maxRatio(), kCalibrationOutlierFactor, c.robust.value,
                      static_cast<unsigned long long>(c.robust.nonzero), static_cast<unsigned long long>(c.samples()), c.ceiling,
                      kMinimumCalibratedEnvelope);
    else
        std::snprintf(text, sizeof text,
                      "calibrated: %g, the largest ratio %g of %llu honest comparisons (it bounds their %.4g quantile) times the safety factor %g, "
                      "at least %g (a version-1 calibration: the largest ratio alone, which one poisoned comparison sets; recalibrate)",
                      choice.envelope, c.maxRatio(), static_cast<unsigned long long>(c.samples()), c.quantileLevel(), kCalibrationSafetyFactor,
                      kMinimumCalibratedEnvelope);
    choice.note = std::string(text) + ", from " + named;
    if (c.envelope() > envelope) {
        char ceiling[200];
        std::snprintf(ceiling, sizeof ceiling, "; capped at %g, the envelope without it: its envelope %g is beyond what the tolerance calls rounding, "
                                               "so it narrows nothing",
                      envelope, c.envelope());
        choice.note += ceiling;
    }
    return choice;
}

}  // namespace zkdv
