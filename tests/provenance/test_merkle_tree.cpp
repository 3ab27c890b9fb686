// The dataset commitment's Merkle tree against an independent definition: RFC 6962's Merkle
// Tree Hash and audit path (split at the largest power of two below n, leaf prefix 0x00,
// node prefix 0x01), which the promote-the-odd-node construction must equal, computed here
// recursively with OpenSSL's one-shot SHA256() rather than zkdv's Sha256, and pinned values
// from Python's hashlib (the script is quoted below). The same for sha256-merkle-v2's counted
// root, SHA-256(0x02 || count, u64 little-endian || tree root), which commits the count that the
// tree root does not (docs/dataset-commitment.md, "The root").

#include <QtTest>

#include <openssl/sha.h>

#include <string>
#include <vector>

#include "zkdv/util/merkle_tree.h"
#include "zkdv/util/error.h"

using namespace zkdv;

namespace {

Digest sha256(const std::vector<std::uint8_t>& bytes)
{
    Digest digest{};
    SHA256(bytes.data(), bytes.size(), digest.data());
    return digest;
}

Digest item(int i)
{
    const std::string text = "sample-" + std::to_string(i);
    return sha256(std::vector<std::uint8_t>(text.begin(), text.end()));
}

std::vector<Digest> items(std::size_t n)
{
    std::vector<Digest> result;
    for (std::size_t i = 0; i < n; ++i)
        result.push_back(item(static_cast<int>(i)));
    return result;
}

std::size_t largestPowerOfTwoBelow(std::size_t n)
{
    std::size_t k = 1;
    while (k * 2 < n)
        k *= 2;
    return k;
}

// RFC 6962, section 2.1: MTH(D[n]).
Digest referenceRoot(const std::vector<Digest>& d, std::size_t begin, std::size_t end)
{
    if (end - begin == 1) {
        std::vector<std::uint8_t> leaf{0x00};
        leaf.insert(leaf.end(), d[begin].begin(), d[begin].end());
        return sha256(leaf);
    }
    const std::size_t k = largestPowerOfTwoBelow(end - begin);
    const Digest left = referenceRoot(d, begin, begin + k);
    const Digest right = referenceRoot(d, begin + k, end);
    std::vector<std::uint8_t> node{0x01};
    node.insert(node.end(), left.begin(), left.end());
    node.insert(node.end(), right.begin(), right.end());
    return sha256(node);
}

// RFC 6962, section 2.1.1: PATH(m, D[n]), listed from the leaf up.
std::vector<Digest> referencePath(std::size_t m, const std::vector<Digest>& d, std::size_t begin, std::size_t end)
{
    if (end - begin == 1)
        return {};
    const std::size_t k = largestPowerOfTwoBelow(end - begin);
    std::vector<Digest> path;
    if (m < k) {
        path = referencePath(m, d, begin, begin + k);
        path.push_back(referenceRoot(d, begin + k, end));
    } else {
        path = referencePath(m - k, d, begin + k, end);
        path.push_back(referenceRoot(d, begin, begin + k));
    }
    return path;
}

// sha256-merkle-v2's root, built here byte by byte with OpenSSL.
Digest referenceCountedRoot(const Digest& treeRoot, std::uint64_t count)
{
    std::vector<std::uint8_t> message{0x02};
    for (int byte = 0; byte < 8; ++byte)
        message.push_back(static_cast<std::uint8_t>(count >> (8 * byte)));
    message.insert(message.end(), treeRoot.begin(), treeRoot.end());
    return sha256(message);
}

}  // namespace

class TestMerkleTree : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void pinnedRoots_data();
    void pinnedRoots();
    void pinnedProof();
    void agreesWithRfc6962();
    void proofsVerifyAndForgeriesDoNot();
    void emptyTreeAndOutOfRangeLeafAreRefused();
    void proofLengthFollowsFromIndexAndCount();
    void aProofPassesAsNoOtherIndexOfItsCount();
    void aRootDoesNotCommitItsCount();
    void pinnedCountedRoots_data();
    void pinnedCountedRoots();
    void theCountedRootCommitsItsCount();
    void algorithmsAreNamed();
};

