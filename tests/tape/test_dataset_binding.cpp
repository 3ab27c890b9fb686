// Every batch row of a tape bound to a commitment of samples is checked where the tape is read
// (tape format 5.7; issue 48, finding 11): by verify and ingest, for every transaction, not only
// by the replay of the transactions a selection picks. The forger re-chains and re-seals the
// golden bound tape (regrinding the sampled checks' draws) with one transaction's row, sample
// index or proof changed; the check needs no kernel, so the reader refuses the tape at that
// transaction, naming the row and the sample. The count: a 1.12 tape's (sha256-merkle-v1) is
// the writer's claim, a 1.14 tape's (sha256-merkle-v2) is committed by its root, so the claim
// v1 lets pass is refused there. Torch-free: the forger only rewrites records.

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QtTest>

#include <algorithm>
#include <functional>
#include <utility>

#include <nlohmann/json.hpp>

#include "audit_run.h"
#include "dishonest_trainer.h"
#include "temp_dir.h"
#include "zkdv/provenance/dataset_commitment_file.h"
#include "zkdv/tape/batch_sample_check.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/merkle_tree.h"

using namespace zkdv;

namespace {

const std::string kGolden = ZKDV_TEST_DATA_DIR "/golden/mlp-bound-adam-1.12";
// The same recording with the writers of format 1.14: its root is the counted root (v2).
const std::string kGolden14 = ZKDV_TEST_DATA_DIR "/golden/mlp-bound-adam-1.14";
// Transaction 9 of the golden tape names samples [16, 2, 14, 31] of 40, each proof 6 siblings;
// the replay tests select others, and a forger's row in it must not wait for a replay.
constexpr std::uint64_t kVictim = 9;
constexpr std::uint64_t kRow = 1;  // sample 2
constexpr std::uint64_t kCount = 40;

DatasetCommitment goldenCommitment(const std::string& golden = kGolden) { return readDatasetCommitmentFile(golden + ".samples.commit.json"); }

MerkleTree goldenTree()
{
    std::vector<Digest> digests;
    for (const CommittedFile& sample : goldenCommitment().files)
        digests.push_back(sample.sha256);
    return MerkleTree(digests);
}

// A transaction's sample indices and per-row proofs, taken apart to be edited and put back.
struct NamedSamples {
    std::vector<std::uint64_t> indices;          // one micro-batch
    std::vector<std::vector<Digest>> proofs;      // one per row
};

NamedSamples namedSamples(const test::Payload& payload)
{
    NamedSamples named;
    named.indices = nlohmann::json::parse(payload.metadata.at("samples")).at(0).get<std::vector<std::uint64_t>>();
    const test::PayloadTensor* proofs = nullptr;
    for (const test::PayloadTensor& tensor : payload.tensors)
        if (tensor.name == "samples/proofs")
            proofs = &tensor;
    std::size_t at = 0;
    for (std::uint64_t index : named.indices) {
        named.proofs.emplace_back(merkleProofLength(index, kCount));
        for (Digest& sibling : named.proofs.back()) {
            std::copy(proofs->bytes.begin() + static_cast<std::ptrdiff_t>(at), proofs->bytes.begin() + static_cast<std::ptrdiff_t>(at + 32),
                      sibling.begin());
            at += 32;
        }
    }
    return named;
}

void putNamedSamples(test::Payload& payload, const NamedSamples& named)
{
    payload.metadata["samples"] = nlohmann::json::array({named.indices}).dump();
    for (test::PayloadTensor& tensor : payload.tensors)
        if (tensor.name == "samples/proofs") {
            tensor.bytes.clear();
            for (const std::vector<Digest>& proof : named.proofs)
                for (const Digest& sibling : proof)
                    tensor.bytes.insert(tensor.bytes.end(), sibling.begin(), sibling.end());
            tensor.shape = {static_cast<std::int64_t>(tensor.bytes.size() / 32), 32};
        }
}

using SampleEdit = std::function<void(NamedSamples&)>;

// The golden tape re-chained and re-sealed with the victim transaction's batch row changed
// (when `poison`) and its named samples passed through `edit`, as an independent writer would.
void forge(const std::string& to, bool poison, const SampleEdit& edit)
{
    test::rewriteTape(kGolden + ".zkdv", to, [&](test::RawRecord& record) {
        if (!test::isTransaction(record, kVictim))
            return;
        if (poison)
            test::scaleElement(record, "batch/0", kRow * 6 + 2, -3.0f);  // one feature of the row: a sample the commitment lacks
        if (edit) {
            test::Payload payload = test::readPayload(record);
            NamedSamples named = namedSamples(payload);
            edit(named);
            putNamedSamples(payload, named);
            test::writePayload(record, payload);
        }
    });
}

// A golden tape with members of the root's dataset replaced (re-chained, re-sealed).
void forgeDataset(const std::string& golden, const std::string& to, const nlohmann::json& members)
{
    test::rewriteTape(golden + ".zkdv", to, [&](test::RawRecord& record) {
        if (record.type != tape::RecordType::Root)
            return;
        nlohmann::json root = nlohmann::json::parse(record.payload.begin(), record.payload.end());
        root["dataset"].update(members);
        const std::string text = root.dump();
        record.payload.assign(text.begin(), text.end());
    });
}

// The golden tape with the root's dataset.leaf_count replaced.
void forgeCount(const std::string& to, std::uint64_t count, const std::string& golden = kGolden)
{
    forgeDataset(golden, to, {{"leaf_count", count}});
}

QJsonObject jsonOf(const QString& text) { return QJsonDocument::fromJson(text.toUtf8()).object(); }

class RowDigests : public TapeVisitor {
public:
    explicit RowDigests(const DatasetCommitment& commitment) : commitment_(commitment) {}
    void onTransaction(const TransactionRecord& transaction, const RecordLocation&) override
    {
        for (std::size_t m = 0; m < transaction.samples.size(); ++m)
            for (std::size_t row = 0; row < transaction.samples[m].size(); ++row) {
                ++rows;
                if (sampleDigest(transaction.microBatches[m].batch, row) != commitment_.files.at(transaction.samples[m][row]).sha256)
                    ++different;
            }
    }
    std::size_t rows = 0;
    std::size_t different = 0;

private:
    const DatasetCommitment& commitment_;
};

// A file of its own per forgery: the forger's writer creates, never replaces.
std::string freshName(const test::TempDir& dir, const char* stem)
{
    static int made = 0;
    return dir.file(std::string(stem) + "-" + std::to_string(++made) + ".zkdv");
}

}  // namespace

