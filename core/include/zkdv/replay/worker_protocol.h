#pragma once
// The messages between a replay and its worker processes (docs/replay.md, "Containment"):
// length-prefixed binary frames over one socket, parsed with bounds on both sides because
// the worker runs the trainer's program and may be anything by the time it answers.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/replay_plan.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/tape/determinism_profile.h"
#include "zkdv/tape/numeric_environment.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/util/error.h"

namespace zkdv::worker {

// A frame is: u32 type, u32 payload length, payload (little-endian throughout).
constexpr std::size_t kFrameHeaderSize = 8;
// Larger frames are a protocol violation (an outcome of a model with 100,000 parameters is
// about 60 MB; a job carries the program, which is allowed to be large).
constexpr std::uint32_t kMaxResultFrame = 256u << 20;

enum class MessageType : std::uint32_t {
    // parent -> worker
    Job = 1,      // once, first: WorkerJob
    Segment = 2,  // ReplaySegment, sent when the worker is idle
    // worker -> parent
    Hello = 9,             // first, before the job: WorkerHello
    Ready = 10,            // the program is loaded; segments may come
    LoadFailed = 11,       // LoadFailure: why the program cannot be replayed (deterministic)
    Outcome = 12,          // one TransactionOutcome, in transaction order
    SegmentDone = 13,      // the segment sent last is finished
    MemoryExhausted = 14,  // u64 bytes refused; the worker exits right after
};

// A violation of the protocol by the other side (or a truncated frame).
class ProtocolError : public Error {
public:
    using Error::Error;
};

// Where the worker reads record payloads from (the same two sources runReplay chooses
// between), with the locations of every record the plan reads.
struct RecordPlan {
    bool embedded = false;         // payloads from the case (ingest --embed), else the tape file
    std::string tapePath;
    std::string casePath;
    std::int64_t tapeId = 0;
    std::uint64_t snapshotInterval = 1;
    Digest beforeFirstSnapshot{};  // what the first snapshot's frame links to
    std::map<std::uint64_t, RecordRef> transactions;
    std::map<std::uint64_t, RecordRef> snapshots;
};

// What the worker's libtorch is and sees: the parent does not load libtorch itself.
struct WorkerHello {
    std::string libtorchVersion;
    std::string cudaVersion;  // "" without CUDA
    int cudaDevices = 0;
    int defaultIntraOpThreads = 1;
    NumericEnvironment numerics;  // at libtorch's default intra-op threads
    // The worker's own determinism profile on the CPU, before a job's is put in force, and the
    // names of the CUDA devices it sees (cuda:0 first).
    DeterminismProfile determinism;
    std::vector<std::string> deviceNames;
};

// The determinism profile a worker that said `hello` runs a replay of `root` on `device`
// with, at `intraOpThreads`: what the run stores and what the worker puts in force.
DeterminismProfile workerDeterminism(const RootRecord& root, const WorkerHello& hello, const std::string& device, int intraOpThreads);

struct WorkerJob {
    std::string rootJson;
    std::vector<std::uint8_t> program;  // already checked against the root's digest
    std::string device = "cpu";
    int intraOpThreads = 0;
    Tolerance tolerance = Tolerance::defaults();
    // The envelope that decides which gradients are rounding noise, when not the tolerance's
    // (0): a calibrated run keeps the one its calibration left noise out with.
    double noiseEnvelope = 0;
    std::uint64_t memoryLimitBytes = 0;  // 0: none (RLIMIT_DATA otherwise, set before loading)
    RecordPlan records;
};

std::vector<std::uint8_t> frame(MessageType type, const std::vector<std::uint8_t>& payload);

std::vector<std::uint8_t> encodeHello(const WorkerHello& hello);
WorkerHello decodeHello(const std::vector<std::uint8_t>& payload);
std::vector<std::uint8_t> encodeJob(const WorkerJob& job);
WorkerJob decodeJob(const std::vector<std::uint8_t>& payload);
std::vector<std::uint8_t> encodeSegment(const ReplaySegment& segment);
ReplaySegment decodeSegment(const std::vector<std::uint8_t>& payload);
std::vector<std::uint8_t> encodeOutcome(const TransactionOutcome& outcome);
TransactionOutcome decodeOutcome(const std::vector<std::uint8_t>& payload);
std::vector<std::uint8_t> encodeText(const std::string& text);
std::string decodeText(const std::vector<std::uint8_t>& payload);
// Why a worker cannot replay the job, and whose failure that is: the sealed program's (it
// does not load or fails the checks) or the auditor's machine (no libtorch for it).
struct LoadFailure {
    UnverifiableCause cause = UnverifiableCause::ProgramRefused;
    std::string why;
};
std::vector<std::uint8_t> encodeLoadFailure(const LoadFailure& failure);
LoadFailure decodeLoadFailure(const std::vector<std::uint8_t>& payload);
std::vector<std::uint8_t> encodeCount(std::uint64_t value);
std::uint64_t decodeCount(const std::vector<std::uint8_t>& payload);

// Splits complete frames off the front of a receive buffer.
class FrameBuffer {
public:
    explicit FrameBuffer(std::uint32_t maxPayload) : maxPayload_(maxPayload) {}
    void append(const std::uint8_t* data, std::size_t size) { bytes_.insert(bytes_.end(), data, data + size); }
    // The next complete frame, if one has arrived. Throws ProtocolError on an unknown type or
    // a length above the bound.
    std::optional<std::pair<MessageType, std::vector<std::uint8_t>>> next();
    bool empty() const { return start_ == bytes_.size(); }
    // How many more bytes complete the frame that has begun (its header first), at most
    // `limit`; 0 when that frame would be larger than `limit` bytes in all.
    std::size_t pendingFrameBytes(std::size_t limit) const;

private:
    std::uint32_t maxPayload_;
    std::vector<std::uint8_t> bytes_;
    std::size_t start_ = 0;  // where the next frame begins
};

// Blocking frame I/O on a file descriptor, for the worker's side.
void writeFrame(int fd, MessageType type, const std::vector<std::uint8_t>& payload);
// false on a clean end of stream before a frame starts; throws ProtocolError otherwise.
bool readFrame(int fd, std::uint32_t maxPayload, MessageType& type, std::vector<std::uint8_t>& payload);

}  // namespace zkdv::worker
