// The optimizer contracts against real torch.optim: the oracle script runs each optimizer
// in Python over an option grid and records gradients, parameters and state; every step
// here must reproduce them bit for bit.

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>

#include <QtTest>

#include <filesystem>
#include <map>
#include <set>

#include "temp_dir.h"
#include "zkdv/optim/contract_optimizer.h"
#include "zkdv/optim/contract_registry.h"
#include "zkdv/optim/torch_release.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tensor/torch_tensors.h"
#include "zkdv/util/mapped_file.h"

using namespace zkdv;
using namespace zkdv::optim;

namespace {

QString describe(const at::Tensor& expected, const at::Tensor& actual)
{
    if (expected.scalar_type() != actual.scalar_type() || expected.sizes() != actual.sizes())
        return QStringLiteral("expected %1 %2, found %3 %4")
            .arg(QString::fromLatin1(c10::toString(expected.scalar_type())), QString::fromStdString(c10::str(expected.sizes())),
                 QString::fromLatin1(c10::toString(actual.scalar_type())), QString::fromStdString(c10::str(actual.sizes())));
    double difference = (expected.to(at::kDouble) - actual.to(at::kDouble)).abs().max().item<double>();
    return QStringLiteral("max abs difference %1").arg(difference, 0, 'g', 17);
}

}  // namespace

class TestOptimizerOracle : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void everyOracleOptimizerIsCovered();
    void matchesTorchBitForBit_data();
    void matchesTorchBitForBit();

private:
    void checkCase(const QString& caseName);
    test::TempDir dir_;
    QStringList cases_;
    QString torchVersion_;
};

void TestOptimizerOracle::initTestCase()
{
    at::set_num_threads(1);
    QProcess oracle;
    oracle.setProcessChannelMode(QProcess::ForwardedErrorChannel);
    oracle.start(QStringLiteral(ZKDV_TEST_PYTHON),
                 {QStringLiteral(ZKDV_TEST_SOURCE_DIR "/oracle/generate_optimizer_oracle.py"), QString::fromStdString(dir_.path())});
    QVERIFY2(oracle.waitForFinished(600000), "the oracle script did not finish in 10 minutes");
    QVERIFY2(oracle.exitStatus() == QProcess::NormalExit && oracle.exitCode() == 0,
             qPrintable(QStringLiteral("the oracle script failed: %1").arg(QString::fromUtf8(oracle.readAllStandardOutput()))));
    for (const auto& entry : std::filesystem::directory_iterator(dir_.path()))
        if (entry.path().extension() == ".safetensors")
            cases_ << QString::fromStdString(entry.path().stem().string());
    cases_.sort();
    QVERIFY2(!cases_.isEmpty(), "the oracle script wrote no cases");
}