Q_DECLARE_METATYPE(SampleEdit)

class TestDatasetBinding : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void theHonestGoldenTapesVerifyAndIngest_data();
    void theHonestGoldenTapesVerifyAndIngest();
    void theReaderDigestsEachRowAsTheCommitmentDoes();
    void aForgedRowOrProofIsRefusedAtItsTransaction_data();
    void aForgedRowOrProofIsRefusedAtItsTransaction();
    void verifyAndIngestRefuseAPoisonedRowNoReplayWouldSelect();
    void aSmallerCountIsRefusedWhereItsPathsDiffer();
    void aCountTheCommitmentDoesNotStateIsNamedAgainstTheDocument();
    void aClaimedCountIsRefusedUnderTheCountedRoot();
    void aVersion1RootIsRefusedInA114Tape();

private:
    test::TempDir dir_;
};

void TestDatasetBinding::theHonestGoldenTapesVerifyAndIngest_data()
{
    QTest::addColumn<QString>("golden");
    QTest::addColumn<bool>("countCommitted");
    QTest::newRow("1.12, sha256-merkle-v1") << QString::fromStdString(kGolden) << false;
    QTest::newRow("1.14, sha256-merkle-v2") << QString::fromStdString(kGolden14) << true;
}

void TestDatasetBinding::theHonestGoldenTapesVerifyAndIngest()
{
    QFETCH(QString, golden);
    QFETCH(bool, countCommitted);
    const std::string tape = golden.toStdString() + ".zkdv";
    const TapeSummary summary = scanTape(tape);
    QVERIFY2(summary.complete(), summary.problem ? summary.problem->describe().c_str() : "");
    QCOMPARE(summary.transactionCount, std::uint64_t(14));
    QCOMPARE(summary.root->dataset->countCommitted(), countCommitted);
    // The document's root is the tape's: the tree root (v1) or its counted root (v2).
    const DatasetCommitment commitment = goldenCommitment(golden.toStdString());
    QVERIFY(commitment.algorithm == summary.root->dataset->algorithm);
    QVERIFY(commitment.root == summary.root->dataset->root);
    QVERIFY(commitment.computeRoot() == commitment.root);
    QVERIFY(!declarationMismatch(*summary.root->dataset, commitment.computeTreeRoot(), commitment.files.size()));
    const test::AuditRun verified = test::runAuditCommand({QStringLiteral("verify"), QString::fromStdString(tape), QStringLiteral("--json")});
    QVERIFY2(verified.exitCode == 0, qPrintable(verified.describe()));
    const QJsonObject dataset = jsonOf(verified.out).value(QStringLiteral("dataset")).toObject();
    QCOMPARE(dataset.value(QStringLiteral("count_committed")).toBool(), countCommitted);
    QCOMPARE(dataset.value(QStringLiteral("algorithm")).toString(),
             countCommitted ? QStringLiteral("sha256-merkle-v2") : QStringLiteral("sha256-merkle-v1"));
    const test::AuditRun ingested = test::runAuditCommand({QStringLiteral("ingest"), QString::fromStdString(tape), QStringLiteral("--case"),
                                                           QString::fromStdString(freshName(dir_, "honest") + ".zkaudit"), QStringLiteral("--quiet")});
    QVERIFY2(ingested.exitCode == 0, qPrintable(ingested.describe()));
}

