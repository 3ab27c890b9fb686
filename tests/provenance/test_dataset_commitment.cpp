// Dataset commitments through the core API: the order and the document, edited and hostile
// documents, and a folder checked against its commitment.

#include <QtTest>

#include <filesystem>
#include <string>
#include <vector>

#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/provenance/dataset_check.h"
#include "zkdv/provenance/dataset_commitment.h"
#include "zkdv/provenance/dataset_files.h"
#include "zkdv/util/merkle_tree.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"

using namespace zkdv;
using test::writeText;

namespace {

CommittedFile fileOf(const std::string& path, const std::string& content)
{
    return CommittedFile{path, content.size(), Sha256::of(ByteSpan(std::string_view(content)))};
}

DatasetCommitment sample()
{
    return DatasetCommitment::of({fileOf("train/b.bin", "bbb"), fileOf("train/a.bin", "a"), fileOf("labels.csv", "x,y\n1,2\n")});
}

// Makes a folder of dataset files; returns its path.
std::string makeFolder(const test::TempDir& dir)
{
    const std::string root = dir.file("data");
    std::filesystem::create_directories(root + "/shards/nested");
    writeText(root + "/shards/0000.bin", "first shard");
    writeText(root + "/shards/0001.bin", "second shard");
    writeText(root + "/shards/nested/0002.bin", "third shard");
    writeText(root + "/README", "about the data");
    return root;
}

}  // namespace

class TestDatasetCommitment : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void orderIsByteByByte();
    void documentRoundTrips();
    void aVersion1DocumentStillReads();
    void editedCommitmentIsCaught_data();
    void editedCommitmentIsCaught();
    void hostileDocumentIsRefused_data();
    void hostileDocumentIsRefused();
    void folderIsHashedInCommitmentOrder();
    void folderCheckNamesEveryDifference();
    void givenFilesKeepTheirRelativePaths();
};

void TestDatasetCommitment::orderIsByteByByte()
{
    // '.' (0x2e) sorts before '/' (0x2f); upper case before lower; UTF-8 after ASCII.
    const DatasetCommitment commitment = DatasetCommitment::of(
        {fileOf("\xc3\xa9t\xc3\xa9", "1"), fileOf("a/b", "2"), fileOf("a.b", "3"), fileOf("B", "4"), fileOf("a", "5")});
    std::vector<std::string> paths;
    for (const CommittedFile& file : commitment.files)
        paths.push_back(file.path);
    QCOMPARE(paths, (std::vector<std::string>{"B", "a", "a.b", "a/b", "\xc3\xa9t\xc3\xa9"}));
    QVERIFY_THROWS_EXCEPTION(Error, DatasetCommitment::of({fileOf("a", "1"), fileOf("a", "2")}));
    QVERIFY_THROWS_EXCEPTION(Error, DatasetCommitment::of({fileOf("../a", "1")}));
    QVERIFY_THROWS_EXCEPTION(Error, DatasetCommitment::of({}));
}

void TestDatasetCommitment::documentRoundTrips()
{
    const DatasetCommitment commitment = sample();
    std::vector<Digest> digests;
    for (const CommittedFile& file : commitment.files)
        digests.push_back(file.sha256);
    // Written as sha256-merkle-v2: the root counts the tree's root with the leaves' number.
    QVERIFY(commitment.algorithm == MerkleAlgorithm::V2);
    QVERIFY(commitment.root == merkleCountedRoot(MerkleTree(digests).root(), 3));
    QVERIFY(commitment.computeTreeRoot() == MerkleTree(digests).root());
    const nlohmann::ordered_json document = commitment.toJson();
    QCOMPARE(document["format"].get<std::string>(), std::string("zkdv-dataset-commitment"));
    QCOMPARE(document["algorithm"].get<std::string>(), std::string("sha256-merkle-v2"));
    QCOMPARE(document["leaf_count"].get<int>(), 3);
    QCOMPARE(document["total_bytes"].get<int>(), 12);
    const DatasetCommitment back = DatasetCommitment::parse(toJsonText(document, 2));
    QVERIFY(back.root == commitment.root);
    QVERIFY(back.computeRoot() == commitment.root);
    QCOMPARE(back.files.size(), std::size_t(3));
    QCOMPARE(back.files[0].path, std::string("labels.csv"));
    QVERIFY(back.files[2].sha256 == commitment.files[2].sha256);
    QVERIFY(back.algorithm == MerkleAlgorithm::V2);
}

// A document of the first algorithm (written before tape format 1.14) still reads: its root is
// the tree's, and it round-trips as v1.
void TestDatasetCommitment::aVersion1DocumentStillReads()
{
    DatasetCommitment commitment = sample();
    commitment.algorithm = MerkleAlgorithm::V1;
    commitment.root = commitment.computeTreeRoot();
    const nlohmann::ordered_json document = commitment.toJson();
    QCOMPARE(document["algorithm"].get<std::string>(), std::string("sha256-merkle-v1"));
    const DatasetCommitment back = DatasetCommitment::parse(toJsonText(document));
    QVERIFY(back.algorithm == MerkleAlgorithm::V1);
    QVERIFY(back.computeRoot() == back.root);
    QVERIFY(back.root == back.computeTreeRoot());
    // The same leaves under v2 state another root: the counted one.
    QVERIFY(sample().root == merkleCountedRoot(back.root, 3));
}

