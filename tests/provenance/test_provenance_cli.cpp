// zkdv-audit dataset and match-weights, run as the auditor runs them: exit codes, the files
// and tensors they name, and their refusals of hostile input.

#include <QtTest>

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcessEnvironment>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "snapshot_models.h"
#include "audit_run.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_store.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/snapshot_record.h"
#include "zkdv/tape/state_digest.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/tape/tape_writer.h"
#include "zkdv/tape/transaction_record.h"
#include "zkdv/workflow/tape_provenance.h"

using namespace zkdv;
using test::readAll;
using test::readText;
using test::writeAll;
using test::writeText;

namespace {

using Result = test::AuditRun;

Result runAudit(const QStringList& arguments, const QString& workingDirectory = {})
{
    return test::runAuditCommand(arguments, QProcessEnvironment::systemEnvironment(), 300000, workingDirectory);
}

QJsonObject jsonOf(const QString& text)
{
    return QJsonDocument::fromJson(text.toUtf8()).object();
}

using test::Model;
using test::SnapshotCopier;
using test::Tensor;
using test::writeModel;

Tensor& tensorNamed(Model& model, const std::string& name)
{
    for (Tensor& tensor : model)
        if (tensor.name == name)
            return tensor;
    throw std::runtime_error("no tensor " + name);
}

// A tape of format 1.4 (before the final snapshot) of a model without buffers trained by SGD
// without momentum (so its state is its parameters alone): 3 transactions, snapshots every
// 12, every transaction's state digest drawn (probability 1). The last one's digest is that
// of `final`, the parameters layer.weight [2, 3] and layer.bias [2].
void writeTapeWithoutFinalSnapshot(const std::string& path, const Model& final, const std::string& momentum)
{
    const std::string program = "p";
    RootRecord root;
    root.formatMinor = 4;
    root.producerName = "test";
    root.producerVersion = "1";
    root.torchVersion = "none";
    root.parameters = {{"layer.weight", {2, 3}, DType::F32}, {"layer.bias", {2}, DType::F32}};
    root.optimizerContract = "SGD";
    root.optimizerGroups = {{{"layer.weight", "layer.bias"}, "{\"lr\":0.1" + momentum + "}"}};
    root.programSha256 = Sha256::of(ByteSpan(std::string_view(program)));
    root.snapshotInterval = 12;
    root.stateCheckProbability = 1.0;
    const std::string rootJson = root.toJson();
    TapeWriter writer(path, TapeWriter::OpenMode::Overwrite, 4);
    writer.append(tape::RecordType::Root, ByteSpan(std::string_view(rootJson)));
    writer.append(tape::RecordType::Program, ByteSpan(std::string_view(program)));
    std::vector<float> zeros(6, 0.0f);
    SafetensorsBuilder snapshot;
    snapshot.setMetadata("zkdv.record", "snapshot");
    snapshot.setMetadata("before_transaction", "0");
    snapshot.add(parameterTensorName("layer.weight"), DType::F32, {2, 3}, ByteSpan(zeros.data(), 24));
    snapshot.add(parameterTensorName("layer.bias"), DType::F32, {2}, ByteSpan(zeros.data(), 8));
    writer.append(tape::RecordType::Snapshot, snapshot.toBytes());
    for (std::uint64_t t = 0; t < 3; ++t) {
        StateDigest digest;
        for (const Tensor& tensor : final) {
            std::vector<std::uint8_t> bytes = tensor.bytes;
            if (t < 2)
                bytes[0] ^= static_cast<std::uint8_t>(t + 1);  // the states before the last one
            digest.add(parameterTensorName(tensor.name), tensor.dtype, tensor.shape, ByteSpan(bytes));
        }
        const float loss = 1.0f;
        TransactionRecordBuilder record(t, 1);
        record.setLoss(DType::F32, ByteSpan(&loss, 4));
        record.setOptimizerValue("lr", {0.1});
        record.setUpdateFingerprints({0.0, 0.0}, {0.0, 0.0});
        record.setStateDigest(digest.finish());
        writer.append(tape::RecordType::Transaction, record.blob().toBytes());
    }
    writer.seal();
}

}  // namespace

class TestProvenanceCli : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void datasetCommitAndVerify();
    void datasetVerifyNamesChangedMissingAndExtraFiles();
    void editedCommitmentFailsVerify();
    void hostileCommitmentIsUsageError_data();
    void hostileCommitmentIsUsageError();
    void datasetUsageErrors_data();
    void datasetUsageErrors();
    void matchWeights_data();
    void matchWeights();
    void matchWeightsJsonNamesTheChangedTensor();
    void shardedModelFolder();
    void finalStateByItsDigest();
    void matchWeightsRefusals_data();
    void matchWeightsRefusals();
    void infoSaysTheCasesProvenanceChecks();