// The reader's zkdv-sample-v1 digest of each recorded row (bytes only, no torch) is the digest the
// commitment of samples holds for the sample the row names: what zkdv.dataset.commit_samples
// computed from the dataset's tensors.
void TestDatasetBinding::theReaderDigestsEachRowAsTheCommitmentDoes()
{
    const DatasetCommitment commitment = goldenCommitment();
    QCOMPARE(commitment.files.size(), std::size_t(kCount));
    RowDigests digests(commitment);
    QVERIFY(scanTape(kGolden + ".zkdv", &digests).complete());
    QCOMPARE(digests.rows, std::size_t(14 * 4));
    QCOMPARE(digests.different, std::size_t(0));
}

void TestDatasetBinding::aForgedRowOrProofIsRefusedAtItsTransaction_data()
{
    QTest::addColumn<bool>("poison");
    QTest::addColumn<SampleEdit>("edit");
    QTest::addColumn<QString>("why");
    const MerkleTree tree = goldenTree();
    const QString notSample2 = QStringLiteral("row 1 is not committed sample 2 of 40");
    // Sample 3's proof has sample 2's length (6 siblings), so only the check can tell them apart.
    QCOMPARE(merkleProofLength(3, kCount), merkleProofLength(2, kCount));
    const std::vector<Digest> proofOf3 = tree.proof(3).siblings;

    QTest::newRow("poisoned row, forged proof") << true << SampleEdit([](NamedSamples& named) {
        Digest forged;
        forged.fill(0xab);
        named.proofs[kRow].assign(named.proofs[kRow].size(), forged);
    }) << notSample2;
    QTest::newRow("poisoned row, its sample's proof") << true << SampleEdit() << notSample2;
    QTest::newRow("another index, with that index's proof") << false << SampleEdit([proofOf3](NamedSamples& named) {
        named.indices[kRow] = 3;
        named.proofs[kRow] = proofOf3;
    }) << QStringLiteral("row 1 is not committed sample 3 of 40");
    QTest::newRow("another index's proof") << false << SampleEdit([proofOf3](NamedSamples& named) { named.proofs[kRow] = proofOf3; })
                                            << notSample2;
    QTest::newRow("an index past the count") << false << SampleEdit([](NamedSamples& named) { named.indices[kRow] = kCount; })
                                              << QStringLiteral("holds 40, not a sample index below 40");
    // The siblings' total kept, so the tensor's size is right: one proof short, the next long.
    QTest::newRow("a proof a sibling short, the next one long") << false << SampleEdit([](NamedSamples& named) {
        named.proofs[kRow + 1].push_back(named.proofs[kRow].back());
        named.proofs[kRow].pop_back();
    }) << notSample2;
    QTest::newRow("a proof a sibling long") << false << SampleEdit([](NamedSamples& named) {
        named.proofs[kRow].push_back(named.proofs[kRow].front());
    }) << QStringLiteral("\"samples/proofs\" must be U8 [24, 32]");
    QTest::newRow("rows renamed as each other") << false << SampleEdit([](NamedSamples& named) {
        std::swap(named.indices[0], named.indices[kRow]);
        std::swap(named.proofs[0], named.proofs[kRow]);
    }) << QStringLiteral("row 0 is not committed sample 2 of 40");
}

