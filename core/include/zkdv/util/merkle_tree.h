#pragma once
// The binary Merkle tree of a dataset commitment (docs/dataset-commitment.md): its root over
// leaf digests, inclusion proofs for one leaf, and their check.
//
// leaf  = SHA-256(0x00 || digest)              one per committed item, in commitment order
// node  = SHA-256(0x01 || left || right)
// A level of odd length promotes its last node unchanged to the level above. The prefixes keep
// a leaf from being passed off as a node and the other way round (second-preimage attacks).
//
// The tree's root (RFC 6962's Merkle Tree Hash) does not commit the number of leaves: the path
// of leaf 4 of 5 is that of leaf 1 of 2. A commitment publishes one of two roots, its algorithm:
// sha256-merkle-v1  the tree's root itself (the count is a separate claim)
// sha256-merkle-v2  the counted root SHA-256(0x02 || leaf count, u64 little-endian || tree's root),
//                   which commits the count: another count gives another root

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "zkdv/util/sha256.h"

namespace zkdv {

Digest merkleLeafHash(const Digest& itemDigest);
Digest merkleNodeHash(const Digest& left, const Digest& right);

// Which root a commitment publishes (docs/dataset-commitment.md, "The tree").
enum class MerkleAlgorithm {
    V1,  // "sha256-merkle-v1": the tree's root; it does not commit the count
    V2,  // "sha256-merkle-v2": the counted root, which does
};
// "sha256-merkle-v1", "sha256-merkle-v2".
std::string_view merkleAlgorithmName(MerkleAlgorithm algorithm);
// The algorithm of that name; nullopt for any other.
std::optional<MerkleAlgorithm> merkleAlgorithmNamed(std::string_view name);

// sha256-merkle-v2's root: SHA-256(0x02 || leafCount as u64 little-endian || treeRoot).
Digest merkleCountedRoot(const Digest& treeRoot, std::uint64_t leafCount);
// The root `algorithm` publishes for a tree with `treeRoot` and `leafCount` leaves.
Digest merklePublishedRoot(MerkleAlgorithm algorithm, const Digest& treeRoot, std::uint64_t leafCount);

// The path from one leaf to the root: the sibling of each node on it that has one, from the
// leaf level up. Which side each sibling is on follows from the index and the leaf count.
struct MerkleProof {
    std::uint64_t leafIndex = 0;
    std::uint64_t leafCount = 0;
    std::vector<Digest> siblings;
};

class MerkleTree {
public:
    // Keeps every level (2n − 1 digests at most) so that proofs cost nothing to cut.
    // Throws Error when `itemDigests` is empty: a commitment holds at least one item.
    explicit MerkleTree(const std::vector<Digest>& itemDigests);

    // The tree's root (RFC 6962's Merkle Tree Hash): sha256-merkle-v1's published root.
    const Digest& root() const { return levels_.back().front(); }
    std::uint64_t leafCount() const { return levels_.front().size(); }
    // The root `algorithm` publishes: root() for V1, merkleCountedRoot(root(), leafCount()) for V2.
    Digest publishedRoot(MerkleAlgorithm algorithm) const { return merklePublishedRoot(algorithm, root(), leafCount()); }
    // Throws Error when `leafIndex` is not below leafCount().
    MerkleProof proof(std::uint64_t leafIndex) const;

private:
    std::vector<std::vector<Digest>> levels_;  // levels_[0]: the leaf hashes; back(): the root
};

// How many siblings the proof of leaf `leafIndex` in a tree of `leafCount` leaves holds (the
// leaf's own promotions need none): a reader splits proofs laid end to end by it.
std::size_t merkleProofLength(std::uint64_t leafIndex, std::uint64_t leafCount);

// The tree root `proof` leads to from the item digest; nullopt when the index is not below the
// count or the proof has a sibling too many or too few for them, so the siblings' number and
// sides are exactly those RFC 6962 gives leaf `leafIndex` of `leafCount`. Takes the caller's
// hashing context, for a reader checking many proofs (a context made per node costs an
// allocation and a provider lookup).
std::optional<Digest> merkleProofRoot(const Digest& itemDigest, const MerkleProof& proof, Sha256& hasher);

// Whether `proof` leads from the item digest to the tree root `root` (sha256-merkle-v1). The tree
// root does not commit the count: the path of leaf 4 of 5 is that of leaf 1 of 2 (one sibling,
// on the left), so under v1 a count must come from where the root comes from
// (docs/dataset-commitment.md).
bool verifyMerkleProof(const Digest& root, const Digest& itemDigest, const MerkleProof& proof);
bool verifyMerkleProof(const Digest& root, const Digest& itemDigest, const MerkleProof& proof, Sha256& hasher);
// Whether `proof` leads to the tree root whose published root under `algorithm`, with the
// proof's leafCount, is `publishedRoot`: under V2 the proof must reach a tree root and the count
// must then give the published root, so a proof claiming another count fails.
bool verifyMerkleProof(MerkleAlgorithm algorithm, const Digest& publishedRoot, const Digest& itemDigest, const MerkleProof& proof,
                       Sha256& hasher);

}  // namespace zkdv
