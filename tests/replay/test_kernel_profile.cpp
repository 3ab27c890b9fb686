// Tests for the replay workers' kernel profile (core/include/zkdv/replay/kernel_profile.h):
// which kernel-choosing variables the workers get from the tape's recorded numerical
// environment, on the training's CPU and on another one, and what the auditor's shell keeps.
#include <QtTest>

#include <algorithm>
#include <string>
#include <vector>

#include "zkdv/replay/kernel_profile.h"

using namespace zkdv;

namespace {

NumericEnvironment trainingCpu()
{
    NumericEnvironment e;
    e.cpuVendor = "GenuineIntel";
    e.cpuModel = "Intel(R) Xeon(R) Gold 6338";
    e.cpuFlags = {"avx", "avx2", "avx512bw", "avx512dq", "avx512f", "avx512vl", "avx512_vnni", "fma", "sse4_2"};
    std::sort(e.cpuFlags.begin(), e.cpuFlags.end());
    e.torchCpuCapability = "AVX512";
    e.blas = "mkl";
    e.mkl = "Intel(R) oneAPI Math Kernel Library Version 2024.2";
    e.onednn = "Intel(R) MKL-DNN v3.5.3";
    e.intraOpThreads = 4;
    return e;
}

NumericEnvironment cpuOf(const NumericEnvironment& e)
{
    NumericEnvironment host;
    host.cpuVendor = e.cpuVendor;
    host.cpuModel = e.cpuModel;
    host.cpuFlags = e.cpuFlags;
    return host;
}

bool has(const std::vector<std::string>& list, const std::string& entry) { return std::find(list.begin(), list.end(), entry) != list.end(); }

std::vector<std::string> apply(const KernelProfile& profile, std::vector<const char*> base)
{
    base.push_back(nullptr);
    return profile.environment(base.data());
}

}  // namespace

class TestKernelProfile : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void sameCpuRunsTheTrainingsSettings();
    void anotherCpuIsCappedAtTheTrainingsLevel();
    void trainersOwnSettingsAreNeverOverridden();
    void noLevelAboveThisCpusIsForced();
    void hostileSettingValuesStayOut();
    void hostChoiceAndOldTapesLeaveTheEnvironment();
    void onednnLevels_data();
    void onednnLevels();
    void atenLevels();
    void profilesWithOtherSettingsHaveOtherKeys();
};

void TestKernelProfile::sameCpuRunsTheTrainingsSettings()
{
    NumericEnvironment recorded = trainingCpu();
    recorded.settings = {{"MKL_CBWR", "AVX2"}, {"OMP_NUM_THREADS", "4"}};
    const KernelProfile profile = kernelProfileFor(KernelChoice::Recorded, recorded, cpuOf(recorded));
    QCOMPARE(profile.choice, KernelChoice::Recorded);
    QVERIFY(profile.pinned.empty());
    // Thread counts are the run's to choose (--intra-op-threads): not copied.
    QCOMPARE(profile.variables, (std::map<std::string, std::string>{{"MKL_CBWR", "AVX2"}}));
    // The auditor's kernel settings go, the training's come, the rest of the shell stays.
    const std::vector<std::string> env = apply(profile, {"PATH=/usr/bin", "ATEN_CPU_CAPABILITY=default", "MKL_CBWR=COMPATIBLE",
                                                         "ONEDNN_MAX_CPU_ISA=SSE41", "OMP_NUM_THREADS=2", "HOME=/home/a"});
    QVERIFY(has(env, "PATH=/usr/bin") && has(env, "HOME=/home/a") && has(env, "OMP_NUM_THREADS=2"));
    QVERIFY(has(env, "MKL_CBWR=AVX2"));
    QVERIFY(!has(env, "MKL_CBWR=COMPATIBLE"));
    for (const std::string& entry : env)
        QVERIFY2(entry.rfind("ATEN_CPU_CAPABILITY=", 0) != 0 && entry.rfind("ONEDNN_MAX_CPU_ISA=", 0) != 0, entry.c_str());
    QCOMPARE(profile.describeVariables(), std::string("MKL_CBWR=AVX2"));
}