void TestDatasetBinding::aForgedRowOrProofIsRefusedAtItsTransaction()
{
    QFETCH(bool, poison);
    QFETCH(SampleEdit, edit);
    QFETCH(QString, why);
    const std::string forged = freshName(dir_, "forged");
    forge(forged, poison, edit);
    const TapeSummary summary = scanTape(forged);
    QCOMPARE(summary.status, TapeStatus::Corrupt);
    QVERIFY(summary.problem);
    const std::string problem = summary.problem->describe();
    QVERIFY2(summary.problem->transactionIndex == kVictim, problem.c_str());
    QCOMPARE(summary.transactionCount, kVictim);
    QVERIFY2(problem.find(why.toStdString()) != std::string::npos, problem.c_str());
}

// The finding: a poisoned row with a forged proof used to pass verify and ingest, and an audit
// whose selection missed its transaction was PASSED. Now both commands refuse the tape (exit 1),
// naming the transaction, the row and the sample, and the case gets no tape to select from.
void TestDatasetBinding::verifyAndIngestRefuseAPoisonedRowNoReplayWouldSelect()
{
    const std::string forged = freshName(dir_, "poisoned");
    forge(forged, true, [](NamedSamples& named) {
        Digest forgedSibling;
        forgedSibling.fill(0x5a);
        named.proofs[kRow].assign(named.proofs[kRow].size(), forgedSibling);
    });
    const test::AuditRun verified = test::runAuditCommand({QStringLiteral("verify"), QString::fromStdString(forged), QStringLiteral("--json")});
    QVERIFY2(verified.exitCode == 1, qPrintable(verified.describe()));
    const QJsonObject summary = jsonOf(verified.out);
    QCOMPARE(summary.value(QStringLiteral("status")).toString(), QStringLiteral("corrupt"));
    const QJsonObject problem = summary.value(QStringLiteral("problem")).toObject();
    QCOMPARE(problem.value(QStringLiteral("transaction")).toInteger(), qint64(kVictim));
    QVERIFY2(problem.value(QStringLiteral("message")).toString().contains(QStringLiteral("row 1 is not committed sample 2 of 40")),
             qPrintable(verified.describe()));

    const std::string casePath = dir_.file("poisoned.zkaudit");
    const test::AuditRun ingested = test::runAuditCommand(
        {QStringLiteral("ingest"), QString::fromStdString(forged), QStringLiteral("--case"), QString::fromStdString(casePath), QStringLiteral("--json")});
    QVERIFY2(ingested.exitCode == 1, qPrintable(ingested.describe()));
    const QJsonObject file = jsonOf(ingested.out).value(QStringLiteral("files")).toArray().at(0).toObject();
    QCOMPARE(file.value(QStringLiteral("result")).toString(), QStringLiteral("rejected"));
    const QString error = file.value(QStringLiteral("error")).toString();
    QVERIFY2(error.contains(QStringLiteral("transaction 9")) && error.contains(QStringLiteral("row 1 is not committed sample 2")), qPrintable(error));
}

