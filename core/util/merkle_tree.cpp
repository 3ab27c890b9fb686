#include "zkdv/util/merkle_tree.h"

#include <algorithm>
#include <array>

#include "zkdv/util/error.h"

namespace zkdv {

namespace {

constexpr std::uint8_t kLeafPrefix = 0x00;
constexpr std::uint8_t kNodePrefix = 0x01;
// Before the count and the tree root in sha256-merkle-v2's root: a byte no leaf's or node's
// message starts with, so a counted root is never the hash of a leaf or a node.
constexpr std::uint8_t kCountedRootPrefix = 0x02;
constexpr std::string_view kV1Name = "sha256-merkle-v1";
constexpr std::string_view kV2Name = "sha256-merkle-v2";

// Each hash in one update: a reader checking every batch row of a tape does little else.
Digest leafHash(Sha256& hasher, const Digest& itemDigest)
{
    std::array<std::uint8_t, 1 + sizeof(Digest)> message;
    message[0] = kLeafPrefix;
    std::copy(itemDigest.begin(), itemDigest.end(), message.begin() + 1);
    return hasher.update(ByteSpan(message.data(), message.size())).finish();
}

Digest nodeHash(Sha256& hasher, const Digest& left, const Digest& right)
{
    std::array<std::uint8_t, 1 + 2 * sizeof(Digest)> message;
    message[0] = kNodePrefix;
    std::copy(left.begin(), left.end(), message.begin() + 1);
    std::copy(right.begin(), right.end(), message.begin() + 1 + sizeof(Digest));
    return hasher.update(ByteSpan(message.data(), message.size())).finish();
}

Digest countedRoot(Sha256& hasher, const Digest& treeRoot, std::uint64_t leafCount)
{
    std::array<std::uint8_t, 1 + 8 + sizeof(Digest)> message;
    message[0] = kCountedRootPrefix;
    for (int byte = 0; byte < 8; ++byte)
        message[1 + byte] = static_cast<std::uint8_t>(leafCount >> (8 * byte));
    std::copy(treeRoot.begin(), treeRoot.end(), message.begin() + 9);
    return hasher.update(ByteSpan(message.data(), message.size())).finish();
}

}  // namespace

std::string_view merkleAlgorithmName(MerkleAlgorithm algorithm) { return algorithm == MerkleAlgorithm::V1 ? kV1Name : kV2Name; }

std::optional<MerkleAlgorithm> merkleAlgorithmNamed(std::string_view name)
{
    if (name == kV1Name)
        return MerkleAlgorithm::V1;
    if (name == kV2Name)
        return MerkleAlgorithm::V2;
    return std::nullopt;
}

Digest merkleCountedRoot(const Digest& treeRoot, std::uint64_t leafCount)
{
    Sha256 hasher;
    return countedRoot(hasher, treeRoot, leafCount);
}

Digest merklePublishedRoot(MerkleAlgorithm algorithm, const Digest& treeRoot, std::uint64_t leafCount)
{
    return algorithm == MerkleAlgorithm::V1 ? treeRoot : merkleCountedRoot(treeRoot, leafCount);
}

Digest merkleLeafHash(const Digest& itemDigest)
{
    Sha256 hasher;
    return leafHash(hasher, itemDigest);
}

Digest merkleNodeHash(const Digest& left, const Digest& right)
{
    Sha256 hasher;
    return nodeHash(hasher, left, right);
}

MerkleTree::MerkleTree(const std::vector<Digest>& itemDigests)
{
    if (itemDigests.empty())
        throw Error("a Merkle tree needs at least one leaf");
    Sha256 hasher;
    std::vector<Digest> level;
    level.reserve(itemDigests.size());
    for (const Digest& digest : itemDigests)
        level.push_back(leafHash(hasher, digest));
    levels_.push_back(std::move(level));
    while (levels_.back().size() > 1) {
        const std::vector<Digest>& below = levels_.back();
        std::vector<Digest> above;
        above.reserve((below.size() + 1) / 2);
        for (std::size_t i = 0; i + 1 < below.size(); i += 2)
            above.push_back(nodeHash(hasher, below[i], below[i + 1]));
        if (below.size() % 2 == 1)
            above.push_back(below.back());  // promoted unchanged
        levels_.push_back(std::move(above));
    }
}

MerkleProof MerkleTree::proof(std::uint64_t leafIndex) const
{
    if (leafIndex >= leafCount())
        throw Error("leaf " + std::to_string(leafIndex) + " is not in a tree of " + std::to_string(leafCount()) + " leaves");
    MerkleProof proof;
    proof.leafIndex = leafIndex;
    proof.leafCount = leafCount();
    std::uint64_t index = leafIndex;
    for (std::size_t level = 0; level + 1 < levels_.size(); ++level) {
        const std::vector<Digest>& nodes = levels_[level];
        const std::uint64_t sibling = index ^ 1u;
        if (sibling < nodes.size())
            proof.siblings.push_back(nodes[sibling]);
        index /= 2;
    }
    return proof;
}

std::size_t merkleProofLength(std::uint64_t leafIndex, std::uint64_t leafCount)
{
    std::size_t length = 0;
    for (std::uint64_t index = leafIndex, width = leafCount; width > 1; index /= 2, width = (width + 1) / 2)
        if (index % 2 == 1 || index + 1 < width)
            ++length;
    return length;
}

bool verifyMerkleProof(const Digest& root, const Digest& itemDigest, const MerkleProof& proof)
{
    Sha256 hasher;
    return verifyMerkleProof(root, itemDigest, proof, hasher);
}

bool verifyMerkleProof(const Digest& root, const Digest& itemDigest, const MerkleProof& proof, Sha256& hasher)
{
    const std::optional<Digest> reached = merkleProofRoot(itemDigest, proof, hasher);
    return reached && *reached == root;
}

bool verifyMerkleProof(MerkleAlgorithm algorithm, const Digest& publishedRoot, const Digest& itemDigest, const MerkleProof& proof,
                       Sha256& hasher)
{
    const std::optional<Digest> reached = merkleProofRoot(itemDigest, proof, hasher);
    if (!reached)
        return false;
    return (algorithm == MerkleAlgorithm::V1 ? *reached : countedRoot(hasher, *reached, proof.leafCount)) == publishedRoot;
}

std::optional<Digest> merkleProofRoot(const Digest& itemDigest, const MerkleProof& proof, Sha256& hasher)
{
    if (proof.leafCount == 0 || proof.leafIndex >= proof.leafCount)
        return std::nullopt;
    Digest hash = leafHash(hasher, itemDigest);
    std::uint64_t index = proof.leafIndex;
    std::uint64_t width = proof.leafCount;
    std::size_t used = 0;
    while (width > 1) {
        if (index % 2 == 1) {
            if (used == proof.siblings.size())
                return std::nullopt;
            hash = nodeHash(hasher, proof.siblings[used++], hash);
        } else if (index + 1 < width) {
            if (used == proof.siblings.size())
                return std::nullopt;
            hash = nodeHash(hasher, hash, proof.siblings[used++]);
        }  // else: the last node of an odd level, promoted
        index /= 2;
        width = (width + 1) / 2;
    }
    if (used != proof.siblings.size())
        return std::nullopt;
    return hash;
}

}  // namespace zkdv
