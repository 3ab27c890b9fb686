#pragma once
// Constants of the tape format (docs/tape-format.md), shared by the writer and the reader.

#include <cstdint>
#include <string_view>

namespace zkdv::tape {

inline constexpr char kMagic[8] = {'Z', 'K', 'D', 'V', 'T', 'A', 'P', 'E'};
inline constexpr std::uint16_t kMajorVersion = 1;
inline constexpr std::uint16_t kMinorVersion = 14;
// From this minor version on, sampled checks are drawn keyed by the chain (spec 5.2).
inline constexpr std::uint16_t kChainBoundSamplingMinor = 3;
// From this minor version on, a sealed tape ends with the snapshot of its final state (spec 2.4).
inline constexpr std::uint16_t kFinalSnapshotMinor = 5;
inline constexpr bool hasFinalSnapshot(std::uint16_t minor) { return minor >= kFinalSnapshotMinor; }
// From this minor version on, a root may declare scheduled optimizer options (spec 3.3).
inline constexpr std::uint16_t kScheduleMinor = 6;
// The most scheduler steps a root's schedule.epoch, or one transaction's schedule/epoch past
// the one before, may count (spec 3.3): an auditor recomputes every one of them, so a hostile
// tape must not make it count to 2^64.
inline constexpr std::uint64_t kMaxScheduleEpochAdvance = std::uint64_t(1) << 20;
// From this minor version on, a transaction may record gradient transforms (spec 5.1).
inline constexpr std::uint16_t kGradientTransformMinor = 7;
// From this minor version on, a root may declare torch.amp.GradScaler's dynamic loss scale (spec 5.6).
inline constexpr std::uint16_t kGradScalerMinor = 8;
// From this minor version on, a transaction may record what its scheduler's steps read and
// kept (schedule/metrics, schedule/state: ReduceLROnPlateau, spec 3.3).
inline constexpr std::uint16_t kScheduleInputsMinor = 9;
// From this minor version on, a root may name the tape it continues (root member resumes, spec 3.4).
inline constexpr std::uint16_t kResumeMinor = 10;
// From this minor version on, the seal's signature is null or a trainer's signature that
// readers check (spec 7.1).
inline constexpr std::uint16_t kSignatureMinor = 11;
// From this minor version on, a root may declare the dataset commitment its batches are drawn
// from, and transactions then name their samples with Merkle proofs (spec 5.7).
inline constexpr std::uint16_t kDatasetMinor = 12;
// From this minor version on, a root may record the determinism profile of its device (spec 3.5).
inline constexpr std::uint16_t kDeterminismMinor = 13;
// From this minor version on, the root's dataset commitment is sha256-merkle-v2, whose root
// commits the number of samples (spec 5.7); before, sha256-merkle-v1, whose count is a claim.
inline constexpr std::uint16_t kCountedDatasetMinor = 14;
// The most numbers a scheduler's own state (schedule/state) holds.
inline constexpr std::size_t kMaxSchedulerStateValues = 16;
inline constexpr std::size_t kFileHeaderSize = 16;
inline constexpr std::size_t kFrameHeaderSize = 56;
inline constexpr std::size_t kDigestSize = 32;
inline constexpr std::uint32_t kFlagCritical = 1u;
inline constexpr std::uint32_t kKnownFlags = kFlagCritical;
inline constexpr int kDefaultSnapshotInterval = 12;

enum class RecordType : std::uint32_t {
    Root = 1,
    Program = 2,
    Snapshot = 3,
    Transaction = 4,
    Seal = 5,
};

// "root", "program", …; "unknown" for types this build does not know.
std::string_view recordTypeName(std::uint32_t type);
bool isKnownRecordType(std::uint32_t type);

// Zero padding after a payload of `length` bytes so the next frame starts 8-aligned.
inline constexpr std::uint64_t paddingFor(std::uint64_t length) { return (8 - length % 8) % 8; }
inline constexpr std::uint64_t frameSize(std::uint64_t payloadLength)
{
    return kFrameHeaderSize + payloadLength + paddingFor(payloadLength) + kDigestSize;
}

}  // namespace zkdv::tape