void TestKernelProfile::anotherCpuIsCappedAtTheTrainingsLevel()
{
    // Trained on an AVX2 machine, replayed on an AVX-512 one: torch and oneDNN are capped at
    // AVX2, so they run the training's kernels rather than this CPU's wider ones.
    NumericEnvironment recorded = trainingCpu();
    recorded.cpuVendor = "AuthenticAMD";
    recorded.cpuModel = "AMD EPYC 7B13";
    recorded.cpuFlags = {"avx", "avx2", "f16c", "fma", "sse4_2"};
    recorded.torchCpuCapability = "AVX2";
    const NumericEnvironment host = cpuOf(trainingCpu());
    const KernelProfile profile = kernelProfileFor(KernelChoice::Recorded, recorded, host);
    const std::map<std::string, std::string> expected{{"ATEN_CPU_CAPABILITY", "avx2"}, {"ONEDNN_MAX_CPU_ISA", "AVX2"}};
    QCOMPARE(profile.pinned, expected);
    QCOMPARE(profile.variables, expected);
    QVERIFY2(profile.note.find("capped at the training CPU's vector level") != std::string::npos, profile.note.c_str());
    const std::vector<std::string> env = apply(profile, {"ATEN_CPU_CAPABILITY=avx512"});
    QVERIFY(has(env, "ATEN_CPU_CAPABILITY=avx2") && has(env, "ONEDNN_MAX_CPU_ISA=AVX2") && !has(env, "ATEN_CPU_CAPABILITY=avx512"));
    // A torch without oneDNN gets no oneDNN cap.
    recorded.onednn.clear();
    QCOMPARE(kernelProfileFor(KernelChoice::Recorded, recorded, host).pinned,
             (std::map<std::string, std::string>{{"ATEN_CPU_CAPABILITY", "avx2"}}));
    // Trained without AVX2 at all: the baseline kernels.
    recorded.cpuFlags = {"sse4_2"};
    recorded.torchCpuCapability = "DEFAULT";
    recorded.onednn = "oneDNN v2.6.0";
    QCOMPARE(kernelProfileFor(KernelChoice::Recorded, recorded, host).pinned,
             (std::map<std::string, std::string>{{"ATEN_CPU_CAPABILITY", "default"}, {"ONEDNN_MAX_CPU_ISA", "SSE41"}}));
}

void TestKernelProfile::trainersOwnSettingsAreNeverOverridden()
{
    NumericEnvironment recorded = trainingCpu();
    recorded.settings = {{"ATEN_CPU_CAPABILITY", "default"}, {"DNNL_MAX_CPU_ISA", "AVX"}};
    NumericEnvironment host = cpuOf(recorded);
    host.cpuModel = "another";
    host.cpuFlags = {"avx", "avx2", "sse4_2"};
    const KernelProfile profile = kernelProfileFor(KernelChoice::Recorded, recorded, host);
    QVERIFY(profile.pinned.empty());
    QCOMPARE(profile.variables,
             (std::map<std::string, std::string>{{"ATEN_CPU_CAPABILITY", "default"}, {"DNNL_MAX_CPU_ISA", "AVX"}}));
}