// Edits that keep the document valid but change what its root commits to: caught by
// recomputing the root.
void TestDatasetCommitment::editedCommitmentIsCaught_data()
{
    QTest::addColumn<QString>("edit");
    QTest::newRow("a leaf's digest") << "digest";
    QTest::newRow("a leaf removed, counts fixed") << "remove";
    QTest::newRow("a leaf added, counts fixed") << "add";
    QTest::newRow("the root") << "root";
    // A v2 document relabelled v1 (or the other way round) states a root its leaves do not give.
    QTest::newRow("the algorithm") << "algorithm";
}

void TestDatasetCommitment::editedCommitmentIsCaught()
{
    QFETCH(QString, edit);
    nlohmann::ordered_json document = sample().toJson();
    if (edit == "digest") {
        document["leaves"][1]["sha256"] = toHex(Sha256::of(ByteSpan(std::string_view("other"))));
    } else if (edit == "remove") {
        document["total_bytes"] = document["total_bytes"].get<std::uint64_t>() - document["leaves"][2]["size"].get<std::uint64_t>();
        document["leaves"].erase(2);
        document["leaf_count"] = 2;
    } else if (edit == "add") {
        document["leaves"].push_back({{"path", "zzz"}, {"size", 0}, {"sha256", toHex(Sha256::of(ByteSpan()))}});
        document["leaf_count"] = 4;
    } else if (edit == "algorithm") {
        document["algorithm"] = "sha256-merkle-v1";
    } else {
        document["root"] = toHex(Sha256::of(ByteSpan(std::string_view("root"))));
    }
    const DatasetCommitment edited = DatasetCommitment::parse(toJsonText(document));
    QVERIFY(edited.computeRoot() != edited.root);
}

void TestDatasetCommitment::hostileDocumentIsRefused_data()
{
    QTest::addColumn<QString>("edit");
    QTest::addColumn<QString>("message");
    QTest::newRow("not JSON") << "text:{\"format\": " << "dataset commitment";
    QTest::newRow("an array") << "text:[1, 2]" << "expected a JSON object";
    QTest::newRow("deep nesting") << "deep" << "nest";
    QTest::newRow("another format") << "format" << "format: expected \"zkdv-dataset-commitment\"";
    QTest::newRow("version 2") << "version" << "version: this build reads version 1";
    QTest::newRow("another algorithm") << "algorithm" << "algorithm: expected \"sha256-merkle-v2\" or \"sha256-merkle-v1\"";
    QTest::newRow("count as text") << "count-text" << "leaf_count: expected a non-negative integer";
    QTest::newRow("huge count") << "count-huge" << "leaf_count: 18446744073709551615 is more than the limit";
    QTest::newRow("count off by one") << "count-off" << "leaf_count: states 4 leaves, the document lists 3";
    QTest::newRow("negative size") << "size" << "leaves[1].size: expected a non-negative integer";
    QTest::newRow("bad hex") << "hex" << "leaves[2].sha256: expected 64 hex digits";
    QTest::newRow("short root") << "root" << "root: expected 64 hex digits";
    QTest::newRow("leaf not an object") << "leaf" << "leaves[0]: expected an object";
    QTest::newRow("path climbs out") << "dotdot" << "leaves[0].path: the path has a \"..\" component";
    QTest::newRow("absolute path") << "absolute" << "leaves[0].path: the path is absolute";
    QTest::newRow("out of order") << "order" << "leaves[1].path: \"labels.csv\" is out of order";
    QTest::newRow("repeated path") << "repeat" << "leaves[1].path: \"labels.csv\" repeats";
    QTest::newRow("total bytes") << "total" << "total_bytes: states 13";
    QTest::newRow("missing leaves") << "no-leaves" << "missing member \"leaves\"";
}