// A root does not commit its count (test_merkle_tree: aRootDoesNotCommitItsCount). A tape that
// claims fewer samples than the commitment holds is refused wherever a named index or a path
// it needs differs under the claimed count: here at transaction 0, whose sample 25 is past 16.
void TestDatasetBinding::aSmallerCountIsRefusedWhereItsPathsDiffer()
{
    const std::string forged = freshName(dir_, "count16");
    forgeCount(forged, 16);
    const TapeSummary summary = scanTape(forged);
    QCOMPARE(summary.status, TapeStatus::Corrupt);
    const std::string problem = summary.problem->describe();
    QVERIFY2(summary.problem->transactionIndex == std::uint64_t(0), problem.c_str());
    QVERIFY2(problem.find("holds 25, not a sample index below 16") != std::string::npos, problem.c_str());
    const test::AuditRun verified = test::runAuditCommand({QStringLiteral("verify"), QString::fromStdString(forged), QStringLiteral("--quiet")});
    QCOMPARE(verified.exitCode, 1);
}

// The limit, stated with its attack: the golden tape names no sample whose path differs between
// 39 and 40 leaves (none is 38 or 39), so a claim of 39 reads like the truth from the tape alone;
// binding the count in the tape is a format change (docs/dataset-commitment.md). Against the
// commitment document the auditor holds (the workstation's Check Dataset Commitment) the count
// is compared with the root and the claim is named.
void TestDatasetBinding::aCountTheCommitmentDoesNotStateIsNamedAgainstTheDocument()
{
    const std::string forged = freshName(dir_, "count39");
    forgeCount(forged, 39);
    const TapeSummary summary = scanTape(forged);
    QVERIFY2(summary.complete(), summary.problem ? summary.problem->describe().c_str() : "");
    QCOMPARE(summary.root->dataset->leafCount, std::uint64_t(39));

    QVERIFY(!summary.root->dataset->countCommitted());

    const DatasetCommitment commitment = goldenCommitment();
    QVERIFY(commitment.algorithm == MerkleAlgorithm::V1);
    const std::optional<std::string> claimed = declarationMismatch(*summary.root->dataset, commitment.root, commitment.files.size());
    QVERIFY(claimed);
    QVERIFY2(claimed->find("a count of 39 samples, the commitment holds 40 samples") != std::string::npos, claimed->c_str());
    const TapeSummary honest = scanTape(kGolden + ".zkdv");
    QVERIFY(!declarationMismatch(*honest.root->dataset, commitment.root, commitment.files.size()));
    DatasetDeclaration other = *honest.root->dataset;
    other.root[0] ^= 1;
    const std::optional<std::string> elsewhere = declarationMismatch(other, commitment.root, commitment.files.size());
    QVERIFY(elsewhere && elsewhere->find("bound to another commitment") != std::string::npos);
    // verify's text labels the count of a v1 binding as the tape's claim.
    const test::AuditRun verified = test::runAuditCommand({QStringLiteral("verify"), QString::fromStdString(forged)});
    QVERIFY2(verified.exitCode == 0 && verified.out.contains(QStringLiteral("the root does not commit the count, which is the tape's claim")),
             qPrintable(verified.describe()));
}