void TestOptimizerOracle::everyOracleOptimizerIsCovered()
{
    // What this torch has (the script lists torch.optim's classes and their constructor options).
    MappedFile listing(dir_.file("torch_optimizers.json"));
    const auto torch = nlohmann::json::parse(listing.bytes().data, listing.bytes().data + listing.bytes().size);
    const auto release = TorchRelease::parse(torch.at("torch_version").get<std::string>());
    QVERIFY2(release, "unreadable torch version in torch_optimizers.json");
    QVERIFY2(isProvenTorchRelease(*release),
             qPrintable(QStringLiteral("the oracle's torch %1 is not one the contracts claim (%2)")
                            .arg(QString::fromStdString(release->text()), QString::fromStdString(provenTorchReleasesText()))));
    const nlohmann::json& torchOptimizers = torch.at("optimizers");

    // The oracle's cases: which optimizer and dtype each covers, and every group's options.
    std::set<std::string> covered;
    std::map<std::string, std::vector<nlohmann::json>> caseGroups;
    for (const QString& name : cases_) {
        MappedFile file(dir_.file(name.toStdString() + ".safetensors"));
        auto view = SafetensorsView::parse(file.bytes());
        auto meta = nlohmann::json::parse(view.metadataValue("case"));
        const std::string optimizer = meta["optimizer"].get<std::string>();
        covered.insert(optimizer + "/" + meta["dtype"].get<std::string>());
        for (const auto& group : meta["groups"])
            caseGroups[optimizer].push_back(group["options"]);
    }

    ContractRegistry registry(*release);
    QStringList missing;
    for (const auto& [name, torchOptions] : torchOptimizers.items()) {
        if (!registry.contains(name)) {
            missing << QStringLiteral("torch.optim.%1 has no contract").arg(QString::fromStdString(name));
            continue;
        }
        auto contract = registry.resolve(name);
        if (name == "LBFGS") {
            // Refused by design: closure-driven updates cannot be attested. The refusal is what is proven.
            bool refused = false;
            try {
                contract->validate({contract->defaults()});
            } catch (const ContractError&) {
                refused = true;
            }
            if (!refused)
                missing << QStringLiteral("LBFGS is not refused");
            continue;
        }
        for (const char* dtype : {"float32", "float64"})
            if (!covered.count(name + "/" + dtype))
                missing << QStringLiteral("no oracle case for %1 in %2").arg(QString::fromStdString(name), QString::fromLatin1(dtype));

        // The contract's options are torch's, with torch's defaults.
        const GroupOptions defaults = contract->defaults();
        for (const auto& [option, value] : torchOptions.items())
            if (!defaults.contains(option))
                missing << QStringLiteral("torch.optim.%1 takes %2; the contract does not know it")
                               .arg(QString::fromStdString(name), QString::fromStdString(option));
            else if (defaults[option] != value)
                missing << QStringLiteral("torch.optim.%1's default %2=%3; the contract's is %4")
                               .arg(QString::fromStdString(name), QString::fromStdString(option),
                                    QString::fromStdString(value.dump()), QString::fromStdString(defaults[option].dump()));
        for (const nlohmann::json& group : caseGroups[name])
            for (const auto& [option, value] : group.items())
                if (!defaults.contains(option))
                    missing << QStringLiteral("torch's %1 groups hold %2; the contract does not know it")
                                   .arg(QString::fromStdString(name), QString::fromStdString(option));

        // Every option is either exercised by a case (some group sets it to another value than
        // torch's default) or refused by name when set: never silently ignored.
        for (const auto& [option, torchDefault] : torchOptions.items()) {
            // A flag whose default is None (foreach, fused) is exercised only by true.
            auto exercises = [&](const nlohmann::json& value) { return torchDefault.is_null() ? value == true : value != torchDefault; };
            bool exercised = false;
            for (const nlohmann::json& group : caseGroups[name])
                exercised = exercised || (group.contains(option) && exercises(group[option]));
            if (exercised)
                continue;
            if (!torchDefault.is_boolean() && !torchDefault.is_null()) {
                missing << QStringLiteral("option %1 of torch.optim.%2 is never exercised by an oracle case")
                               .arg(QString::fromStdString(option), QString::fromStdString(name));
                continue;
            }
            GroupOptions group = caseGroups[name].empty() ? defaults : caseGroups[name].front();
            group[option] = torchDefault.is_boolean() ? !torchDefault.get<bool>() : true;
            QString refusal;
            try {
                contract->validate({group});
            } catch (const ContractError& error) {
                refusal = QString::fromUtf8(error.what());
            }
            if (!refusal.contains(QString::fromStdString(option)))
                missing << QStringLiteral("option %1=%2 of torch.optim.%3 is neither exercised by an oracle case nor refused by name%4")
                               .arg(QString::fromStdString(option), QString::fromStdString(group[option].dump()), QString::fromStdString(name),
                                    refusal.isEmpty() ? QString() : QStringLiteral(" (refused as: %1)").arg(refusal));
        }
    }
    QVERIFY2(missing.isEmpty(), qPrintable(missing.join(QStringLiteral("\n"))));
}

void TestOptimizerOracle::matchesTorchBitForBit_data()
{
    QTest::addColumn<QString>("caseName");
    for (const QString& name : cases_)
        QTest::newRow(qPrintable(name)) << name;
}

void TestOptimizerOracle::matchesTorchBitForBit()
{
    QFETCH(QString, caseName);
    try {
        checkCase(caseName);
    } catch (const std::exception& error) {
        QFAIL(qPrintable(QStringLiteral("%1: %2").arg(caseName, QString::fromUtf8(error.what()))));
    }
}