// Pinned with Python 3's hashlib, independently of this implementation:
//   H = lambda b: hashlib.sha256(b).digest()
//   def mth(l):
//       if len(l) == 1: return H(b'\x00' + l[0])
//       k = 1
//       while k * 2 < len(l): k *= 2
//       return H(b'\x01' + mth(l[:k]) + mth(l[k:]))
//   items = [H(b"sample-%d" % i) for i in range(7)]
//   mth(items[:n]).hex()
void TestMerkleTree::pinnedRoots_data()
{
    QTest::addColumn<int>("count");
    QTest::addColumn<QString>("root");
    QTest::newRow("1") << 1 << "f92dedbcc4fc213aa8a9d49f62d30bb935ef59d8eca47226338651b2ad926dce";
    QTest::newRow("2") << 2 << "f54ec7546afd856552aa3bff64bb6428a5a9ceeb46f889cc93157c4783a05f1c";
    QTest::newRow("3") << 3 << "25c0e54f6820010ace9255df1d120aebf5327c51086aa92b36850e5812c867cb";
    QTest::newRow("4") << 4 << "33030ace5c7c0c7742aab623bb0fb89335d21b34d2b1554e366f1a456d00adf1";
    QTest::newRow("5") << 5 << "2ec6786b73493a0e6a93702b665cdfa7e696593a496314ea6582408a59d95f86";
    QTest::newRow("7") << 7 << "86bcc000359e27fc46180a608a474ad254c951d8ffe05b823143a151dfea3abd";
}

void TestMerkleTree::pinnedRoots()
{
    QFETCH(int, count);
    QFETCH(QString, root);
    QCOMPARE(QString::fromStdString(toHex(MerkleTree(items(static_cast<std::size_t>(count))).root())), root);
}

// The same script's audit path: path(4, items[:7]) (RFC 6962 PATH).
void TestMerkleTree::pinnedProof()
{
    const MerkleTree tree(items(7));
    const MerkleProof proof = tree.proof(4);
    QCOMPARE(proof.leafIndex, std::uint64_t(4));
    QCOMPARE(proof.leafCount, std::uint64_t(7));
    QCOMPARE(proof.siblings.size(), std::size_t(3));
    QCOMPARE(toHex(proof.siblings[0]), std::string("80e4f4e170094e41f7984d86f95ad5e7cb5b0e1b0ad36b24b244df2f325f0eae"));
    QCOMPARE(toHex(proof.siblings[1]), std::string("de54ec466e11bf1bb2201b59d133c79e8f8411b82c3266fe824e2572f7a5093c"));
    QCOMPARE(toHex(proof.siblings[2]), std::string("33030ace5c7c0c7742aab623bb0fb89335d21b34d2b1554e366f1a456d00adf1"));
    QVERIFY(verifyMerkleProof(tree.root(), item(4), proof));
}

void TestMerkleTree::agreesWithRfc6962()
{
    for (std::size_t n = 1; n <= 70; ++n) {
        const std::vector<Digest> d = items(n);
        const MerkleTree tree(d);
        QVERIFY2(tree.root() == referenceRoot(d, 0, n), qPrintable(QStringLiteral("root of %1 leaves").arg(n)));
        QCOMPARE(tree.leafCount(), std::uint64_t(n));
        for (std::size_t m = 0; m < n; ++m)
            QVERIFY2(tree.proof(m).siblings == referencePath(m, d, 0, n), qPrintable(QStringLiteral("path of leaf %1 of %2").arg(m).arg(n)));
    }
}

void TestMerkleTree::proofsVerifyAndForgeriesDoNot()
{
    for (std::size_t n : {1u, 2u, 3u, 6u, 13u, 32u, 33u}) {
        const std::vector<Digest> d = items(n);
        const MerkleTree tree(d);
        for (std::size_t m = 0; m < n; ++m) {
            const MerkleProof proof = tree.proof(m);
            QVERIFY(verifyMerkleProof(tree.root(), d[m], proof));
            // Another item at this place.
            QVERIFY(!verifyMerkleProof(tree.root(), item(1000), proof));
            // The item claimed at another place (only the same digest could pass).
            MerkleProof moved = proof;
            moved.leafIndex = (m + 1) % n;
            if (n > 1)
                QVERIFY(!verifyMerkleProof(tree.root(), d[m], moved));
            // Index past the count, a count of zero.
            MerkleProof outside = proof;
            outside.leafIndex = n;
            QVERIFY(!verifyMerkleProof(tree.root(), d[m], outside));
            outside = proof;
            outside.leafCount = 0;
            QVERIFY(!verifyMerkleProof(tree.root(), d[m], outside));
            // A flipped bit in a sibling, a sibling too many or too few.
            if (!proof.siblings.empty()) {
                MerkleProof flipped = proof;
                flipped.siblings.back()[7] ^= 0x10;
                QVERIFY(!verifyMerkleProof(tree.root(), d[m], flipped));
                MerkleProof shorter = proof;
                shorter.siblings.pop_back();
                QVERIFY(!verifyMerkleProof(tree.root(), d[m], shorter));
            }
            MerkleProof longer = proof;
            longer.siblings.push_back(tree.root());
            QVERIFY(!verifyMerkleProof(tree.root(), d[m], longer));
            // A leaf hash passed off as an item: the prefixes keep levels apart.
            QVERIFY(!verifyMerkleProof(tree.root(), merkleLeafHash(d[m]), proof));
        }
    }
}

