// The determinism profile (tape format 1.13, section 3.5): its JSON form, what a reader refuses,
// the profile a replay runs with, and the regime it decides together with the numerical
// environment (docs/replay.md, "Determinism profile").

#include <QtTest/QtTest>

#include <nlohmann/json.hpp>

#include "small_root.h"
#include "zkdv/audit/numeric_regime.h"
#include "zkdv/tape/determinism_profile.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/error.h"

using namespace zkdv;

namespace {

// A deterministic CUDA training as the recorder leaves it (its default on CUDA).
DeterminismProfile h200()
{
    DeterminismProfile p;
    p.deviceKind = "cuda";
    p.deviceName = "NVIDIA H200";
    p.cudaVersion = "13.0";
    p.cudnnVersion = "91000";
    p.deterministicAlgorithms = "warn-only";
    p.cudnnDeterministic = true;
    p.cudnnAllowTf32 = false;
    p.matmulBf16Reduction = "allow";
    p.matmulAllowFp16Accumulation = false;
    p.cublasWorkspaceConfig = ":4096:8";
    p.sdpaBackends = {{"flash", true}, {"mem_efficient", true}, {"math", true}, {"cudnn", true}};
    p.optimizerForeach = false;
    p.optimizerFused = false;
    p.intraOpThreads = 4;
    p.setByRecorder = true;
    return p;
}

NumericEnvironment host()
{
    NumericEnvironment n;
    n.cpuVendor = "AuthenticAMD";
    n.cpuModel = "AMD EPYC";
    n.cpuFlags = {"avx", "avx2"};
    n.torchCpuCapability = "AVX2";
    n.intraOpThreads = 1;
    return n;
}

RootRecord rootOn(const std::string& device, std::optional<DeterminismProfile> determinism)
{
    RootRecord root;
    root.device = device;
    root.torchVersion = "1.13.0";
    root.numerics = host();
    root.determinism = std::move(determinism);
    return root;
}

// What the worker on `device` of a machine like the training's would run the tape with.
ReplayEnvironment replayOf(const RootRecord& root, const std::string& device, const DeterminismProfile& base)
{
    return {host(), replayDeterminism(root.determinism, base, device, device == "cpu" ? "AMD EPYC" : "NVIDIA H200"), root.torchVersion};
}

// The worker's own profile before a job: libtorch's defaults, with the replay's determinism.
DeterminismProfile workerBase()
{
    DeterminismProfile base = h200();
    base.deterministicAlgorithms = "warn-only";
    base.cudnnAllowTf32 = true;  // torch's default, which the job's profile overrides
    base.optimizerForeach = base.optimizerFused = std::nullopt;
    base.setByRecorder = false;
    return base;
}

}  // namespace

class TestDeterminismProfile : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void roundTripsThroughJson();
    void rootReadsItFrom1_13Only();
    void hostileProfilesAreRefused_data();
    void hostileProfilesAreRefused();
    void replayRunsTheRecordedSwitches();
    void regimeFollowsDevicesAndProfiles();
};

void TestDeterminismProfile::roundTripsThroughJson()
{
    const DeterminismProfile p = h200();
    const DeterminismProfile back = DeterminismProfile::parse(p.toJson(), "test");
    QCOMPARE(back.toJson(), p.toJson());
    QCOMPARE(back.members(), p.members());
    QCOMPARE(back.deviceName, std::string("NVIDIA H200"));
    QCOMPARE(back.sdpaBackends.size(), std::size_t(4));
    QVERIFY(back.optimizerForeach && !*back.optimizerForeach);
    // Switches a torch lacks are null and stay absent.
    DeterminismProfile old = p;
    old.matmulBf16Reduction.reset();
    old.matmulAllowFp16Accumulation.reset();
    old.optimizerFused.reset();
    const DeterminismProfile oldBack = DeterminismProfile::parse(old.toJson(), "test");
    QVERIFY(!oldBack.matmulBf16Reduction && !oldBack.matmulAllowFp16Accumulation && !oldBack.optimizerFused);
    QCOMPARE(oldBack.members().at("matmul.bf16_reduction"), std::string("null"));
    // The summary names what an auditor looks for.
    const std::string words = p.summary();
    QVERIFY2(words.find("NVIDIA H200") != std::string::npos && words.find("deterministic algorithms warn-only") != std::string::npos &&
                 words.find(":4096:8") != std::string::npos,
             words.c_str());
}