void TestKernelProfile::noLevelAboveThisCpusIsForced()
{
    // torch runs the ATEN_CPU_CAPABILITY it is given without asking the CPU: trained with
    // AVX-512, replayed on an AVX2 CPU, a cap at the training's level would kill every worker
    // with SIGILL (seen on a CI machine with a golden tape recorded on an AVX-512 one).
    const NumericEnvironment recorded = trainingCpu();
    NumericEnvironment host;
    host.cpuVendor = "AuthenticAMD";
    host.cpuModel = "AMD EPYC 7B13";
    host.cpuFlags = {"avx", "avx2", "f16c", "fma", "sse4_2"};
    KernelProfile profile = kernelProfileFor(KernelChoice::Recorded, recorded, host);
    // oneDNN's variable is a ceiling it keeps within the CPU by itself: the training's level.
    QCOMPARE(profile.pinned, (std::map<std::string, std::string>{{"ATEN_CPU_CAPABILITY", "avx2"}, {"ONEDNN_MAX_CPU_ISA", "AVX512_CORE_VNNI"}}));
    QVERIFY2(profile.note.find("ATEN_CPU_CAPABILITY lowered from avx512 to avx2") != std::string::npos, profile.note.c_str());
    // The trainer's own setting is lowered the same way, and only when this CPU lacks it.
    NumericEnvironment set = recorded;
    set.settings = {{"ATEN_CPU_CAPABILITY", "avx512"}, {"MKL_CBWR", "AVX512"}};
    profile = kernelProfileFor(KernelChoice::Recorded, set, host);
    QCOMPARE(profile.variables.at("ATEN_CPU_CAPABILITY"), std::string("avx2"));
    QCOMPARE(profile.variables.at("MKL_CBWR"), std::string("AVX512"));  // MKL falls back by itself
    QVERIFY(profile.pinned.count("ATEN_CPU_CAPABILITY") == 0);
    QCOMPARE(kernelProfileFor(KernelChoice::Recorded, set, cpuOf(recorded)).variables.at("ATEN_CPU_CAPABILITY"), std::string("avx512"));
    // Without FMA torch runs neither wide level; a CPU reporting no x86 flags is left alone.
    host.cpuFlags = {"avx", "avx2", "sse4_2"};
    QCOMPARE(kernelProfileFor(KernelChoice::Recorded, set, host).variables.at("ATEN_CPU_CAPABILITY"), std::string("default"));
    host.cpuFlags.clear();
    QCOMPARE(kernelProfileFor(KernelChoice::Recorded, set, host).variables.at("ATEN_CPU_CAPABILITY"), std::string("avx512"));
    QCOMPARE(atenCapabilityFor(recorded.cpuFlags), std::string("avx512"));
    QCOMPARE(atenCapabilityFor({"avx", "avx2", "fma"}), std::string("avx2"));
    QCOMPARE(atenCapabilityFor({"sse4_2"}), std::string("default"));
}

void TestKernelProfile::hostileSettingValuesStayOut()
{
    // The tape is untrusted: only the known variables, only values spelled as libraries spell
    // them, reach the workers' environment; the rest differ, which the regime reports.
    NumericEnvironment recorded = trainingCpu();
    recorded.settings = {{"LD_PRELOAD", "/tmp/evil.so"},
                         {"MKL_CBWR", "AVX2\nLD_PRELOAD=/tmp/evil.so"},
                         {"ONEDNN_MAX_CPU_ISA", std::string(65, 'A')},
                         {"ATEN_CPU_CAPABILITY", "avx2"}};
    const KernelProfile profile = kernelProfileFor(KernelChoice::Recorded, recorded, cpuOf(recorded));
    QCOMPARE(profile.variables, (std::map<std::string, std::string>{{"ATEN_CPU_CAPABILITY", "avx2"}}));
    QVERIFY2(profile.note.find("not MKL_CBWR, ONEDNN_MAX_CPU_ISA") != std::string::npos, profile.note.c_str());
    const std::vector<std::string> env = apply(profile, {"PATH=/bin"});
    QCOMPARE(env, (std::vector<std::string>{"PATH=/bin", "ATEN_CPU_CAPABILITY=avx2"}));
}

