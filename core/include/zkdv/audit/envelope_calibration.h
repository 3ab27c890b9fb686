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

// A run's envelope is the largest ratio the calibration observed times this factor
// (docs/replay.md, "Calibration": the order statistic and what the factor covers).
inline constexpr double kCalibrationSafetyFactor = 4.0;
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
    static constexpr int kVersion = 1;
    EnvironmentPair pair;
    std::vector<KindCalibration> kinds;  // by kind name
    std::uint64_t noiseExcluded = 0;     // left out: values a noise gradient reaches (docs/replay.md, "Noise gradients")
    std::uint64_t unbounded = 0;         // left out: a difference over a zero scale, which no envelope admits
    std::uint64_t unjudged = 0;          // differences no envelope judges (integers, NaN/Inf, dtype or shape)
    std::vector<CalibrationSource> sources;
    std::string createdAt;               // UTC, RFC 3339
    std::string zkdvVersion;

    std::uint64_t samples() const;  // the comparisons of every kind
    double maxRatio() const;        // the largest ratio of any kind
    // The envelope a run derives: max(kMinimumCalibratedEnvelope, maxRatio() × kCalibrationSafetyFactor).
    double envelope() const;
    // The level the largest of n honest samples bounds: a further one exceeds it with
    // probability 1/(n+1), so 1 − 1/(n+1).
    double quantileLevel() const;
    // Why it may not be used ("" when it may): too few samples.
    std::string refusal() const;

    std::string toJson() const;  // the file, indented
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

// Collects the comparisons of calibration replays (every bound zero, so every difference in
// the cross-environment regime is measured against the envelope's scale) by kind.
class CalibrationSampler {
public:
    void add(const TransactionOutcome& outcome);
    std::vector<KindCalibration> kinds() const;
    std::uint64_t noiseExcluded() const { return noiseExcluded_; }
    std::uint64_t unbounded() const { return unbounded_; }
    std::uint64_t unjudged() const { return unjudged_; }

private:
    struct Samples {
        std::vector<double> maxUlp, relativeL2, ratio;
    };
    std::map<std::string, Samples> samples_;
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