void TestDeterminismProfile::rootReadsItFrom1_13Only()
{
    RootRecord root = test::oneParameterRoot();
    root.determinism = h200();
    root.device = "cuda:0";
    const std::string text = root.toJson();
    const RootRecord read = RootRecord::parse(ByteSpan(std::string_view(text)));
    QVERIFY(read.determinism);
    QCOMPARE(read.determinism->toJson(), h200().toJson());
    // Before 1.13 the member is an unknown one, which readers ignore (even a malformed one).
    nlohmann::json older = nlohmann::json::parse(text);
    older["format"]["minor"] = tape::kDeterminismMinor - 1;
    older["determinism"] = "not a profile";
    const std::string olderText = older.dump();
    QVERIFY(!RootRecord::parse(ByteSpan(std::string_view(olderText))).determinism);
    // From 1.13 on a malformed one is refused, naming it.
    nlohmann::json bad = nlohmann::json::parse(text);
    bad["determinism"]["cudnn"]["benchmark"] = "no";
    const std::string badText = bad.dump();
    try {
        RootRecord::parse(ByteSpan(std::string_view(badText)));
        QFAIL("a malformed determinism profile was read");
    } catch (const FormatError& error) {
        QVERIFY2(std::string(error.what()).find("determinism.cudnn.benchmark") != std::string::npos, error.what());
    }
}

void TestDeterminismProfile::hostileProfilesAreRefused_data()
{
    QTest::addColumn<QString>("member");  // a JSON pointer into the profile
    QTest::addColumn<QString>("value");   // its replacement, as JSON ("" removes it)
    QTest::addColumn<QString>("named");   // what the message names
    QTest::newRow("unknown device kind") << "/device/kind" << R"("tpu")" << "device.kind";
    QTest::newRow("missing device") << "/device" << "" << "no member device";
    QTest::newRow("long device name") << "/device/name" << ("\"" + QString(300, 'x') + "\"") << "device.name";
    QTest::newRow("algorithms as a bool") << "/deterministic_algorithms" << "true" << "deterministic_algorithms";
    QTest::newRow("unknown algorithms mode") << "/deterministic_algorithms" << R"("sometimes")" << "deterministic_algorithms";
    QTest::newRow("unknown precision") << "/matmul/float32_precision" << R"("low")" << "float32_precision";
    QTest::newRow("unknown reduction") << "/matmul/fp16_reduction" << R"("maybe")" << "fp16_reduction";
    QTest::newRow("backend as a number") << "/sdpa/flash" << "1" << "sdpa.flash";
    QTest::newRow("foreach as a string") << "/optimizer/foreach" << R"("yes")" << "optimizer.foreach";
    QTest::newRow("no threads") << "/intra_op_threads" << "0" << "intra_op_threads";
    QTest::newRow("huge threads") << "/intra_op_threads" << "1e300" << "intra_op_threads";
    QTest::newRow("cudnn as a string") << "/cudnn" << R"("on")" << "cudnn";
    QTest::newRow("no recorder flag") << "/set_by_recorder" << "" << "set_by_recorder";
}

void TestDeterminismProfile::hostileProfilesAreRefused()
{
    QFETCH(QString, member);
    QFETCH(QString, value);
    QFETCH(QString, named);
    nlohmann::json profile = nlohmann::json::parse(h200().toJson());
    const nlohmann::json::json_pointer at(member.toStdString());
    if (value.isEmpty())
        profile[at.parent_pointer()].erase(at.back());
    else
        profile[at] = nlohmann::json::parse(value.toStdString());
    try {
        DeterminismProfile::parse(profile.dump(), "root record: determinism");
        QFAIL("a hostile profile was read");
    } catch (const FormatError& error) {
        const std::string message = error.what();
        QVERIFY2(message.rfind("root record: determinism", 0) == 0 && message.find(named.toStdString()) != std::string::npos, error.what());
    }
}

