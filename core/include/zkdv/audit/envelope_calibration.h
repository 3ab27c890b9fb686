#pragma once
// An envelope measured for one pair of numerical environments: what honest replays of tapes
// recorded in one environment moved in another, per kind of compared value, and the envelope
// a run between the same two environments derives from it (docs/replay.md, "Calibration").

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/tape/determinism_profile.h"
#include "zkdv/tape/numeric_environment.h"
#include "zkdv/util/error.h"

namespace zkdv {

// A calibration that cannot be made or used as asked (no cross-environment replay, cases of
// different pairs). A malformed file is a FormatError.
class CalibrationError : public Error {
public:
    using Error::Error;
};

// A run's envelope is at most the largest ratio the calibration observed times this factor
// (docs/replay.md, "Calibration": the order statistic and what the factor covers).
inline constexpr double kCalibrationSafetyFactor = 4.0;
// ... and at most this factor times the calibration's robust ratio (RobustRatio), above which
// a comparison is an outlier: `calibrate` names it and writes nothing (issue 48, item 3).
inline constexpr double kCalibrationOutlierFactor = 16.0;
// Fewer honest comparisons than this and the largest says too little about the tail: the
// calibration is refused for use.
inline constexpr std::uint64_t kMinimumCalibrationSamples = 100;
// No calibrated envelope is smaller: one rounding of the model's scale (u × S) is no room a
// trainer could use, and an envelope of 0 would turn rounding into divergence.
inline constexpr double kMinimumCalibratedEnvelope = 1.0;
// A file claiming a ratio above this is refused as malformed: 2^24 u × S is the whole scale
// for F32 values, an envelope that checks nothing.
inline constexpr double kMaximumCalibrationRatio = 16777216.0;
// Calibration files are small (a few KB); a larger one is refused before it is parsed.
inline constexpr std::uint64_t kMaxCalibrationFileBytes = 4u << 20;

// The nearest-rank quantiles of a sample: Q(q) is the ⌈q·n⌉-th smallest value (the smallest
// value at or above which lie a fraction q of the sample); all 0 for an empty sample.
struct SampleQuantiles {
    std::uint64_t count = 0;
    double p50 = 0, p90 = 0, p99 = 0, max = 0;
};
SampleQuantiles quantilesOf(std::vector<double> values);

// The bulk of a calibration's ratios, robust to its tail (issue 48, item 3): the nearest-rank
// 99th percentile of the nonzero ratios pooled over every kind, never the largest; that is the
// rank-th largest of `nonzero`, rank = max(2, ⌊nonzero/100⌋ + 1); 0 (rank 0) when fewer than two
// ratios are nonzero. One comparison, whatever its ratio, moves it by at most one rank, to a
// neighbouring ratio of the others (docs/replay.md, "Calibration").
struct RobustRatio {
    std::uint64_t nonzero = 0;
    std::uint64_t rank = 0;
    double value = 0;
};
std::uint64_t robustRank(std::uint64_t nonzero);
RobustRatio robustRatioOf(std::vector<double> ratios);  // zeros are left out

// What the calibration measured of one kind of comparison: "loss", "delta", "update/l2",
// "update/max_abs", "snapshot/param", "snapshot/buffer", "state/<slot>", "total_norm".
// The three statistics are over the same comparisons.
struct KindCalibration {
    std::string kind;
    SampleQuantiles maxUlp, relativeL2, ratio;
};

// The two sides a calibration (and a run) stands between: the tapes' recording environment
// and torch release, the replay workers' environment, libtorch and device.
struct EnvironmentPair {
    NumericEnvironment recorded;
    std::string recordedTorch;
    std::string recordedDevice = "cpu";                      // the training's (producer.device)
    std::optional<DeterminismProfile> recordedDeterminism;  // the tape's, when it records one (1.13)
    NumericEnvironment replay;
    std::string replayLibtorch;
    std::string device;
    DeterminismProfile replayDeterminism;  // what the workers ran with

    // The members in which `other` differs, named by side: "recorded.cpu.model",
    // "replay.intra_op_threads", "replay.settings.MKL_CBWR", "recorded.torch",
    // "replay.libtorch", "device"; empty when the pairs match.
    std::vector<std::string> differences(const EnvironmentPair& other) const;
    // The same, with the two values: "replay.intra_op_threads \"2\" -> \"3\"; …".
    std::string describeDifferences(const EnvironmentPair& other) const;
};

// One replay the calibration measured.
struct CalibrationSource {
    std::string tapeChainHead;  // hex: which tape
    std::int64_t runId = 0;     // its run in the case
    std::uint64_t transactions = 0;
};

struct EnvelopeCalibration {
    // 2: the envelope derives from the robust ratio and the ceiling. 1: files of an earlier
    // zkdv, still read (and written back as read): the envelope from the largest ratio alone,
    // which one poisoned comparison sets; a run caps it at its own envelope.
    static constexpr int kVersion = 2;
    int version = kVersion;
    EnvironmentPair pair;
    std::vector<KindCalibration> kinds;  // by kind name
    std::uint64_t noiseExcluded = 0;     // left out: values a noise gradient reaches (docs/replay.md, "Noise gradients")
    std::uint64_t unbounded = 0;         // left out: a difference over a zero scale, which no envelope admits
    std::uint64_t unjudged = 0;          // differences no envelope judges (integers, NaN/Inf, dtype or shape)
    std::vector<CalibrationSource> sources;
    std::string createdAt;               // UTC, RFC 3339
    std::string zkdvVersion;
    // Version 2: the robust ratio of the comparisons counted above, and the ceiling: the
    // envelope a run uses without a calibration (the tolerance's, Tolerance::defaults()),
    // which no calibrated envelope exceeds.
    RobustRatio robust;
    double ceiling = Tolerance::defaults().envelope;