private:
    QString path(const std::string& name) const { return QString::fromStdString(dir_.file(name)); }
    std::string makeDataset(const std::string& name) const
    {
        const std::string root = dir_.file(name);
        std::filesystem::create_directories(root + "/train");
        writeText(root + "/train/shard-000.jsonl", "{\"x\": 1}\n{\"x\": 2}\n");
        writeText(root + "/train/shard-001.jsonl", "{\"x\": 3}\n");
        writeText(root + "/labels.txt", "cat\ndog\n");
        return root;
    }

    test::TempDir dir_;
    std::map<std::uint64_t, Model> states_;
    std::uint64_t transactions_ = 0;
};

void TestProvenanceCli::initTestCase()
{
    QVERIFY2(QFileInfo(QStringLiteral(ZKDV_AUDIT_EXECUTABLE)).isExecutable(), ZKDV_AUDIT_EXECUTABLE);
    SyntheticDemoOptions options;
    options.steps = 30;
    options.batchSize = 4;
    options.features = 4;  // weight [3, 4], bias [3], input_mean [4], batches_seen []
    options.classes = 3;
    options.snapshotInterval = 12;
    writeSyntheticDemoTape(dir_.file("run.zkdv"), options);
    SnapshotCopier copier;
    const TapeSummary summary = scanTape(dir_.file("run.zkdv"), &copier);
    QCOMPARE(summary.status, TapeStatus::Sealed);
    transactions_ = summary.transactionCount;
    states_ = copier.states;
    QCOMPARE(states_.size(), std::size_t(4));  // 0, 12, 24 and the final 30
    QVERIFY(states_.count(30));
    QVERIFY(states_[0].front().bytes != states_[30].front().bytes);
}