void TestDeterminismProfile::replayRunsTheRecordedSwitches()
{
    DeterminismProfile recorded = h200();
    recorded.matmulAllowTf32 = true;  // the trainer chose TF32: the replay must round alike
    recorded.float32MatmulPrecision = "high";
    recorded.sdpaBackends["flash"] = false;
    recorded.cudnnBenchmark = true;
    recorded.cudnnDeterministic = false;
    recorded.deterministicAlgorithms = "off";
    recorded.cublasWorkspaceConfig = ":16:8";
    recorded.optimizerForeach = true;
    const DeterminismProfile replay = replayDeterminism(recorded, workerBase(), "cuda:1", "NVIDIA H100");
    QCOMPARE(replay.deviceKind, std::string("cuda"));
    QCOMPARE(replay.deviceName, std::string("NVIDIA H100"));
    QVERIFY(replay.matmulAllowTf32);
    QCOMPARE(replay.float32MatmulPrecision, std::string("high"));
    QCOMPARE(replay.cudnnAllowTf32, false);
    QCOMPARE(replay.sdpaBackends.at("flash"), false);
    QCOMPARE(replay.cublasWorkspaceConfig, std::string(":16:8"));
    // The replay reproduces itself, whatever the trainer allowed.
    QCOMPARE(replay.deterministicAlgorithms, std::string("warn-only"));
    QVERIFY(replay.cudnnDeterministic && !replay.cudnnBenchmark);
    // It runs the single-tensor rule, which the regime must hear about.
    QVERIFY(replay.optimizerForeach && !*replay.optimizerForeach);
    QVERIFY(!replay.setByRecorder);
    // A strict trainer gets a strict replay; a tape before 1.13 gets the replay's own determinism.
    recorded.deterministicAlgorithms = "on";
    QCOMPARE(replayDeterminism(recorded, workerBase(), "cuda:0", "").deterministicAlgorithms, std::string("on"));
    const DeterminismProfile unrecorded = replayDeterminism(std::nullopt, workerBase(), "cpu", "AMD EPYC");
    QCOMPARE(unrecorded.deviceKind, std::string("cpu"));
    QCOMPARE(unrecorded.cudnnAllowTf32, workerBase().cudnnAllowTf32);
    QCOMPARE(unrecorded.cublasWorkspaceConfig, std::string(":4096:8"));
    // A switch the replay's torch lacks stays absent: a difference, never silently equal.
    DeterminismProfile older = workerBase();
    older.matmulBf16Reduction.reset();
    QVERIFY(!replayDeterminism(h200(), older, "cuda:0", "NVIDIA H200").matmulBf16Reduction);
}