void TestOptimizerOracle::checkCase(const QString& caseName)
{
    MappedFile file(dir_.file(caseName.toStdString() + ".safetensors"));
    SafetensorsView view = SafetensorsView::parse(file.bytes());
    const nlohmann::json meta = nlohmann::json::parse(view.metadataValue("case"));
    auto tensor = [&](const std::string& name) -> at::Tensor {
        const TensorView* found = view.find(name);
        return found ? tensorFromView(*found) : at::Tensor();
    };

    const std::size_t count = meta["shapes"].size();
    std::vector<at::Tensor> parameters;
    for (std::size_t i = 0; i < count; ++i)
        parameters.push_back(tensor("init/" + std::to_string(i)).requires_grad_(true));
    std::vector<ParameterGroup> groups;
    for (const auto& group : meta["groups"]) {
        ParameterGroup bound;
        for (const auto& index : group["parameters"])
            bound.parameters.push_back(parameters[index.get<std::size_t>()]);
        bound.options = group["options"];
        groups.push_back(std::move(bound));
    }
    // The contracts follow the torch that recorded the case, as a replay follows the tape's.
    const std::string torchVersion(view.metadataValue("torch_version"));
    const auto release = TorchRelease::parse(torchVersion);
    QVERIFY2(release, qPrintable(QStringLiteral("unreadable torch version \"%1\"").arg(QString::fromStdString(torchVersion))));
    ContractRegistry registry(*release);
    ContractOptimizer optimizer(registry.resolve(meta["optimizer"].get<std::string>()), groups);

    const int steps = meta["steps"].get<int>();
    for (int step = 0; step < steps; ++step) {
        const std::string s = std::to_string(step);
        for (std::size_t i = 0; i < count; ++i) {
            const std::string prefix = "grad/" + s + "/" + std::to_string(i);
            at::Tensor gradient;
            if (meta["sparse"].get<bool>()) {
                at::Tensor indices = tensor(prefix + "/indices");
                if (indices.defined())
                    gradient = at::sparse_coo_tensor(indices, tensor(prefix + "/values"), parameters[i].sizes()).coalesce();
            } else {
                gradient = tensor(prefix);
            }
            parameters[i].mutable_grad() = gradient;
        }
        optimizer.step();
        for (std::size_t i = 0; i < count; ++i) {
            const std::string where = "step " + s + ", parameter " + std::to_string(i);
            at::Tensor expected = tensor("param/" + s + "/" + std::to_string(i));
            QVERIFY2(bitwiseEqual(expected, parameters[i].detach()),
                     qPrintable(QStringLiteral("%1: parameter differs from torch: %2").arg(QString::fromStdString(where), describe(expected, parameters[i].detach()))));
            const SlotState& state = optimizer.state(parameters[i]);
            const std::string statePrefix = "state/" + s + "/" + std::to_string(i) + "/";
            std::size_t torchSlots = 0;
            for (const TensorView& stored : view.tensors()) {
                if (stored.name.compare(0, statePrefix.size(), statePrefix) != 0)
                    continue;
                ++torchSlots;
                const std::string slot = stored.name.substr(statePrefix.size());
                auto ours = state.find(slot);
                QVERIFY2(ours != state.end(), qPrintable(QStringLiteral("%1: torch has state slot \"%2\", the contract does not")
                                                            .arg(QString::fromStdString(where), QString::fromStdString(slot))));
                at::Tensor expectedSlot = tensorFromView(stored);
                QVERIFY2(bitwiseEqual(expectedSlot, ours->second),
                         qPrintable(QStringLiteral("%1: state slot \"%2\" differs from torch: %3")
                                        .arg(QString::fromStdString(where), QString::fromStdString(slot), describe(expectedSlot, ours->second))));
            }
            QVERIFY2(state.size() == torchSlots, qPrintable(QStringLiteral("%1: the contract keeps %2 state slots, torch %3")
                                                               .arg(QString::fromStdString(where)).arg(state.size()).arg(torchSlots)));
        }
    }
}

QTEST_GUILESS_MAIN(TestOptimizerOracle)
#include "test_optimizer_oracle.moc"