    std::uint64_t samples() const;  // the comparisons of every kind
    double maxRatio() const;        // the largest ratio of any kind
    // Version 2: min(ceiling, max(kMinimumCalibratedEnvelope, kCalibrationOutlierFactor × robust.value)).
    // A comparison whose ratio is above it is an outlier: no honest rounding puts it that far
    // above the bulk (or above what the tolerance calls rounding at all), and `calibrate`
    // refuses to write a calibration holding one. Version 1: no fence (infinity).
    double fence() const;
    // The envelope a run derives. Version 2: min(ceiling, max(kMinimumCalibratedEnvelope,
    // min(kCalibrationSafetyFactor × maxRatio(), kCalibrationOutlierFactor × robust.value)));
    // at least maxRatio() when no comparison is beyond the fence. Version 1:
    // max(kMinimumCalibratedEnvelope, kCalibrationSafetyFactor × maxRatio()).
    double envelope() const;
    // The level the largest of n honest samples bounds: a further one exceeds it with
    // probability 1/(n+1), so 1 − 1/(n+1).
    double quantileLevel() const;
    // Why it may not be used ("" when it may): too few samples.
    std::string refusal() const;

    std::string toJson() const;  // the file, indented (in its version)
    // Parses a calibration file; FormatError names `where` (the file) and the member at
    // fault ("calibration.json: kinds[2].ratio.p90 is -1, …").
    static EnvelopeCalibration parse(std::string_view text, const std::string& where);
};

// A calibration file read for a run: its contents and the SHA-256 of its bytes.
struct LoadedCalibration {
    std::string path;
    std::string sha256;  // hex
    EnvelopeCalibration calibration;
};
// Reads and parses a calibration file (IoError when unreadable, FormatError when malformed).
LoadedCalibration loadCalibration(const std::string& path);

// One measured comparison of a calibration replay with a nonzero ratio, named so that an
// outlier can be: which replay (an index the caller gives, CalibrationSampler::setSource),
// transaction, tensor and slot.
struct CalibrationComparison {
    std::size_t source = 0;
    std::uint64_t transaction = 0;
    std::string tensor;
    std::string slot;
    double ratio = 0;  // as measured (the kinds hold it clamped to kMaximumCalibrationRatio)
};

// Collects the comparisons of calibration replays (every bound zero, so every difference in
// the cross-environment regime is measured against the envelope's scale) by kind.
class CalibrationSampler {
public:
    // The replay the next outcomes come from (CalibrationComparison::source); 0 until set.
    void setSource(std::size_t source) { source_ = source; }
    void add(const TransactionOutcome& outcome);
    std::vector<KindCalibration> kinds() const;
    RobustRatio robustRatio() const;  // of every comparison added, pooled over kinds
    // The comparisons whose ratio is above `fence` (EnvelopeCalibration::fence), largest first.
    std::vector<CalibrationComparison> beyond(double fence) const;
    std::uint64_t noiseExcluded() const { return noiseExcluded_; }
    std::uint64_t unbounded() const { return unbounded_; }
    std::uint64_t unjudged() const { return unjudged_; }

private:
    struct Samples {
        std::vector<double> maxUlp, relativeL2, ratio;
    };
    std::map<std::string, Samples> samples_;
    std::vector<CalibrationComparison> nonzero_;
    std::size_t source_ = 0;
    std::uint64_t noiseExcluded_ = 0, unbounded_ = 0, unjudged_ = 0;
};

// The kind a comparison's slot belongs to ("total_norm/0" -> "total_norm"), or "" when no
// envelope ever judges the slot (a digest, a batch, a skip, a schedule's value).
std::string calibrationKind(const std::string& slot);

// Which envelope a run uses, and why (stored with the run: replay_runs.environment).
struct EnvelopeChoice {
    double envelope = 0;
    std::string source;  // "default", "tolerance" (--tolerance envelope=X or exact), "calibrated"
    std::string note;    // in words: where the number comes from, or why the calibration was not used
    std::optional<LoadedCalibration> calibration;  // the one asked for, used or not
    bool calibrationUsed = false;
};
// `pair` is the run's (unset: the tape records no numerical environment); `crossEnvironment`
// whether the envelope applies at all; `envelope` and `given` the tolerance's (given: the
// auditor chose it).
EnvelopeChoice chooseEnvelope(const std::optional<LoadedCalibration>& calibration, const std::optional<EnvironmentPair>& pair,
                              bool crossEnvironment, double envelope, bool given);

}  // namespace zkdv
