#include "zkdv/worker/replay_worker.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <memory>
#include <new>

#include <c10/core/CPUAllocator.h>
#include <sys/resource.h>
#include <unistd.h>

#include "segment_executor.h"
#include "zkdv/replay/fork_server.h"
#include "zkdv/replay/worker_protocol.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/replay_store.h"
#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/tensor/determinism_probe.h"
#include "zkdv/tensor/torch_build.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

namespace {

using worker::MessageType;
using worker::RecordPlan;

int channel = -1;

// Says how much was refused and ends the worker: an allocation that fails under the limit
// is the program needing more than the tape suggests, and nothing after it can be trusted
// to finish. Only async-signal-safe calls: the heap is exhausted.
[[noreturn]] void memoryExhausted(std::uint64_t bytes)
{
    std::uint8_t message[worker::kFrameHeaderSize + 8];
    writeLittleEndian<std::uint32_t>(message, static_cast<std::uint32_t>(MessageType::MemoryExhausted));
    writeLittleEndian<std::uint32_t>(message + 4, 8);
    writeLittleEndian<std::uint64_t>(message + 8, bytes);
    if (channel >= 0) {
        ssize_t ignored = write(channel, message, sizeof message);
        (void)ignored;
    }
    _exit(kReplayWorkerExitMemory);
}

void newHandler() { memoryExhausted(0); }

// libtorch's CPU allocator throws when malloc fails, and the segment executor would report
// that as a training step that does not run (diverged); under a memory limit it is the limit.
class LimitWatchingAllocator : public c10::Allocator {
public:
    explicit LimitWatchingAllocator(c10::Allocator* inner) : inner_(inner) {}
    // libtorch 1.13 declares `allocate(size_t) const`, 2.x `allocate(size_t)` and a pure
    // `copy_data`: both signatures are defined, and whichever the headers declare is the
    // override (the other is a plain overload), so one source builds on both lanes.
    c10::DataPtr allocate(size_t n) const { return watched(n); }
    c10::DataPtr allocate(size_t n) { return watched(n); }
    void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }
    c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }

private:
    c10::DataPtr watched(size_t n) const
    {
        try {
            return inner_->allocate(n);
        } catch (...) {
            memoryExhausted(n);
        }
    }

    c10::Allocator* inner_;
};

class TapeRecordSource : public RecordSource {
public:
    explicit TapeRecordSource(const RecordPlan& plan) : reader_(plan.tapePath), plan_(plan) {}

    ByteSpan snapshot(std::uint64_t k) override
    {
        auto it = plan_.snapshots.find(k);
        if (it == plan_.snapshots.end())
            throw FormatError("the case holds no snapshot before transaction " + std::to_string(k));
        return reader_.payload(it->second, tape::RecordType::Snapshot);
    }

    ByteSpan transaction(std::uint64_t t) override
    {
        auto it = plan_.transactions.find(t);
        if (it == plan_.transactions.end())
            throw FormatError("the case holds no transaction " + std::to_string(t));
        return reader_.payload(it->second, tape::RecordType::Transaction);
    }

private:
    RecordReader reader_;
    const RecordPlan& plan_;
};

// Payloads copied into the case (ingest --embed), for when the tape file is gone. The case
// keeps each record's digest, so a payload is checked by rebuilding its frame on the
// digest of the record before it.
class EmbeddedRecordSource : public RecordSource {
public:
    explicit EmbeddedRecordSource(const RecordPlan& plan)
        : case_(plan.casePath, CaseStore::Access::ReadOnly), store_(case_.database()), plan_(plan)
    {
    }

    ByteSpan snapshot(std::uint64_t k) override
    {
        const RecordRef& ref = find(plan_.snapshots, k, "snapshot before transaction");
        const Digest previous = k == 0 ? plan_.beforeFirstSnapshot : find(plan_.transactions, k - 1, "transaction").digest;
        return load(ref, tape::RecordType::Snapshot, previous, snapshot_);
    }

    ByteSpan transaction(std::uint64_t t) override
    {
        const RecordRef& ref = find(plan_.transactions, t, "transaction");
        const Digest previous = t % plan_.snapshotInterval == 0 ? find(plan_.snapshots, t, "snapshot before transaction").digest
                                                                : find(plan_.transactions, t - 1, "transaction").digest;
        return load(ref, tape::RecordType::Transaction, previous, transaction_);
    }

private:
    static const RecordRef& find(const std::map<std::uint64_t, RecordRef>& refs, std::uint64_t key, const char* what)
    {
        auto it = refs.find(key);
        if (it == refs.end())
            throw FormatError(std::string("the case holds no ") + what + " " + std::to_string(key));
        return it->second;
    }

    ByteSpan load(const RecordRef& ref, tape::RecordType type, const Digest& previous, std::vector<std::uint8_t>& storage)
    {
        std::optional<std::vector<std::uint8_t>> payload = store_.embeddedPayload(plan_.tapeId, ref.index);
        if (!payload)
            throw FormatError("record " + std::to_string(ref.index) + " is not embedded in the case");
        storage = std::move(*payload);
        const FrameHeader header = frameHeader(static_cast<std::uint32_t>(type), tape::kFlagCritical, storage.size(), previous);
        if (frameDigest(header, {ByteSpan(storage)}, hasher_) != ref.digest)
            throw FormatError("record " + std::to_string(ref.index) + "'s embedded payload does not hash to the digest ingested with it");
        return ByteSpan(storage);
    }

    CaseStore case_;
    ReplayStore store_;
    const RecordPlan& plan_;
    Sha256 hasher_;
    std::vector<std::uint8_t> snapshot_, transaction_;
};

