#pragma once
// What an auditor found when checking a tape's links to the world (table provenance_checks,
// case schema version 15): its dataset commitment against the data, its snapshot 0 against a
// published starting checkpoint, its final state against the shipped model. Kept so the
// workstation shows them after the case is reopened; like notes, not part of any run's seal.
// Audit-side: no torch.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace zkdv {

class Database;

enum class ProvenanceKind { Dataset, StartCheckpoint, FinalModel };

// "dataset", "start-checkpoint", "final-model": as the case spells them.
const char* provenanceKindName(ProvenanceKind kind);
std::optional<ProvenanceKind> provenanceKindFromName(std::string_view name);
// Every kind, in the order above.
const std::vector<ProvenanceKind>& provenanceKinds();

struct ProvenanceCheck {
    std::int64_t id = 0;
    ProvenanceKind kind = ProvenanceKind::Dataset;
    std::string path;    // the commitment, or the model file or folder
    std::string sha256;  // hex of the file checked; "" for a folder of model shards
    bool ok = false;     // false: it differs
    std::string detail;  // a short line: what matched, or what differs
    std::string checkedAt;  // UTC, ISO 8601
};

// The checks of one tape. Not thread-safe; the Database must outlive it. Throws DatabaseError.
class ProvenanceChecks {
public:
    // A detail longer than this is cut: it is a summary, and a case is untrusted.
    static constexpr std::size_t kMaxDetailBytes = 4096;

    ProvenanceChecks(Database& db, std::int64_t tapeId) : db_(db), tapeId_(tapeId) {}

    // Stores `check` stamped with the time now (kept when already set) and returns it with
    // its id. Needs a writable connection. Throws Error when the case has no such tape.
    ProvenanceCheck add(ProvenanceCheck check);
    // The newest check of `kind`, or nullopt when there is none.
    std::optional<ProvenanceCheck> latest(ProvenanceKind kind);
    // Every check of the tape, oldest first.
    std::vector<ProvenanceCheck> all();

private:
    Database& db_;
    std::int64_t tapeId_;
};

}  // namespace zkdv