void TestProvenanceCli::datasetCommitAndVerify()
{
    const std::string data = makeDataset("data-ok");
    const QString commit = path("data-ok.commit.json");
    Result result = runAudit({"dataset", "commit", QString::fromStdString(data), "-o", commit, "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY(result.out.contains("3 files"));
    const QJsonObject document = jsonOf(QString::fromStdString(readText(commit.toStdString())));
    QCOMPARE(document["format"].toString(), QStringLiteral("zkdv-dataset-commitment"));
    QCOMPARE(document["leaf_count"].toInt(), 3);
    const QJsonArray leaves = document["leaves"].toArray();
    QCOMPARE(leaves[0].toObject()["path"].toString(), QStringLiteral("labels.txt"));
    QCOMPARE(leaves[1].toObject()["path"].toString(), QStringLiteral("train/shard-000.jsonl"));
    // The digest of a file, from the file: sha256 of its bytes.
    const std::vector<std::uint8_t> shard = readAll(data + "/train/shard-001.jsonl");
    QCOMPARE(leaves[2].toObject()["sha256"].toString().toStdString(), toHex(Sha256::of(ByteSpan(shard))));

    result = runAudit({"dataset", "verify", commit, QString::fromStdString(data), "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY(result.out.contains("OK"));
    result = runAudit({"dataset", "verify", commit, "--json"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    const QJsonObject json = jsonOf(result.out);
    QCOMPARE(json["root_matches"].toBool(), true);
    QCOMPARE(json["computed_root"].toString(), document["root"].toString());
    QVERIFY(json["differences"].isNull());

    // A commitment written into its own folder leaves itself out, then and at verify.
    const QString inside = QString::fromStdString(data + "/data.commit.json");
    result = runAudit({"dataset", "commit", QString::fromStdString(data), "-o", inside, "--quiet", "--json"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    QCOMPARE(jsonOf(result.out)["leaf_count"].toInt(), 3);
    QCOMPARE(jsonOf(result.out)["root"].toString(), document["root"].toString());
    result = runAudit({"dataset", "verify", inside, QString::fromStdString(data), "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    // Not replaced without --overwrite.
    result = runAudit({"dataset", "commit", QString::fromStdString(data), "-o", inside, "--quiet"});
    QVERIFY2(result.exitCode == 2 && result.err.contains("--overwrite"), qPrintable(result.describe()));

    // Files given one by one are committed under their relative paths.
    result = runAudit({"dataset", "commit", "train/shard-001.jsonl", "labels.txt", "-o", path("files.commit.json"), "--quiet"},
                      QString::fromStdString(data));
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    const QJsonArray given = jsonOf(QString::fromStdString(readText(dir_.file("files.commit.json"))))["leaves"].toArray();
    QCOMPARE(given.size(), 2);
    QCOMPARE(given[1].toObject()["path"].toString(), QStringLiteral("train/shard-001.jsonl"));
    result = runAudit({"dataset", "verify", path("files.commit.json"), QString::fromStdString(data), "--ignore-extra", "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
}

void TestProvenanceCli::datasetVerifyNamesChangedMissingAndExtraFiles()
{
    const std::string data = makeDataset("data-changed");
    const QString commit = path("data-changed.commit.json");
    QCOMPARE(runAudit({"dataset", "commit", QString::fromStdString(data), "-o", commit, "--quiet"}).exitCode, 0);
    writeText(data + "/train/shard-000.jsonl", "{\"x\": 1}\n{\"x\": 9}\n");  // same size, other bytes
    std::filesystem::remove(data + "/labels.txt");
    writeText(data + "/train/shard-002.jsonl", "{\"x\": 4}\n");
    Result result = runAudit({"dataset", "verify", commit, QString::fromStdString(data), "--quiet"});
    QVERIFY2(result.exitCode == 1, qPrintable(result.describe()));
    QVERIFY2(result.out.contains(QRegularExpression("changed +train/shard-000.jsonl")), qPrintable(result.out));
    QVERIFY2(result.out.contains(QRegularExpression("missing +labels.txt")), qPrintable(result.out));
    QVERIFY2(result.out.contains(QRegularExpression("extra +train/shard-002.jsonl")), qPrintable(result.out));
    QVERIFY(!result.out.contains("shard-001"));
    QVERIFY(result.out.contains("FAILED"));

    result = runAudit({"dataset", "verify", commit, QString::fromStdString(data), "--json", "--quiet"});
    QCOMPARE(result.exitCode, 1);
    const QJsonObject json = jsonOf(result.out);
    QCOMPARE(json["root_matches"].toBool(), true);
    const QJsonArray differences = json["differences"].toArray();
    QCOMPARE(differences.size(), 3);
    QCOMPARE(differences[0].toObject()["path"].toString(), QStringLiteral("labels.txt"));
    QCOMPARE(differences[0].toObject()["finding"].toString(), QStringLiteral("missing"));
    QCOMPARE(differences[1].toObject()["finding"].toString(), QStringLiteral("changed"));
    QCOMPARE(differences[2].toObject()["finding"].toString(), QStringLiteral("extra"));
}

void TestProvenanceCli::editedCommitmentFailsVerify()
{
    const std::string data = makeDataset("data-edited");
    const std::string commit = dir_.file("data-edited.commit.json");
    QCOMPARE(runAudit({"dataset", "commit", QString::fromStdString(data), "-o", QString::fromStdString(commit), "--quiet"}).exitCode, 0);
    // The trainer swaps in the digest of other data for one shard and keeps the root.
    QJsonObject document = jsonOf(QString::fromStdString(readText(commit)));
    QJsonArray leaves = document["leaves"].toArray();
    QJsonObject leaf = leaves[1].toObject();
    leaf["sha256"] = QString::fromStdString(toHex(Sha256::of(ByteSpan(std::string_view("other data")))));
    leaves[1] = leaf;
    document["leaves"] = leaves;
    writeText(commit, QJsonDocument(document).toJson().toStdString());
    const Result result = runAudit({"dataset", "verify", QString::fromStdString(commit)});
    QVERIFY2(result.exitCode == 1, qPrintable(result.describe()));
    QVERIFY(result.out.contains("root: DIFFERS"));
}

void TestProvenanceCli::hostileCommitmentIsUsageError_data()
{
    QTest::addColumn<QString>("content");
    QTest::addColumn<QString>("message");
    QTest::newRow("cut short") << "{\"format\": \"zkdv-dataset-commitment\", \"vers" << "not valid JSON";
    QTest::newRow("empty file") << "" << "dataset commitment";
    QTest::newRow("wrong type") << "{\"format\": \"zkdv-dataset-commitment\", \"version\": 1, \"algorithm\": \"sha256-merkle-v1\", \"unit\": \"file\", "
                                   "\"leaf_count\": 1, \"total_bytes\": 1, \"root\": \"" + QString(64, '0') + "\", \"leaves\": {}}"
                                << "leaves: expected an array";
    QTest::newRow("huge count") << "{\"format\": \"zkdv-dataset-commitment\", \"version\": 1, \"algorithm\": \"sha256-merkle-v1\", \"unit\": \"file\", "
                                   "\"leaf_count\": 99999999999999, \"total_bytes\": 1, \"root\": \"" + QString(64, '0') + "\", \"leaves\": []}"
                                << "leaf_count: 99999999999999 is more than the limit";
    QTest::newRow("bad hex") << "{\"format\": \"zkdv-dataset-commitment\", \"version\": 1, \"algorithm\": \"sha256-merkle-v1\", \"unit\": \"file\", "
                                "\"leaf_count\": 1, \"total_bytes\": 1, \"root\": \"" + QString(64, '0') + "\", \"leaves\": [{\"path\": \"a\", \"size\": 1, \"sha256\": \"xyz\"}]}"
                             << "leaves[0].sha256: expected 64 hex digits";
}

void TestProvenanceCli::hostileCommitmentIsUsageError()
{
    QFETCH(QString, content);
    QFETCH(QString, message);
    const std::string file = dir_.file("hostile.commit.json");
    writeText(file, content.toStdString());
    const Result result = runAudit({"dataset", "verify", QString::fromStdString(file)});
    QVERIFY2(result.exitCode == 2, qPrintable(result.describe()));
    QVERIFY2(result.err.contains(message) && result.err.contains("hostile.commit.json"), qPrintable(result.describe()));
    QVERIFY(result.out.isEmpty());
}

void TestProvenanceCli::datasetUsageErrors_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("message");
    QTest::newRow("no action") << QStringList{"dataset"} << 2 << "missing ACTION";
    QTest::newRow("unknown action") << QStringList{"dataset", "sign"} << 2 << "unknown action \"sign\"";
    QTest::newRow("help") << QStringList{"dataset", "--help"} << 0 << "";
    QTest::newRow("commit --help") << QStringList{"dataset", "commit", "--help"} << 0 << "";
    QTest::newRow("commit without -o") << QStringList{"dataset", "commit", "{dir}"} << 2 << "-o FILE is required";
    QTest::newRow("commit of nothing") << QStringList{"dataset", "commit", "{dir}/nowhere", "-o", "{dir}/x.json"} << 2 << "nowhere";
    QTest::newRow("commit of an absolute file") << QStringList{"dataset", "commit", "{dir}/run.zkdv", "-o", "{dir}/x.json"} << 2 << "relative path";
    QTest::newRow("verify of nothing") << QStringList{"dataset", "verify", "{dir}/nowhere.json"} << 2 << "nowhere.json";
    QTest::newRow("verify, folder missing") << QStringList{"dataset", "verify", "{dir}/data-ok.commit.json", "{dir}/nowhere"} << 2 << "nowhere";
}

void TestProvenanceCli::datasetUsageErrors()
{
    QFETCH(QStringList, arguments);
    QFETCH(int, exitCode);
    QFETCH(QString, message);
    for (QString& argument : arguments)
        argument.replace("{dir}", QString::fromStdString(dir_.path()));
    const Result result = runAudit(arguments);
    QVERIFY2(result.exitCode == exitCode, qPrintable(result.describe()));
    QVERIFY2(result.err.contains(message), qPrintable(result.describe()));
    if (exitCode == 0)
        QVERIFY(result.out.contains("usage:"));
}

// Each row writes a model from a state of the tape, edited as the row says, and checks the
// verdict and the line naming the tensor.
void TestProvenanceCli::matchWeights_data()
{
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("state");   // which state the model is made from: "0" or "final"
    QTest::addColumn<QString>("against"); // --snapshot N or --final
    QTest::addColumn<int>("exitCode");
    QTest::addColumn<QString>("line");    // a regular expression the output must hold
    QTest::newRow("start equal") << "none" << "0" << "0" << 0 << "snapshot before transaction 0 \\(the starting state\\)";
    QTest::newRow("final equal") << "none" << "final" << "final" << 0 << "the final snapshot before transaction 30";
    QTest::newRow("snapshot 12 equal") << "none" << "12" << "12" << 0 << "equal +weight \\(parameter\\)";
    QTest::newRow("start is not the final") << "none" << "0" << "final" << 1 << "DIFFERS +weight \\(parameter\\): \\d+ of 12 elements differ";
    QTest::newRow("one element changed") << "element" << "final" << "final" << 1 << "DIFFERS +weight \\(parameter\\): 1 of 12 elements differ, max abs diff 0\\.[45]";
    QTest::newRow("dtype") << "dtype" << "final" << "final" << 1 << "DIFFERS +bias \\(parameter\\): dtype F32 on the tape, F64 in the model";
    QTest::newRow("shape") << "shape" << "final" << "final" << 1 << "DIFFERS +weight \\(parameter\\): shape \\[3, 4\\] on the tape, \\[4, 3\\] in the model";
    QTest::newRow("missing parameter") << "drop-bias" << "final" << "final" << 1 << "MISSING +bias \\(parameter\\): not in the model";
    QTest::newRow("missing buffer") << "drop-buffer" << "final" << "final" << 0 << "missing +batches_seen \\(buffer\\)";
    QTest::newRow("missing buffer, required") << "drop-buffer,require" << "final" << "final" << 1 << "MISSING +batches_seen \\(buffer\\)";
    QTest::newRow("extra tensor") << "extra" << "final" << "final" << 1 << "EXTRA +head.weight: in the model \\(F32 \\[2\\]\\)";
    QTest::newRow("model. prefix") << "prefix" << "final" << "final" << 0 << "names are \"model.\" \\+ the tape's layout names";
    QTest::newRow("model. prefix, one changed") << "prefix,element" << "final" << "final" << 1 << "DIFFERS +weight \\(parameter\\) \\[model: model.weight\\]";
}

void TestProvenanceCli::matchWeights()
{
    QFETCH(QString, edit);
    QFETCH(QString, state);
    QFETCH(QString, against);
    QFETCH(int, exitCode);
    QFETCH(QString, line);
    Model model = states_[state == "final" ? transactions_ : state.toULongLong()];
    QCOMPARE(model.size(), std::size_t(4));  // weight [3, 4]... as the synthetic demo's layout
    const QStringList edits = edit.split(',');
    if (edits.contains("element")) {
        float value;
        std::memcpy(&value, tensorNamed(model, "weight").bytes.data() + 5 * sizeof(float), sizeof value);
        value += 0.5f;
        std::memcpy(tensorNamed(model, "weight").bytes.data() + 5 * sizeof(float), &value, sizeof value);
    }
    if (edits.contains("dtype")) {
        Tensor& bias = tensorNamed(model, "bias");
        std::vector<std::uint8_t> wide;
        for (std::size_t i = 0; i < bias.bytes.size(); i += 4) {
            float f;
            std::memcpy(&f, bias.bytes.data() + i, 4);
            const double d = f;
            const auto* p = reinterpret_cast<const std::uint8_t*>(&d);
            wide.insert(wide.end(), p, p + 8);
        }
        bias.dtype = DType::F64;
        bias.bytes = wide;
    }
    if (edits.contains("shape"))
        tensorNamed(model, "weight").shape = {4, 3};
    if (edits.contains("drop-bias"))
        model.erase(model.begin() + 1);
    if (edits.contains("drop-buffer"))
        model.pop_back();
    if (edits.contains("extra"))
        model.push_back({"head.weight", DType::F32, {2}, std::vector<std::uint8_t>(8, 0)});
    if (edits.contains("prefix"))
        for (Tensor& tensor : model)
            tensor.name = "model." + tensor.name;
    const std::string file = dir_.file("model.safetensors");
    writeModel(file, model);
    QStringList arguments{"match-weights", path("run.zkdv"), QString::fromStdString(file), "--quiet"};
    if (against == "final")
        arguments << "--final";
    else
        arguments << "--snapshot" << against;
    if (edits.contains("require"))
        arguments << "--require-buffers";
    const Result result = runAudit(arguments);
    QVERIFY2(result.exitCode == exitCode, qPrintable(result.describe()));
    QVERIFY2(result.out.contains(QRegularExpression(line)), qPrintable(result.describe()));
    QVERIFY(result.out.contains(exitCode == 0 ? "EQUAL" : "DIFFERENT"));
}

void TestProvenanceCli::matchWeightsJsonNamesTheChangedTensor()
{
    Model model = states_[transactions_];
    tensorNamed(model, "bias").bytes[0] ^= 0x01;  // one ULP of the first bias element
    const std::string file = dir_.file("json.safetensors");
    writeModel(file, model);
    const Result result = runAudit({"match-weights", path("run.zkdv"), "--final", QString::fromStdString(file), "--json", "--quiet"});
    QVERIFY2(result.exitCode == 1, qPrintable(result.describe()));
    const QJsonObject json = jsonOf(result.out);
    QCOMPARE(json["equal"].toBool(), false);
    QCOMPARE(json["reference"].toString(), QStringLiteral("snapshot"));
    QCOMPARE(json["before_transaction"].toInt(), 30);
    QCOMPARE(json["final_state"].toBool(), true);
    QCOMPARE(json["failing"].toInt(), 1);
    QCOMPARE(json["name_mapping"].toObject()["kind"].toString(), QStringLiteral("same"));
    const QJsonArray tensors = json["tensors"].toArray();
    QCOMPARE(tensors.size(), 4);
    const QJsonObject bias = tensors[1].toObject();
    QCOMPARE(bias["tape_name"].toString(), QStringLiteral("bias"));
    QCOMPARE(bias["finding"].toString(), QStringLiteral("values"));
    QCOMPARE(bias["differing_elements"].toInt(), 1);
    QVERIFY(bias["max_abs_diff"].toDouble() > 0 && bias["max_abs_diff"].toDouble() < 1e-5);
    QCOMPARE(tensors[0].toObject()["finding"].toString(), QStringLiteral("equal"));
    QCOMPARE(tensors[3].toObject()["role"].toString(), QStringLiteral("buffer"));
}

void TestProvenanceCli::shardedModelFolder()
{
    const Model model = states_[transactions_];
    const std::string folder = dir_.file("sharded");
    std::filesystem::create_directories(folder);
    writeModel(folder + "/model-00001-of-00002.safetensors", Model(model.begin(), model.begin() + 2));
    writeModel(folder + "/model-00002-of-00002.safetensors", Model(model.begin() + 2, model.end()));
    // Without an index: every .safetensors file of the folder.
    Result result = runAudit({"match-weights", path("run.zkdv"), "--final", QString::fromStdString(folder), "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY(result.out.contains("2 file(s)"));
    // With one, as Hugging Face writes it.
    const std::string index = R"({"metadata": {"total_size": 1}, "weight_map": {"weight": "model-00001-of-00002.safetensors", )"
                              R"("bias": "model-00001-of-00002.safetensors", "input_mean": "model-00002-of-00002.safetensors", )"
                              R"("batches_seen": "model-00002-of-00002.safetensors"}})";
    writeText(folder + "/model.safetensors.index.json", index);
    result = runAudit({"match-weights", path("run.zkdv"), "--final", QString::fromStdString(folder), "--quiet"});
    QVERIFY2(result.exitCode == 0 && result.out.contains("by model.safetensors.index.json"), qPrintable(result.describe()));
    // An index that puts a tensor in the wrong shard is not a valid checkpoint.
    std::string wrong = index;
    wrong.replace(wrong.find("\"bias\": \"model-00001"), 20, "\"bias\": \"model-00002");
    writeText(folder + "/model.safetensors.index.json", wrong);
    result = runAudit({"match-weights", path("run.zkdv"), "--final", QString::fromStdString(folder), "--quiet"});
    QVERIFY2(result.exitCode == 2 && result.err.contains("tensor \"bias\" is in model-00001-of-00002.safetensors"), qPrintable(result.describe()));
    // An index that escapes the folder.
    writeText(folder + "/model.safetensors.index.json", R"({"weight_map": {"weight": "../run.zkdv"}})");
    result = runAudit({"match-weights", path("run.zkdv"), "--final", QString::fromStdString(folder), "--quiet"});
    QVERIFY2(result.exitCode == 2 && result.err.contains("is not a file name in the folder"), qPrintable(result.describe()));
    writeText(folder + "/model.safetensors.index.json", "{\"weight_map\": ");
    result = runAudit({"match-weights", path("run.zkdv"), "--final", QString::fromStdString(folder), "--quiet"});
    QVERIFY2(result.exitCode == 2 && result.err.contains("model.safetensors.index.json"), qPrintable(result.describe()));
}

void TestProvenanceCli::finalStateByItsDigest()
{
    std::vector<float> weight{0.5f, -1.25f, 2.0f, 3.5f, -0.125f, 7.0f}, bias{0.25f, -0.75f};
    auto bytesOf = [](const std::vector<float>& values) {
        const auto* p = reinterpret_cast<const std::uint8_t*>(values.data());
        return std::vector<std::uint8_t>(p, p + values.size() * 4);
    };
    const Model final{{"layer.weight", DType::F32, {2, 3}, bytesOf(weight)}, {"layer.bias", DType::F32, {2}, bytesOf(bias)}};
    const std::string tape = dir_.file("old.zkdv");
    writeTapeWithoutFinalSnapshot(tape, final, "");
    const TapeSummary summary = scanTape(tape);
    QVERIFY2(summary.status == TapeStatus::Sealed, summary.problem ? summary.problem->describe().c_str() : "not sealed");
    QVERIFY(!summary.finalStateOnTape);
    const std::string model = dir_.file("old-final.safetensors");

    writeModel(model, final);
    Result result = runAudit({"match-weights", QString::fromStdString(tape), "--final", QString::fromStdString(model), "--quiet"});
    QVERIFY2(result.exitCode == 0, qPrintable(result.describe()));
    QVERIFY2(result.out.contains("against the state digest the last transaction (2) recorded"), qPrintable(result.out));
    QVERIFY(result.out.contains("layout ok layer.weight (parameter)"));
    result = runAudit({"match-weights", QString::fromStdString(tape), "--final", QString::fromStdString(model), "--quiet", "--json"});
    QCOMPARE(jsonOf(result.out)["reference"].toString(), QStringLiteral("final-state-digest"));
    QCOMPARE(jsonOf(result.out)["recorded_state_digest"].toString(), jsonOf(result.out)["model_state_digest"].toString());

    // One element changed: the digest differs, and no tensor can be named.
    Model changed = final;
    changed[1].bytes[4] ^= 0x01;
    writeModel(model, changed);
    result = runAudit({"match-weights", QString::fromStdString(tape), "--final", QString::fromStdString(model), "--quiet"});
    QVERIFY2(result.exitCode == 1, qPrintable(result.describe()));
    QVERIFY2(result.out.contains("the values differ from the recorded state digest"), qPrintable(result.out));

    // A missing parameter is named before any digest.
    writeModel(model, Model(final.begin(), final.begin() + 1));
    result = runAudit({"match-weights", QString::fromStdString(tape), "--final", QString::fromStdString(model), "--quiet"});
    QVERIFY2(result.exitCode == 1 && result.out.contains("MISSING   layer.bias (parameter)"), qPrintable(result.describe()));

    // With momentum the state digest covers momentum buffers no model file holds: no verdict.
    writeTapeWithoutFinalSnapshot(tape, final, ",\"momentum\":0.9");
    writeModel(model, final);
    result = runAudit({"match-weights", QString::fromStdString(tape), "--final", QString::fromStdString(model), "--quiet"});
    QVERIFY2(result.exitCode == 2 && result.err.contains("SGD with momentum keeps momentum buffers"), qPrintable(result.describe()));
    // Snapshot 0 is still there to compare with.
    result = runAudit({"match-weights", QString::fromStdString(tape), "--snapshot", "0", QString::fromStdString(model), "--quiet"});
    QVERIFY2(result.exitCode == 1 && result.out.contains("DIFFERS   layer.weight (parameter): 6 of 6 elements differ"), qPrintable(result.describe()));
}

void TestProvenanceCli::matchWeightsRefusals_data()
{
    QTest::addColumn<QStringList>("arguments");
    QTest::addColumn<QString>("message");
    QTest::newRow("no snapshot there") << QStringList{"{tape}", "--snapshot", "5", "{model}"}
                                       << "holds no snapshot before transaction 5; it holds snapshots 0, 12, 24, 30";
    QTest::newRow("neither option") << QStringList{"{tape}", "{model}"} << "give exactly one of --snapshot N and --final";
    QTest::newRow("both options") << QStringList{"{tape}", "--final", "--snapshot", "0", "{model}"} << "give exactly one of";
    QTest::newRow("truncated model") << QStringList{"{tape}", "--final", "{truncated}"} << "truncated.safetensors: not a valid safetensors file";
    QTest::newRow("model is not safetensors") << QStringList{"{tape}", "--final", "{text}"} << "notes.safetensors: not a valid safetensors file";
    QTest::newRow("model missing") << QStringList{"{tape}", "--final", "{dir}/nowhere.safetensors"} << "nowhere.safetensors";
    QTest::newRow("empty folder") << QStringList{"{tape}", "--final", "{empty}"} << "holds no .safetensors file";
    QTest::newRow("not a tape") << QStringList{"{model}", "--final", "{model}"} << "not a ZKDV tape";
    QTest::newRow("ambiguous names") << QStringList{"{tape}", "--final", "{ambiguous}"} << "match the tape's layout in more than one way";
    QTest::newRow("unsealed tape, final") << QStringList{"{unsealed}", "--final", "{model}"} << "the tape is unsealed, so its final state is not known";
    // Format 1.3, 7 transactions, snapshots every 4: no final snapshot; its optimizer keeps
    // state, so its final state digest cannot come from a model's weights.
    QTest::newRow("pre-1.5 tape without a final snapshot")
        << QStringList{QStringLiteral(ZKDV_TEST_DATA_DIR "/golden/cnn-sgd-1.3.zkdv"), "--final", "{model}"} << "holds no snapshot of its final state";
}

void TestProvenanceCli::matchWeightsRefusals()
{
    QFETCH(QStringList, arguments);
    QFETCH(QString, message);
    const std::string model = dir_.file("refusal.safetensors");
    writeModel(model, states_[transactions_]);
    const std::vector<std::uint8_t> bytes = readAll(model);
    writeAll(dir_.file("truncated.safetensors"), bytes, bytes.size() - 7);
    writeText(dir_.file("notes.safetensors"), "not tensors at all, just some notes of a length\n");
    std::filesystem::create_directories(dir_.file("empty"));
    Model ambiguous = states_[transactions_];
    ambiguous[0].name = "a.weight";
    ambiguous[1].name = "a.bias";
    ambiguous[2].name = "b.input_mean";
    ambiguous[3].name = "b.batches_seen";
    writeModel(dir_.file("ambiguous.safetensors"), ambiguous);
    if (!QFileInfo::exists(path("unsealed.zkdv"))) {
        SyntheticDemoOptions options;
        options.steps = 5;
        options.batchSize = 4;
        options.features = 4;
        options.classes = 3;
        options.seal = false;
        writeSyntheticDemoTape(dir_.file("unsealed.zkdv"), options);
    }
    const std::map<QString, QString> names = {
        {"{tape}", path("run.zkdv")}, {"{model}", QString::fromStdString(model)}, {"{truncated}", path("truncated.safetensors")},
        {"{text}", path("notes.safetensors")}, {"{empty}", path("empty")}, {"{ambiguous}", path("ambiguous.safetensors")},
        {"{unsealed}", path("unsealed.zkdv")}, {"{dir}", QString::fromStdString(dir_.path())}};
    QStringList expanded{"match-weights", "--quiet"};
    for (QString argument : arguments) {
        for (const auto& [name, value] : names)
            argument.replace(name, value);
        expanded << argument;
    }
    const Result result = runAudit(expanded);
    QVERIFY2(result.exitCode == 2, qPrintable(result.describe()));
    QVERIFY2(result.err.contains(message), qPrintable(result.describe()));
    QVERIFY2(result.out.isEmpty(), qPrintable(result.describe()));
}

// What the workstation's Tools checks stored, `info CASE` says too (its JSON and its text).
void TestProvenanceCli::infoSaysTheCasesProvenanceChecks()
{
    const std::string data = makeDataset("data-info");
    const QString commit = path("data-info.commit.json");
    QCOMPARE(runAudit({"dataset", "commit", QString::fromStdString(data), "-o", commit, "--quiet"}).exitCode, 0);
    const QString casePath = path("info.zkaudit");
    QCOMPARE(runAudit({"ingest", path("run.zkdv"), "--case", casePath, "--quiet"}).exitCode, 0);
    Result info = runAudit({"info", casePath, "--json"});
    QCOMPARE(jsonOf(info.out)["tapes"].toArray()[0].toObject()["provenance"].toArray().size(), 0);
    {
        CaseStore store(casePath.toStdString(), CaseStore::Access::ReadWrite);
        checkTapeDataset(store, store.tapes().front().id, commit.toStdString(), data, nullptr);
    }
    info = runAudit({"info", casePath, "--json"});
    QVERIFY2(info.exitCode == 0, qPrintable(info.describe()));
    const QJsonArray checks = jsonOf(info.out)["tapes"].toArray()[0].toObject()["provenance"].toArray();
    QCOMPARE(checks.size(), 1);
    QCOMPARE(checks[0].toObject()["kind"].toString(), QStringLiteral("dataset"));
    QCOMPARE(checks[0].toObject()["ok"].toBool(), true);
    const QString text = checks[0].toObject()["text"].toString();
    QVERIFY2(text.startsWith(QStringLiteral("Dataset matches data-info.commit.json")), qPrintable(text));
    const Result plain = runAudit({"info", casePath});
    QVERIFY2(plain.out.contains(text), qPrintable(plain.out));
}

QTEST_GUILESS_MAIN(TestProvenanceCli)
#include "test_provenance_cli.moc"