void applyMemoryLimit(std::uint64_t bytes)
{
    if (bytes == 0)
        return;
    // RLIMIT_DATA counts private writable memory (heap, anonymous mappings), not the
    // address space libtorch's libraries and reservations occupy.
    rlimit limit{};
    limit.rlim_cur = limit.rlim_max = static_cast<rlim_t>(bytes);
    if (setrlimit(RLIMIT_DATA, &limit) != 0)
        throw Error(std::string("cannot set the replay worker's memory limit: ") + std::strerror(errno));
}

// Puts the replay's determinism profile in force before anything runs on the device, and
// checks that it holds: the run stores this profile as the one its workers ran with.
void putInForce(const DeterminismProfile& wanted, const std::string& device)
{
    applyDeterminismProfile(wanted);
    const DeterminismProfile running = currentDeterminismProfile(device);
    const std::map<std::string, std::string> want = wanted.members(), have = running.members();
    for (const auto& [name, value] : want) {
        if (name.rfind("device", 0) == 0 || name == "optimizer.foreach" || name == "optimizer.fused" || name == "intra_op_threads" ||
            name == "set_by_recorder")
            continue;  // facts of the machine and the run, not switches
        auto it = have.find(name);
        const std::string actual = it == have.end() ? "(none)" : it->second;
        if (actual != value)
            throw Error("this libtorch cannot run the training's determinism profile: " + name + " is " + actual + " where the replay needs " + value);
    }
}

}  // namespace

int runReplayWorker(int channelFd)
{
    channel = channelFd;
    MessageType type;
    std::vector<std::uint8_t> payload;
    try {
        // Before anything can start CUDA: cuBLAS reads its workspace setting once.
        prepareDeterministicReplay();
        worker::WorkerHello hello;
        hello.libtorchVersion = libtorchVersion();
        hello.cudaVersion = cudaVersion();
        hello.cudaDevices = cudaDeviceCount();
        hello.defaultIntraOpThreads = defaultIntraOpThreads();
        hello.numerics = numericEnvironment();
        hello.determinism = currentDeterminismProfile("cpu");
        hello.deviceNames = cudaDeviceNames();
        worker::writeFrame(channelFd, MessageType::Hello, worker::encodeHello(hello));
        if (!worker::readFrame(channelFd, UINT32_MAX, type, payload) || type != MessageType::Job)
            throw worker::ProtocolError("the first message is not a job");
        const worker::WorkerJob job = worker::decodeJob(payload);
        payload = {};

        std::unique_ptr<SegmentExecutor> executor;
        std::unique_ptr<RecordSource> source;
        worker::LoadFailure failure;
        try {
            try {
                applyMemoryLimit(job.memoryLimitBytes);
            } catch (const Error& error) {
                throw ReplayEnvironmentError(error.what());
            }
            static LimitWatchingAllocator allocator(c10::GetCPUAllocator());
            c10::SetCPUAllocator(&allocator, /*priority=*/100);
            std::set_new_handler(newHandler);
            ExecutorSetup setup;
            setup.root = RootRecord::parse(ByteSpan(std::string_view(job.rootJson)));
            setup.program = job.program;
            setup.device = job.device;
            setup.intraOpThreads = job.intraOpThreads;
            setup.tolerance = job.tolerance;
            try {
                setup.determinism = worker::workerDeterminism(setup.root, hello, job.device, job.intraOpThreads > 0 ? job.intraOpThreads : hello.defaultIntraOpThreads);
                putInForce(setup.determinism, job.device);
            } catch (const Error& error) {
                throw ReplayEnvironmentError(error.what());
            }
            setup.noiseEnvelope = job.noiseEnvelope;
            executor = SegmentExecutor::create(setup);
            try {
                if (job.records.embedded)
                    source = std::make_unique<EmbeddedRecordSource>(job.records);
                else
                    source = std::make_unique<TapeRecordSource>(job.records);
            } catch (const std::exception& error) {
                throw ReplayEnvironmentError(error.what());
            }
        } catch (const ReplayEnvironmentError& error) {
            failure = {UnverifiableCause::Environment, error.what()};
        } catch (const std::exception& error) {
            // The program was checked against the tape's digest: what does not load is the trainer's.
            failure = {UnverifiableCause::ProgramRefused, error.what()};
        }
        if (!executor || !source) {
            worker::writeFrame(channelFd, MessageType::LoadFailed, worker::encodeLoadFailure(failure));
            return 0;
        }
        worker::writeFrame(channelFd, MessageType::Ready, {});
        while (worker::readFrame(channelFd, worker::kMaxResultFrame, type, payload)) {
            if (type != MessageType::Segment)
                throw worker::ProtocolError("expected a segment");
            const ReplaySegment segment = worker::decodeSegment(payload);
            executor->replay(
                segment, *source,
                [&](TransactionOutcome&& outcome) { worker::writeFrame(channelFd, MessageType::Outcome, worker::encodeOutcome(outcome)); },
                [] { return false; });
            worker::writeFrame(channelFd, MessageType::SegmentDone, {});
        }
        return 0;
    } catch (const std::exception& error) {
        std::fprintf(stderr, "zkdv-replay-worker: %s\n", error.what());
        return kReplayWorkerExitProtocol;
    }
}

int runReplayForkServer(int controlFd)
{
    return worker::ForkServer::serve(controlFd, [] {
        const int status = runReplayWorker(3);
        std::fflush(nullptr);
        std::cout.flush();
        return status;
    });
}

}  // namespace zkdv