void TestKernelProfile::hostChoiceAndOldTapesLeaveTheEnvironment()
{
    const std::vector<const char*> shell{"ATEN_CPU_CAPABILITY=default", "PATH=/bin"};
    const KernelProfile host = kernelProfileFor(KernelChoice::Host, trainingCpu(), NumericEnvironment());
    QCOMPARE(host.choice, KernelChoice::Host);
    QCOMPARE(apply(host, shell), (std::vector<std::string>{"ATEN_CPU_CAPABILITY=default", "PATH=/bin"}));
    const KernelProfile old = kernelProfileFor(KernelChoice::Recorded, std::nullopt, NumericEnvironment());
    QCOMPARE(old.choice, KernelChoice::Host);
    QVERIFY2(old.note.find("does not record its numerical environment") != std::string::npos, old.note.c_str());
    QCOMPARE(apply(old, shell), (std::vector<std::string>{"ATEN_CPU_CAPABILITY=default", "PATH=/bin"}));
    QCOMPARE(parseKernelChoice("host"), std::optional<KernelChoice>(KernelChoice::Host));
    QCOMPARE(parseKernelChoice("recorded"), std::optional<KernelChoice>(KernelChoice::Recorded));
    QVERIFY(!parseKernelChoice("Recorded"));
}

void TestKernelProfile::onednnLevels_data()
{
    QTest::addColumn<QString>("flags");
    QTest::addColumn<QString>("isa");
    QTest::newRow("SSE4.2 only") << "sse4_2" << "SSE41";
    QTest::newRow("AVX") << "avx sse4_2" << "AVX";
    QTest::newRow("AVX2") << "avx avx2 fma" << "AVX2";
    QTest::newRow("AVX2 with VNNI") << "avx avx2 avx_vnni" << "AVX2_VNNI";
    QTest::newRow("AVX-512 without BW") << "avx avx2 avx512f" << "AVX2";
    QTest::newRow("AVX-512 core") << "avx2 avx512f avx512bw avx512vl avx512dq" << "AVX512_CORE";
    QTest::newRow("AVX-512 VNNI") << "avx2 avx512f avx512bw avx512vl avx512dq avx512_vnni" << "AVX512_CORE_VNNI";
    QTest::newRow("AVX-512 BF16") << "avx2 avx512f avx512bw avx512vl avx512dq avx512_vnni avx512_bf16" << "AVX512_CORE_BF16";
    QTest::newRow("AMX") << "avx512f avx512bw avx512vl avx512dq avx512_bf16 amx_tile amx_int8 amx_bf16" << "AVX512_CORE_AMX";
}

void TestKernelProfile::onednnLevels()
{
    QFETCH(QString, flags);
    QFETCH(QString, isa);
    std::vector<std::string> list;
    for (const QString& flag : flags.split(QLatin1Char(' ')))
        list.push_back(flag.toStdString());
    QCOMPARE(QString::fromStdString(onednnIsaFor(list)), isa);
}

void TestKernelProfile::atenLevels()
{
    QCOMPARE(atenCapabilityValue("AVX2"), std::string("avx2"));
    QCOMPARE(atenCapabilityValue("AVX512"), std::string("avx512"));
    QCOMPARE(atenCapabilityValue("DEFAULT"), std::string("default"));
    QCOMPARE(atenCapabilityValue("NO AVX"), std::string("default"));  // torch 1.13's name for it
    QCOMPARE(atenCapabilityValue("SVE256"), std::string());
    QCOMPARE(atenCapabilityValue(""), std::string());
}

void TestKernelProfile::profilesWithOtherSettingsHaveOtherKeys()
{
    NumericEnvironment recorded = trainingCpu();
    const KernelProfile plain = kernelProfileFor(KernelChoice::Recorded, recorded, cpuOf(recorded));
    recorded.settings = {{"MKL_CBWR", "AVX2"}};
    const KernelProfile pinned = kernelProfileFor(KernelChoice::Recorded, recorded, cpuOf(recorded));
    const KernelProfile host = kernelProfileFor(KernelChoice::Host, recorded, cpuOf(recorded));
    QVERIFY(plain.key() != pinned.key());
    QVERIFY(plain.key() != host.key());
    QVERIFY(pinned.key() != host.key());
}

QTEST_GUILESS_MAIN(TestKernelProfile)
#include "test_kernel_profile.moc"