void TestMerkleTree::emptyTreeAndOutOfRangeLeafAreRefused()
{
    QVERIFY_THROWS_EXCEPTION(Error, MerkleTree(std::vector<Digest>{}));
    const MerkleTree tree(items(3));
    QVERIFY_THROWS_EXCEPTION(Error, tree.proof(3));
}

// A tape lays proofs end to end and a reader splits them by this length (tape format 5.7).
void TestMerkleTree::proofLengthFollowsFromIndexAndCount()
{
    for (std::size_t n = 1; n <= 70; ++n) {
        const MerkleTree tree(items(n));
        for (std::uint64_t i = 0; i < n; ++i)
            QCOMPARE(merkleProofLength(i, n), tree.proof(i).siblings.size());
    }
    QCOMPARE(merkleProofLength(0, 1), std::size_t(0));
    QCOMPARE(merkleProofLength(4, 5), std::size_t(1));  // the promoted last leaf meets one node
}

// With the count fixed, a proof names one index: no leaf's proof, with the siblings it has,
// passes as any other index of that tree (tape format 5.7: a row named as another sample).
void TestMerkleTree::aProofPassesAsNoOtherIndexOfItsCount()
{
    for (std::size_t n = 1; n <= 40; ++n) {
        const std::vector<Digest> d = items(n);
        const MerkleTree tree(d);
        for (std::uint64_t i = 0; i < n; ++i) {
            MerkleProof proof = tree.proof(i);
            for (std::uint64_t other = 0; other < n; ++other) {
                proof.leafIndex = other;
                QVERIFY2(verifyMerkleProof(tree.root(), d[i], proof) == (other == i),
                         qPrintable(QStringLiteral("leaf %1 of %2 as leaf %3").arg(i).arg(n).arg(other)));
            }
        }
    }
}

// The limit a tape's count runs into (docs/dataset-commitment.md): RFC 6962's root does not
// commit the number of leaves, so the path of leaf 4 of 5 (one sibling, the root of leaves
// 0-3, on the left) is also the path of leaf 1 of 2 to the same root. The count must come from
// where the root comes from (the commitment document, the published commitment), never from
// the tape alone.
void TestMerkleTree::aRootDoesNotCommitItsCount()
{
    const std::vector<Digest> d = items(5);
    const MerkleTree tree(d);
    MerkleProof proof = tree.proof(4);
    QCOMPARE(proof.siblings.size(), std::size_t(1));
    proof.leafIndex = 1;
    proof.leafCount = 2;
    QVERIFY(verifyMerkleProof(tree.root(), d[4], proof));
    // Within the true count it names one index only (above), and past it none.
    proof.leafCount = 5;
    QVERIFY(!verifyMerkleProof(tree.root(), d[4], proof));
    proof.leafIndex = 5;
    QVERIFY(!verifyMerkleProof(tree.root(), d[4], proof));
}

// The same script, sha256-merkle-v2:
//   H(b'\x02' + struct.pack('<Q', n) + mth(items[:n])).hex()
void TestMerkleTree::pinnedCountedRoots_data()
{
    QTest::addColumn<int>("count");
    QTest::addColumn<QString>("root");
    QTest::newRow("1") << 1 << "ae5dd7b84f533eca94cc265b3a514a8dad6d38d8d87e965ce54d23ca25fb23a0";
    QTest::newRow("2") << 2 << "e2a7f1f58093bc43fb4b3458f4f868d36db2e835946d98e0796a1ddb18c6c9a5";
    QTest::newRow("5") << 5 << "dd83202f570aae4d8f09f9d477d9c204f41c77990d8e9c1d0c018c6677919ead";
    QTest::newRow("7") << 7 << "2ac9737d997512593347b617cfcac739f2ec1a4e34c267638a00dcb3818d6363";
}

