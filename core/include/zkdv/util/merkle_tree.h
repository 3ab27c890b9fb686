#pragma once
// The binary Merkle tree of a dataset commitment (docs/dataset-commitment.md): its root over
// leaf digests, inclusion proofs for one leaf, and their check.
//
// leaf  = SHA-256(0x00 || digest)              one per committed item, in commitment order
// node  = SHA-256(0x01 || left || right)
// A level of odd length promotes its last node unchanged to the level above. The prefixes keep
// a leaf from being passed off as a node and the other way round (second-preimage attacks).

#include <cstdint>
#include <vector>

#include "zkdv/util/sha256.h"

namespace zkdv {

Digest merkleLeafHash(const Digest& itemDigest);
Digest merkleNodeHash(const Digest& left, const Digest& right);

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

    const Digest& root() const { return levels_.back().front(); }
    std::uint64_t leafCount() const { return levels_.front().size(); }
    // Throws Error when `leafIndex` is not below leafCount().
    MerkleProof proof(std::uint64_t leafIndex) const;

private:
    std::vector<std::vector<Digest>> levels_;  // levels_[0]: the leaf hashes; back(): the root
};

// How many siblings the proof of leaf `leafIndex` in a tree of `leafCount` leaves holds (the
// leaf's own promotions need none): a reader splits proofs laid end to end by it.
std::size_t merkleProofLength(std::uint64_t leafIndex, std::uint64_t leafCount);

// Whether `proof` leads from the item digest to `root`: false when the index is not below
// the count or the proof has a sibling too many or too few for them, so the siblings' number
// and sides are exactly those RFC 6962 gives leaf `leafIndex` of `leafCount`. The root does not
// commit the count: the path of leaf 4 of 5 is that of leaf 1 of 2 (one sibling, on the left),
// so a count must come from where the root comes from (docs/dataset-commitment.md).
bool verifyMerkleProof(const Digest& root, const Digest& itemDigest, const MerkleProof& proof);
// The same with the caller's hashing context, for a reader checking many proofs (a context
// made per node costs an allocation and a provider lookup).
bool verifyMerkleProof(const Digest& root, const Digest& itemDigest, const MerkleProof& proof, Sha256& hasher);

}  // namespace zkdv
