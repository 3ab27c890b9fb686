#pragma once
// Replays one segment on one device: the torch side of the replay, behind an interface
// without torch types so the scheduler (replay_runner.cpp) stays light to compile.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "zkdv/audit/replay_outcome.h"
#include "zkdv/audit/replay_plan.h"
#include "zkdv/audit/tolerance.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/error.h"

namespace zkdv {

// Verified record payloads for a segment. Throws FormatError when a record cannot be read
// as the case remembers it. Each worker has its own source.
class RecordSource {
public:
    virtual ~RecordSource() = default;
    // The payload stays valid until the next call for the same kind of record.
    virtual ByteSpan snapshot(std::uint64_t beforeTransaction) = 0;
    virtual ByteSpan transaction(std::uint64_t index) = 0;
};

// What keeps the auditor's machine from replaying, not the tape or its program: this libtorch
// cannot run the program's kind, no optimizer contract knows the recording torch release, the
// memory limit or the records cannot be set up. Any other load failure is the program's.
class ReplayEnvironmentError : public Error {
public:
    using Error::Error;
};

struct ExecutorSetup {
    RootRecord root;
    std::vector<std::uint8_t> program;  // already checked against root.programSha256
    std::string device = "cpu";
    int intraOpThreads = 0;             // 0: leave libtorch's setting
    Tolerance tolerance = Tolerance::defaults();
    // The determinism profile the worker put in force for this replay (workerDeterminism):
    // with the numerical environment, it decides the regime.
    DeterminismProfile determinism;
    double noiseEnvelope = 0;  // which gradients are rounding noise; 0: tolerance.envelope
};

class SegmentExecutor {
public:
    virtual ~SegmentExecutor() = default;
    // Loads the program on the device and binds it to the tape's layout and optimizer
    // contract. Call on the thread that will replay. Throws Error saying what does not fit
    // (ReplayEnvironmentError when the fault is this machine's).
    static std::unique_ptr<SegmentExecutor> create(const ExecutorSetup& setup);

    // Replays segment.snapshot .. segment.lastTransaction, emitting one outcome per
    // transaction in order; stops early (without emitting the rest) when cancelled()
    // turns true.
    virtual void replay(const ReplaySegment& segment, RecordSource& records,
                        const std::function<void(TransactionOutcome&&)>& emit, const std::function<bool()>& cancelled) = 0;
};

// Process-wide replay settings (deterministic algorithms, the cuBLAS workspace needed for
// them); call once before the first executor is created.
void prepareDeterministicReplay();

}  // namespace zkdv