// The same claim on the 1.14 golden tape (sha256-merkle-v2): every row's proof still reaches the
// tree root, but counted with 39 it is not the tape's root, so the reader refuses the tape at
// transaction 0, naming the row and the sample, and so do verify and ingest. A forger who counts
// the root with the claim gets a tape that reads, but whose root is not the commitment's, and
// the document names the count the root commits.
void TestDatasetBinding::aClaimedCountIsRefusedUnderTheCountedRoot()
{
    const std::string forged = freshName(dir_, "count39-v2");
    forgeCount(forged, 39, kGolden14);
    const TapeSummary summary = scanTape(forged);
    QCOMPARE(summary.status, TapeStatus::Corrupt);
    const std::string problem = summary.problem->describe();
    QVERIFY2(summary.problem->transactionIndex == std::uint64_t(0), problem.c_str());
    QVERIFY2(problem.find("row 0 is not committed sample") != std::string::npos && problem.find(" of 39: ") != std::string::npos &&
                 problem.find("with the count 39 (sha256-merkle-v2") != std::string::npos,
             problem.c_str());

    const test::AuditRun verified = test::runAuditCommand({QStringLiteral("verify"), QString::fromStdString(forged), QStringLiteral("--json")});
    QVERIFY2(verified.exitCode == 1, qPrintable(verified.describe()));
    const QJsonObject found = jsonOf(verified.out).value(QStringLiteral("problem")).toObject();
    QCOMPARE(found.value(QStringLiteral("transaction")).toInteger(), qint64(0));
    QVERIFY2(found.value(QStringLiteral("message")).toString().contains(QStringLiteral("row 0 is not committed sample")), qPrintable(verified.describe()));
    const test::AuditRun ingested =
        test::runAuditCommand({QStringLiteral("ingest"), QString::fromStdString(forged), QStringLiteral("--case"),
                               QString::fromStdString(dir_.file("count39-v2.zkaudit")), QStringLiteral("--json")});
    QVERIFY2(ingested.exitCode == 1, qPrintable(ingested.describe()));
    const QJsonObject file = jsonOf(ingested.out).value(QStringLiteral("files")).toArray().at(0).toObject();
    QCOMPARE(file.value(QStringLiteral("result")).toString(), QStringLiteral("rejected"));
    const QString error = file.value(QStringLiteral("error")).toString();
    QVERIFY2(error.contains(QStringLiteral("transaction 0")) && error.contains(QStringLiteral("row 0 is not committed sample")), qPrintable(error));

    // Recounted: the root counts 39, the tape reads, and it is not the commitment's.
    const DatasetCommitment commitment = goldenCommitment(kGolden14);
    const Digest treeRoot = commitment.computeTreeRoot();
    const std::string recounted = freshName(dir_, "recounted39-v2");
    forgeDataset(kGolden14, recounted, {{"leaf_count", 39}, {"root", toHex(merkleCountedRoot(treeRoot, 39))}});
    const TapeSummary read = scanTape(recounted);
    QVERIFY2(read.complete(), read.problem ? read.problem->describe().c_str() : "");
    QVERIFY(read.root->dataset->root != commitment.root);
    const std::optional<std::string> named = declarationMismatch(*read.root->dataset, treeRoot, commitment.files.size());
    QVERIFY(named);
    QVERIFY2(named->find("counted as 39 samples, the commitment holds 40 samples") != std::string::npos, named->c_str());
    // The published v1 pair (tree root, count) binds a v2 tape as well: its counted root.
    QVERIFY(!declarationMismatch(*scanTape(kGolden14 + ".zkdv").root->dataset, treeRoot, commitment.files.size()));
}

// The algorithm follows the version (spec 5.7): a 1.14 root naming the first algorithm (with the
// tree root, whose count would be a claim again) is refused at the root, and so is a 1.12 root
// naming the counted one.
void TestDatasetBinding::aVersion1RootIsRefusedInA114Tape()
{
    const std::string weaker = freshName(dir_, "v1-in-1.14");
    forgeDataset(kGolden14, weaker, {{"algorithm", "sha256-merkle-v1"}, {"root", toHex(goldenCommitment(kGolden14).computeTreeRoot())}});
    TapeSummary summary = scanTape(weaker);
    QCOMPARE(summary.status, TapeStatus::Corrupt);
    std::string problem = summary.problem->describe();
    QVERIFY2(summary.problem->recordIndex == 0, problem.c_str());
    QVERIFY2(problem.find("dataset.algorithm must be \"sha256-merkle-v2\" in a tape of format 1.14") != std::string::npos, problem.c_str());

    const std::string stronger = freshName(dir_, "v2-in-1.12");
    forgeDataset(kGolden, stronger, {{"algorithm", "sha256-merkle-v2"}});
    summary = scanTape(stronger);
    QCOMPARE(summary.status, TapeStatus::Corrupt);
    problem = summary.problem->describe();
    QVERIFY2(problem.find("dataset.algorithm must be \"sha256-merkle-v1\" in a tape of format 1.12") != std::string::npos, problem.c_str());
}

QTEST_GUILESS_MAIN(TestDatasetBinding)
#include "test_dataset_binding.moc"