void TestMerkleTree::pinnedCountedRoots()
{
    QFETCH(int, count);
    QFETCH(QString, root);
    const MerkleTree tree(items(static_cast<std::size_t>(count)));
    QCOMPARE(QString::fromStdString(toHex(tree.publishedRoot(MerkleAlgorithm::V2))), root);
    QCOMPARE(QString::fromStdString(toHex(merkleCountedRoot(tree.root(), tree.leafCount()))), root);
    QVERIFY(tree.publishedRoot(MerkleAlgorithm::V1) == tree.root());
}

// The attack aRootDoesNotCommitItsCount shows, closed: under sha256-merkle-v2 the path of leaf 4
// of 5 reaches the same tree root as leaf 1 of 2, but the root counted with 2 is not the
// published one (counted with 5). Over every tree up to 24 leaves, every leaf's proof passes as
// no other (index, count) pair, counts up to 48, while under v1 some do (whenever the paths of
// the two counts agree).
void TestMerkleTree::theCountedRootCommitsItsCount()
{
    Sha256 hasher;
    {
        const std::vector<Digest> d = items(5);
        const MerkleTree tree(d);
        const Digest published = tree.publishedRoot(MerkleAlgorithm::V2);
        QVERIFY(published == referenceCountedRoot(referenceRoot(d, 0, 5), 5));
        MerkleProof proof = tree.proof(4);
        QVERIFY(verifyMerkleProof(MerkleAlgorithm::V2, published, d[4], proof, hasher));
        proof.leafIndex = 1;
        proof.leafCount = 2;
        QVERIFY(verifyMerkleProof(MerkleAlgorithm::V1, tree.root(), d[4], proof, hasher));   // the v1 limit
        QVERIFY(!verifyMerkleProof(MerkleAlgorithm::V2, published, d[4], proof, hasher));   // closed
        // What the proof reaches is still the tree root: only the count tells them apart.
        QVERIFY(merkleProofRoot(d[4], proof, hasher) == tree.root());
        // A forger who counts the root with the claim names another root than the published one.
        QCOMPARE(toHex(merkleCountedRoot(tree.root(), 2)), std::string("459f268af357d303ba791e27dd4f0082203f2ab7a8a672c80825e87a970f3a1e"));
        QVERIFY(verifyMerkleProof(MerkleAlgorithm::V2, merkleCountedRoot(tree.root(), 2), d[4], proof, hasher));
        QVERIFY(merkleCountedRoot(tree.root(), 2) != published);
    }
    std::size_t v1Passes = 0;
    for (std::size_t n = 1; n <= 24; ++n) {
        const std::vector<Digest> d = items(n);
        const MerkleTree tree(d);
        const Digest published = tree.publishedRoot(MerkleAlgorithm::V2);
        QVERIFY2(published == referenceCountedRoot(tree.root(), n), qPrintable(QStringLiteral("counted root of %1 leaves").arg(n)));
        for (std::uint64_t i = 0; i < n; ++i) {
            MerkleProof proof = tree.proof(i);
            for (std::uint64_t count = 1; count <= 48; ++count)
                for (std::uint64_t other = 0; other < count; ++other) {
                    proof.leafIndex = other;
                    proof.leafCount = count;
                    const bool same = other == i && count == n;
                    QVERIFY2(verifyMerkleProof(MerkleAlgorithm::V2, published, d[i], proof, hasher) == same,
                             qPrintable(QStringLiteral("leaf %1 of %2 as leaf %3 of %4").arg(i).arg(n).arg(other).arg(count)));
                    if (!same && verifyMerkleProof(MerkleAlgorithm::V1, tree.root(), d[i], proof, hasher))
                        ++v1Passes;
                }
        }
    }
    QVERIFY(v1Passes > 0);
}

void TestMerkleTree::algorithmsAreNamed()
{
    QVERIFY(merkleAlgorithmName(MerkleAlgorithm::V1) == "sha256-merkle-v1");
    QVERIFY(merkleAlgorithmName(MerkleAlgorithm::V2) == "sha256-merkle-v2");
    QVERIFY(merkleAlgorithmNamed("sha256-merkle-v2") == MerkleAlgorithm::V2);
    QVERIFY(merkleAlgorithmNamed("sha256-merkle-v1") == MerkleAlgorithm::V1);
    QVERIFY(!merkleAlgorithmNamed("sha256-merkle-v3"));
    QVERIFY(!merkleAlgorithmNamed("SHA256-MERKLE-V2"));
}

QTEST_APPLESS_MAIN(TestMerkleTree)
#include "test_merkle_tree.moc"
