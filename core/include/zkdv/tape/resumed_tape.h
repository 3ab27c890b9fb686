#pragma once
// Root member `resumes` (since 1.10, spec 3.4): the tape a resumed run continues, and where.

#include <cstdint>

#include "zkdv/util/sha256.h"

namespace zkdv {

struct ResumedTape {
    Digest chainHead{};                  // the previous tape's chain head (its seal's digest)
    std::uint64_t size = 0;              // its size in bytes: with the chain head, its identity
    std::uint64_t transactionsBefore = 0;  // the run's transactions before this tape's first
    Digest stateDigest{};                // the state digest of its final snapshot: this tape's snapshot 0
};

}  // namespace zkdv