void TestDeterminismProfile::regimeFollowsDevicesAndProfiles()
{
    // A deterministic CUDA tape replayed on the same kind of GPU: the strict regime.
    const RootRecord cuda = rootOn("cuda:0", h200());
    const RegimeChoice same = chooseRegime(cuda, replayOf(cuda, "cuda:0", workerBase()));
    QVERIFY2(same.regime == NumericRegime::SameEnvironment, same.reason.c_str());
    // Replayed on the CPU: cross-environment, naming the devices.
    const RegimeChoice onCpu = chooseRegime(cuda, replayOf(cuda, "cpu", workerBase()));
    QCOMPARE(onCpu.regime, NumericRegime::CrossEnvironment);
    QVERIFY2(onCpu.reason.find("the training ran on cuda:0, the replay on cpu") != std::string::npos, onCpu.reason.c_str());
    // On another GPU model: cross-environment, naming it.
    ReplayEnvironment h100 = replayOf(cuda, "cuda:0", workerBase());
    h100.determinism.deviceName = "NVIDIA H100";
    const RegimeChoice otherGpu = chooseRegime(cuda, h100);
    QCOMPARE(otherGpu.regime, NumericRegime::CrossEnvironment);
    QVERIFY2(otherGpu.reason.find("device.name \"NVIDIA H200\" -> \"NVIDIA H100\"") != std::string::npos, otherGpu.reason.c_str());
    // A replay whose torch cannot hold a recorded switch: cross-environment, naming it.
    DeterminismProfile noBf16 = workerBase();
    noBf16.matmulBf16Reduction.reset();
    const RegimeChoice lacking = chooseRegime(cuda, replayOf(cuda, "cuda:0", noBf16));
    QVERIFY2(lacking.reason.find("matmul.bf16_reduction \"allow\" -> null") != std::string::npos, lacking.reason.c_str());
    // A training that allowed nondeterministic kernels did not reproduce its own bits.
    DeterminismProfile loose = h200();
    loose.deterministicAlgorithms = "off";
    loose.cudnnBenchmark = true;
    const RootRecord looseRoot = rootOn("cuda:0", loose);
    const RegimeChoice nondeterministic = chooseRegime(looseRoot, replayOf(looseRoot, "cuda:0", workerBase()));
    QCOMPARE(nondeterministic.regime, NumericRegime::CrossEnvironment);
    QVERIFY2(nondeterministic.reason.find("nondeterministic algorithms were allowed") != std::string::npos &&
                 nondeterministic.reason.find("cuDNN benchmarked") != std::string::npos,
             nondeterministic.reason.c_str());
    // A foreach optimizer on CUDA rounds unlike the replay's single-tensor rule.
    DeterminismProfile foreach = h200();
    foreach.optimizerForeach = true;
    const RootRecord foreachRoot = rootOn("cuda:0", foreach);
    const RegimeChoice byForeach = chooseRegime(foreachRoot, replayOf(foreachRoot, "cuda:0", workerBase()));
    QVERIFY2(byForeach.reason.find("optimizer.foreach true -> false") != std::string::npos, byForeach.reason.c_str());
    // A CUDA tape without a profile (before 1.13): nothing says how its numbers were made.
    const RootRecord unrecorded = rootOn("cuda:0", std::nullopt);
    const RegimeChoice unknown = chooseRegime(unrecorded, replayOf(unrecorded, "cuda:0", workerBase()));
    QCOMPARE(unknown.regime, NumericRegime::CrossEnvironment);
    QVERIFY2(unknown.reason.find("root member determinism") != std::string::npos, unknown.reason.c_str());
    // A CPU tape on the CPU: the CUDA switches decide nothing, the matmul precision does.
    DeterminismProfile cpu = workerBase();
    cpu.deviceKind = "cpu";
    cpu.deviceName = "AMD EPYC";
    cpu.cudaVersion = "";
    const RootRecord cpuRoot = rootOn("cpu", cpu);
    DeterminismProfile otherSwitches = workerBase();
    otherSwitches.cudnnAllowTf32 = false;
    otherSwitches.cublasWorkspaceConfig = "";
    const RegimeChoice cpuSame = chooseRegime(cpuRoot, replayOf(cpuRoot, "cpu", otherSwitches));
    QVERIFY2(cpuSame.regime == NumericRegime::SameEnvironment, cpuSame.reason.c_str());
    ReplayEnvironment medium = replayOf(cpuRoot, "cpu", workerBase());
    medium.determinism.float32MatmulPrecision = "medium";
    QVERIFY(chooseRegime(cpuRoot, medium).reason.find("matmul.float32_precision") != std::string::npos);
    // And a CPU tape without a profile stays judged by its numerical environment alone.
    const RootRecord plainCpu = rootOn("cpu", std::nullopt);
    QCOMPARE(chooseRegime(plainCpu, replayOf(plainCpu, "cpu", workerBase())).regime, NumericRegime::SameEnvironment);
    // Issue 48, item 9: the torch release is the trainer's claim. Another release, one no
    // release reads from, or none at all may move the replay into the cross-environment regime
    // (where only the envelope excuses a difference), and nothing further: the verdict is the
    // executor's, never a blanket "unverifiable across releases"
    // (test_replay claimedReleaseBuysNoExcuse).
    for (const std::string claim : {"2.11.0", "banana", "", "1", "1.13.0"}) {
        RootRecord claimed = plainCpu;
        claimed.torchVersion = claim;
        ReplayEnvironment replay = replayOf(plainCpu, "cpu", workerBase());
        replay.libtorchVersion = "1.13.1";
        const RegimeChoice choice = chooseRegime(claimed, replay);
        if (claim == "1.13.0") {
            QVERIFY2(choice.regime == NumericRegime::SameEnvironment, choice.reason.c_str());  // a patch release rounds alike
            continue;
        }
        QCOMPARE(choice.regime, NumericRegime::CrossEnvironment);
        QVERIFY2(choice.reason.find("the tape names torch \"" + claim + "\" and the replay runs libtorch 1.13.1") != std::string::npos,
                 choice.reason.c_str());
    }
}

QTEST_GUILESS_MAIN(TestDeterminismProfile)
#include "test_determinism_profile.moc"