void TestDatasetCommitment::hostileDocumentIsRefused()
{
    QFETCH(QString, edit);
    QFETCH(QString, message);
    nlohmann::ordered_json document = sample().toJson();
    std::string text;
    if (edit.startsWith("text:"))
        text = edit.mid(5).toStdString();
    else if (edit == "deep")
        text = std::string(100000, '[') + std::string(100000, ']');
    else {
        if (edit == "format")
            document["format"] = "zkdv-something-else";
        else if (edit == "version")
            document["version"] = 2;
        else if (edit == "algorithm")
            document["algorithm"] = "md5-list";
        else if (edit == "count-text")
            document["leaf_count"] = "3";
        else if (edit == "count-huge")
            document["leaf_count"] = UINT64_MAX;
        else if (edit == "count-off")
            document["leaf_count"] = 4;
        else if (edit == "size")
            document["leaves"][1]["size"] = -1;
        else if (edit == "hex")
            document["leaves"][2]["sha256"] = std::string(64, 'g');
        else if (edit == "root")
            document["root"] = "abcd";
        else if (edit == "leaf")
            document["leaves"][0] = 7;
        else if (edit == "dotdot")
            document["leaves"][0]["path"] = "../etc/passwd";
        else if (edit == "absolute")
            document["leaves"][0]["path"] = "/etc/passwd";
        else if (edit == "order")
            std::swap(document["leaves"][0], document["leaves"][1]);
        else if (edit == "repeat")
            document["leaves"][1] = document["leaves"][0];
        else if (edit == "total")
            document["total_bytes"] = 13;
        else if (edit == "no-leaves")
            document.erase("leaves");
        text = toJsonText(document);
    }
    try {
        DatasetCommitment::parse(text);
        QFAIL("accepted");
    } catch (const FormatError& error) {
        QVERIFY2(QString::fromStdString(error.what()).contains(message), error.what());
    }
}

void TestDatasetCommitment::folderIsHashedInCommitmentOrder()
{
    test::TempDir dir;
    const std::string root = makeFolder(dir);
    writeText(root + "/commit.json", "{}");
    const std::vector<DatasetFile> files = listDatasetFolder(root, root + "/commit.json");
    std::vector<std::string> paths;
    for (const DatasetFile& file : files)
        paths.push_back(file.path);
    // The commitment being written is left out.
    QCOMPARE(paths, (std::vector<std::string>{"README", "shards/0000.bin", "shards/0001.bin", "shards/nested/0002.bin"}));
    for (unsigned threads : {1u, 3u, 0u}) {
        const std::vector<CommittedFile> hashed = hashDatasetFiles(files, nullptr, threads);
        QCOMPARE(hashed.size(), files.size());
        QCOMPARE(hashed[1].path, std::string("shards/0000.bin"));
        QCOMPARE(hashed[1].size, std::uint64_t(11));
        QVERIFY(hashed[1].sha256 == Sha256::of(ByteSpan(std::string_view("first shard"))));
        QVERIFY(hashed[3].sha256 == Sha256::of(ByteSpan(std::string_view("third shard"))));
    }
    QVERIFY_THROWS_EXCEPTION(IoError, listDatasetFolder(dir.file("nowhere")));
}

void TestDatasetCommitment::folderCheckNamesEveryDifference()
{
    test::TempDir dir;
    const std::string root = makeFolder(dir);
    const DatasetCommitment commitment = DatasetCommitment::of(hashDatasetFiles(listDatasetFolder(root)));
    DatasetFolderCheck check = checkDatasetFolder(commitment, root, {}, false);
    QVERIFY(check.differences.empty());
    QCOMPARE(check.filesHashed, std::uint64_t(4));

    writeText(root + "/shards/0001.bin", "second shard, edited");
    std::filesystem::remove(root + "/shards/nested/0002.bin");
    writeText(root + "/shards/0003.bin", "a shard nobody committed");
    check = checkDatasetFolder(commitment, root, {}, false);
    QCOMPARE(check.differences.size(), std::size_t(3));
    QCOMPARE(check.differences[0].path, std::string("shards/0001.bin"));
    QCOMPARE(check.differences[0].finding, DatasetFinding::Changed);
    QVERIFY(check.differences[0].detail.find("committed 12 bytes") != std::string::npos);
    QCOMPARE(check.differences[1].path, std::string("shards/0003.bin"));
    QCOMPARE(check.differences[1].finding, DatasetFinding::Extra);
    QCOMPARE(check.differences[2].path, std::string("shards/nested/0002.bin"));
    QCOMPARE(check.differences[2].finding, DatasetFinding::Missing);

    check = checkDatasetFolder(commitment, root, {}, true);
    QCOMPARE(check.differences.size(), std::size_t(2));
}

void TestDatasetCommitment::givenFilesKeepTheirRelativePaths()
{
    test::TempDir dir;
    const std::string root = makeFolder(dir);
    const std::filesystem::path before = std::filesystem::current_path();
    std::filesystem::current_path(root);
    const std::vector<DatasetFile> files = listDatasetFiles({"./shards//0001.bin", "README"});
    QVERIFY_THROWS_EXCEPTION(Error, listDatasetFiles({root + "/README"}));
    QVERIFY_THROWS_EXCEPTION(Error, listDatasetFiles({"../data/README"}));
    QVERIFY_THROWS_EXCEPTION(IoError, listDatasetFiles({"shards"}));
    std::filesystem::current_path(before);
    QCOMPARE(files.size(), std::size_t(2));
    QCOMPARE(files[0].path, std::string("README"));
    QCOMPARE(files[1].path, std::string("shards/0001.bin"));
}

QTEST_APPLESS_MAIN(TestDatasetCommitment)
#include "test_dataset_commitment.moc"
