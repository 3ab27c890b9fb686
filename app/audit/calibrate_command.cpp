#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "command_runner.h"
#include "replay_options.h"
#include "commands.h"
#include "zkdv/audit/envelope_calibration.h"
#include "zkdv/replay/replay_runner.h"
#include "zkdv/store/case_store.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/utc_time.h"
#include "zkdv/version.h"

namespace zkdv::cli {

namespace {

// Every bound zero, so that every difference across environments is measured against the
// envelope's scale; the default envelope only decides which gradients are rounding noise
// (their values are left out) and the verdicts stored with the calibration's runs.
Tolerance calibrationTolerance()
{
    Tolerance tolerance = Tolerance::parse("exact");
    tolerance.envelope = Tolerance::defaults().envelope;
    return tolerance;
}

// Writes `text` to `path` through a temporary file beside it, so that a reader never sees half.
void writeWhole(const std::string& path, const std::string& text)
{
    const std::string partial = path + ".partial";
    {
        std::ofstream out(partial, std::ios::binary | std::ios::trunc);
        out << text;
        out.flush();
        if (!out)
            throw IoError("cannot write " + partial);
    }
    if (std::rename(partial.c_str(), path.c_str()) != 0) {
        std::remove(partial.c_str());
        throw IoError("cannot rename " + partial + " to " + path);
    }
}

std::string quantileLine(const char* name, const SampleQuantiles& q)
{
    char text[160];
    std::snprintf(text, sizeof text, "%s p50 %.3g, p90 %.3g, p99 %.3g, max %.3g", name, q.p50, q.p90, q.p99, q.max);
    return text;
}

// Which calibration replay a comparison comes from, as the auditor named it.
struct ReplayedCase {
    std::string casePath;
    std::string tapePath;  // the calibration tape's file, as ingested
};

// Outliers named on stderr: this many, the largest first (--json lists up to kMaxOutliersListed).
constexpr std::size_t kOutliersPrinted = 20;
constexpr std::size_t kMaxOutliersListed = 1000;

nlohmann::json outlierJson(const CalibrationComparison& o, const std::vector<ReplayedCase>& cases, const std::vector<CalibrationSource>& sources)
{
    return {{"case", cases.at(o.source).casePath},
            {"tape", cases.at(o.source).tapePath},
            {"run", sources.at(o.source).runId},
            {"transaction", o.transaction},
            {"tensor", o.tensor},
            {"slot", o.slot},
            {"kind", calibrationKind(o.slot)},
            {"ratio", o.ratio}};
}

nlohmann::json calibrationSummaryJson(const EnvelopeCalibration& c, const std::string& out, bool written, const std::string& refusal,
                                      const std::vector<CalibrationComparison>& outliers, const std::vector<ReplayedCase>& cases)
{
    nlohmann::json document = nlohmann::json::parse(c.toJson());
    document.erase("sources");
    nlohmann::json listed = nlohmann::json::array();
    for (std::size_t i = 0; i < outliers.size() && i < kMaxOutliersListed; ++i)
        listed.push_back(outlierJson(outliers[i], cases, c.sources));
    return {{"json_version", 1},
            {"out", out},
            {"written", written},
            {"usable", refusal.empty()},
            {"refusal", refusal.empty() ? nlohmann::json() : nlohmann::json(refusal)},
            {"samples", c.samples()},
            {"max_ratio", c.maxRatio()},
            {"safety_factor", kCalibrationSafetyFactor},
            {"robust_ratio", document["robust_ratio"]},
            {"outlier_factor", kCalibrationOutlierFactor},
            {"ceiling", c.ceiling},
            {"fence", c.fence()},
            {"envelope", c.envelope()},
            {"quantile_level", c.quantileLevel()},
            {"outlier_count", outliers.size()},
            {"outliers", listed},
            {"excluded", document["excluded"]},
            {"kinds", document["kinds"]},
            {"runs", [&] {
                 nlohmann::json runs = nlohmann::json::array();
                 for (const CalibrationSource& s : c.sources)
                     runs.push_back({{"tape_chain_head", s.tapeChainHead}, {"run", s.runId}, {"transactions", s.transactions}});
                 return runs;
             }()}};
}

}  // namespace

int runCalibrate(int argc, char** argv)
{
    ArgumentParser parser(
        "zkdv-audit calibrate CASE... --out FILE [--select SPEC --seed S] [--device DEV] [--intra-op-threads N] [--kernels K] [--json]",
        "Measures the envelope of the cross-environment regime for one pair of numerical\n"
        "environments: replays honest tapes (cases the auditor trusts, recorded in the other\n"
        "environment) here with every bound zero, so that every difference is measured in units\n"
        "of the model's scale (u x S), and writes per kind of compared value the quantiles of\n"
        "max ULP, relative L2 and that ratio, keyed by the tapes' and this replay's environments.\n"
        "zkdv-audit replay --calibration FILE then judges a run between the same two environments\n"
        "by the least of " +
            std::to_string(int(kCalibrationSafetyFactor)) + " x the largest ratio, " + std::to_string(int(kCalibrationOutlierFactor)) +
            " x the robust ratio (the p99 of the nonzero\n"
            "ratios, never the largest) and the default envelope, the ceiling (docs/replay.md,\n"
            "\"Calibration\"). Each case keeps its calibration replay as a run. A comparison above\n"
            "the fence (" + std::to_string(int(kCalibrationOutlierFactor)) +
            " x the robust ratio, at most the ceiling) is an outlier: each is named\n"
            "and nothing is written.\n"
            "Exit 0 when the calibration is usable; 1 when it holds an outlier (nothing written) or\n"
            "fewer than " + std::to_string(kMinimumCalibrationSamples) + " comparisons (written all the same); " +
            "2 on usage errors, unreadable cases,\n"
            "cases of different pairs or a replay in the recording's environment.");
    parser.setPositionals("CASE", "audit cases of honest tapes (*.zkaudit), all recorded in one environment", 1, true);
    parser.addOption("out", "FILE", "the calibration file to write (required; refuses to replace one without --overwrite)");
    parser.addOption("select", "SPEC", "which transactions of each tape to replay (default all)");
    parser.addOption("seed", "S", "seed of random and stratified selections (default: drawn)");
    parser.addOption("device", "DEV", "cpu (default) or cuda:N: the replay side of the pair");
    parser.addOption("intra-op-threads", "N", "libtorch threads per replay worker (default: the tape's recorded count on the CPU)");
    parser.addOption("threads", "N", "segments replayed at once on the CPU (default: one per core)");
    parser.addOption("kernels", "K", "recorded (default) or host, as for zkdv-audit replay");
    parser.addFlag("overwrite", "replace FILE if it exists");
    parser.addFlag("json", "print JSON on stdout");
    parser.addFlag("quiet", "no progress on stderr");
    return runCommand("calibrate", parser, argc, argv, [&]() {
        if (!parser.has("out"))
            throw UsageError("--out FILE is required: where the calibration is written");
        const std::string out = parser.value("out");
        if (!parser.has("overwrite") && access(out.c_str(), F_OK) == 0)
            throw UsageError(out + " exists; use --overwrite to replace it");
        ReplayRequest request;
        try {
            request.selection = SelectionSpec::parse(parser.value("select", "all"));
        } catch (const Error& error) {
            throw UsageError(error.what());
        }
        readReplayWorkerOptions(parser, request);
        request.tolerance = calibrationTolerance();
        for (const std::string& casePath : parser.positionals())
            if (access(casePath.c_str(), F_OK) != 0)
                throw UsageError("case " + casePath + " does not exist; ingest the honest tape into it first");

        CalibrationSampler sampler;
        request.onOutcome = [&sampler](const TransactionOutcome& outcome) { sampler.add(outcome); };
        EnvelopeCalibration calibration;
        std::vector<ReplayedCase> replayed;  // parallel to calibration.sources
        std::optional<EnvironmentPair> pair;
        for (const std::string& casePath : parser.positionals()) {
            sampler.setSource(calibration.sources.size());
            CaseStore store(casePath, CaseStore::Access::ReadWrite);
            const ReplaySummary summary = runReplayInTerminal(store, request, parser.has("quiet"), casePath);
            if (summary.status != RunStatus::Finished)
                throw UsageError(casePath + ": the calibration replay (run " + std::to_string(summary.runId) + ") did not finish (" +
                                 std::string(runStatusName(summary.status)) + ")");
            if (!summary.environmentPair)
                throw UsageError(casePath + ": the tape records no numerical environment (root numerics, format 1.5): no pair to calibrate");
            if (summary.regime != "cross-environment")
                throw UsageError(casePath + ": this replay runs in the tape's own numerical environment (same-environment), where no envelope "
                                            "applies: calibrate in the other environment (another machine, --device, --intra-op-threads, --kernels host)");
            if (pair) {
                if (const std::string differ = pair->describeDifferences(*summary.environmentPair); !differ.empty())
                    throw UsageError(casePath + ": its pair of environments is not the first case's (" + differ +
                                     "); a calibration is for one pair: calibrate each separately");
            } else {
                pair = summary.environmentPair;
            }
            std::string chainHead, tapePath;
            for (const CaseTape& tape : store.tapes())
                if (tape.id == summary.tapeId) {
                    chainHead = tape.chainHead;
                    tapePath = tape.path;
                }
            calibration.sources.push_back({chainHead, summary.runId, summary.replayed});
            replayed.push_back({casePath, tapePath});
            if (!parser.has("json"))
                std::fprintf(stderr, "zkdv-audit calibrate: %s: run %lld, %llu transactions replayed (%llu exact, %llu within, %llu diverged, %llu unverifiable)\n",
                             casePath.c_str(), static_cast<long long>(summary.runId), static_cast<unsigned long long>(summary.replayed),
                             static_cast<unsigned long long>(summary.exact), static_cast<unsigned long long>(summary.withinTolerance),
                             static_cast<unsigned long long>(summary.diverged), static_cast<unsigned long long>(summary.unverifiable));
        }
        calibration.pair = *pair;
        calibration.kinds = sampler.kinds();
        calibration.noiseExcluded = sampler.noiseExcluded();
        calibration.unbounded = sampler.unbounded();
        calibration.unjudged = sampler.unjudged();
        calibration.robust = sampler.robustRatio();
        calibration.ceiling = Tolerance::defaults().envelope;
        calibration.createdAt = utcNow();
        calibration.zkdvVersion = kVersion;
        // Issue 48, item 3: the calibration tapes are the trainer's. A comparison far above the
        // bulk of the others, or beyond what the tolerance calls rounding, is no honest
        // rounding: it is named, and a calibration holding it is not written (no override).
        const std::vector<CalibrationComparison> outliers = sampler.beyond(calibration.fence());
        std::string refusal;
        if (!outliers.empty()) {
            char text[400];
            std::snprintf(text, sizeof text,
                          "%zu comparison(s) lie beyond the fence %g (the least of %g x the robust ratio %g and the ceiling %g), the largest "
                          "%.4g: the calibration tapes are not consistent with honest rounding; nothing was written",
                          outliers.size(), calibration.fence(), kCalibrationOutlierFactor, calibration.robust.value, calibration.ceiling,
                          outliers.front().ratio);
            refusal = text;
        } else {
            writeWhole(out, calibration.toJson());
            refusal = calibration.refusal();
        }
        const bool written = outliers.empty();

        if (!outliers.empty()) {
            std::fprintf(stderr, "zkdv-audit calibrate: check failed: %s\n", refusal.c_str());
            for (std::size_t i = 0; i < outliers.size() && i < kOutliersPrinted; ++i) {
                const CalibrationComparison& o = outliers[i];
                std::fprintf(stderr, "  outlier: %s (tape %s), transaction %llu, %s %s: ratio %.4g\n", replayed.at(o.source).casePath.c_str(),
                             replayed.at(o.source).tapePath.c_str(), static_cast<unsigned long long>(o.transaction), o.tensor.c_str(),
                             o.slot.c_str(), o.ratio);
            }
            if (outliers.size() > kOutliersPrinted)
                std::fprintf(stderr, "  … and %zu more (--json lists up to %zu)\n", outliers.size() - kOutliersPrinted, kMaxOutliersListed);
        }
        if (parser.has("json")) {
            std::printf("%s\n", toJsonText(calibrationSummaryJson(calibration, out, written, refusal, outliers, replayed), 2).c_str());
        } else {
            std::printf("calibration %s: %llu honest comparisons between the recorded environment and this replay's (%s)\n", out.c_str(),
                        static_cast<unsigned long long>(calibration.samples()),
                        pair->recorded.describeDifferences(pair->replay).c_str());
            for (const KindCalibration& k : calibration.kinds)
                std::printf("  %-16s %6llu  %s; %s; %s\n", k.kind.c_str(), static_cast<unsigned long long>(k.ratio.count),
                            quantileLine("ratio", k.ratio).c_str(), quantileLine("max ULP", k.maxUlp).c_str(),
                            quantileLine("relative L2", k.relativeL2).c_str());
            std::printf("  left out: %llu values a noise gradient reaches, %llu over a zero scale, %llu no envelope judges\n",
                        static_cast<unsigned long long>(calibration.noiseExcluded), static_cast<unsigned long long>(calibration.unbounded),
                        static_cast<unsigned long long>(calibration.unjudged));
            std::printf("  robust ratio %g (the p99 of %llu nonzero ratios, never the largest); fence %g; ceiling %g\n", calibration.robust.value,
                        static_cast<unsigned long long>(calibration.robust.nonzero), calibration.fence(), calibration.ceiling);
            if (refusal.empty())
                std::printf("  envelope for this pair: %g (the least of largest ratio %g x %g, robust ratio %g x %g and the ceiling %g; "
                            "the largest of %llu bounds their %.4g quantile)\n",
                            calibration.envelope(), calibration.maxRatio(), kCalibrationSafetyFactor, calibration.robust.value,
                            kCalibrationOutlierFactor, calibration.ceiling, static_cast<unsigned long long>(calibration.samples()),
                            calibration.quantileLevel());
            else
                std::printf("  not usable: %s\n", refusal.c_str());
        }
        // Measured is not the same as small: say when the pair rounds up to what the default admits.
        if (refusal.empty() && calibration.envelope() >= calibration.ceiling)
            std::fprintf(stderr, "zkdv-audit calibrate: warning: the envelope for this pair is at its ceiling %g, the default: across these "
                                 "environments a calibration narrows nothing, and an alteration smaller than %g u x the model's scale "
                                 "(%.3g of it for F32) cannot be told from rounding; replay in the recording environment where it matters\n",
                         calibration.ceiling, calibration.ceiling, calibration.ceiling * 0x1.0p-24);
        if (calibration.unjudged > 0)
            std::fprintf(stderr, "zkdv-audit calibrate: warning: %llu comparisons differ in ways no envelope judges (integers, NaN/Inf, dtype or shape); "
                                 "an honest tape should have none: are these tapes honest?\n",
                         static_cast<unsigned long long>(calibration.unjudged));
        return refusal.empty() ? kExitOk : kExitCheckFailed;
    });
}

}  // namespace zkdv::cli
