#include "zkdv/tape/tape_scanner.h"

#include <algorithm>
#include <charconv>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "zkdv/tape/batch_sample_check.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/sampling_schedule.h"
#include "zkdv/tape/recorded_optimizer_options.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/tape_signature.h"
#include "zkdv/util/crc32.h"
#include "zkdv/util/huge_page_allocator.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

std::string_view tapeStatusName(TapeStatus status)
{
    switch (status) {
    case TapeStatus::Sealed: return "sealed";
    case TapeStatus::Unsealed: return "unsealed";
    case TapeStatus::Truncated: return "truncated";
    case TapeStatus::Corrupt: return "corrupt";
    }
    return "corrupt";
}

std::optional<SamplingPlausibility> TapeSummary::samplingPlausibility() const
{
    if (!root)
        return std::nullopt;
    return zkdv::samplingPlausibility(root->updateCheckProbability, root->stateCheckProbability, drawnChecks);
}

std::string TapeProblem::recordText() const
{
    if (!recordType)
        return {};
    if (transactionIndex)
        return "transaction " + std::to_string(*transactionIndex);
    if (!tape::isKnownRecordType(*recordType))
        return "unknown type " + std::to_string(*recordType);
    return std::string(tape::recordTypeName(*recordType));
}

std::string TapeProblem::describe() const
{
    const std::string kind = recordText();
    return "record " + std::to_string(recordIndex) + (kind.empty() ? "" : " (" + kind + ")") + " at byte " + std::to_string(byteOffset) +
           ": " + message;
}

namespace {

// The tape is read in order with pread() into a few reused buffers of this size (a window
// each): the bytes are copied once from the page cache instead of first-touching a memory
// map page by page (a page fault and TLB miss every 4 KiB on the in-order thread). Frames
// in a window are hashed on worker threads while the previous window is checked in order.
constexpr std::uint64_t kWindowBytes = 8u << 20;
// A quick look at the root needs little more than the root record.
constexpr std::uint64_t kHeaderOnlyWindowBytes = 256u << 10;
constexpr std::size_t kBatchFrames = 16384;
// A frame that does not fit in a window is read through the memory map instead, and one
// larger than this hands its pages back while being hashed.
constexpr std::uint64_t kLargeFrame = 64u << 20;
constexpr std::uint64_t kHashChunk = 16u << 20;

struct Frame {
    std::uint64_t offset = 0;
    const std::uint8_t* bytes = nullptr;  // the frame's first byte, in the batch's window or the map
    std::uint32_t type = 0;
    std::uint32_t flags = 0;
    std::uint64_t length = 0;
    std::uint64_t size = 0;
    Digest computed{};
};

struct Batch {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::vector<Frame> frames;
    // Bytes [begin, begin + windowSize) of the file; empty for a single frame too large for
    // a window, which is read through the memory map.
    HugePageVector<std::uint8_t> window;
    std::uint64_t windowSize = 0;
    // A framing problem right after the last frame of this batch, and what it means.
    std::optional<TapeProblem> stop;
    TapeStatus stopStatus = TapeStatus::Corrupt;
    std::vector<std::future<void>> hashing;
    // The whole-file digest up to this batch's end, which also reads its window.
    std::shared_future<void> fileHashed;

    Batch() = default;
    Batch(Batch&&) = default;
    Batch& operator=(Batch&&) = default;
    // Nothing may still read the window when it goes, not even while an exception unwinds.
    ~Batch()
    {
        for (auto& task : hashing)
            if (task.valid())
                task.wait();
        if (fileHashed.valid())
            fileHashed.wait();
    }
};

std::string hex32(std::uint32_t value)
{
    char text[11];
    std::snprintf(text, sizeof text, "0x%08x", value);
    return text;
}

// A few threads kept for the whole scan, taking tasks in the order they were submitted
// (starting threads per batch cost a stack's page faults each time). A task may wait for a
// task submitted before it, never for a later one, so the order rules out deadlock.
class WorkerPool {
public:
    explicit WorkerPool(unsigned threads)
    {
        for (unsigned i = 0; i < threads; ++i)
            threads_.emplace_back([this] { work(); });
    }

    // Runs what is still queued, then stops.
    ~WorkerPool()
    {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        for (std::thread& thread : threads_)
            thread.join();
    }

    template <typename Function>
    auto submit(Function function) -> std::future<decltype(function())>
    {
        auto task = std::make_shared<std::packaged_task<decltype(function())()>>(std::move(function));
        auto result = task->get_future();
        {
            std::lock_guard<std::mutex> lock(mutex_);
            queue_.emplace_back([task] { (*task)(); });
        }
        wake_.notify_one();
        return result;
    }

private:
    void work()
    {
        for (;;) {
            std::function<void()> task;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
                if (queue_.empty())
                    return;
                task = std::move(queue_.front());
                queue_.pop_front();
            }
            task();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::function<void()>> queue_;
    bool stopping_ = false;
    std::vector<std::thread> threads_;
};

// Waits for a future on every way out of a scope (tasks refer to the scope's variables).
template <typename T>
struct WaitOnExit {
    std::future<T>& future;
    ~WaitOnExit()
    {
        if (future.valid())
            future.wait();
    }
};

class Scanner {
public:
    Scanner(const std::string& path, TapeVisitor* visitor, const ScanOptions& options)
        : file_(path), visitor_(visitor), options_(options)
    {
        start();
    }

    Scanner(ByteSpan bytes, const std::string& name, TapeVisitor* visitor, const ScanOptions& options)
        : file_(bytes, name), visitor_(visitor), options_(options)
    {
        start();
    }

    void start()
    {
        summary_.path = file_.path();
        summary_.fileSize = file_.size();
        unsigned hardware = std::max(1u, std::thread::hardware_concurrency());
        threads_ = options_.hashThreads ? options_.hashThreads : std::min(hardware, 4u);
    }

    TapeSummary run()
    {
        readFileHeader();
        std::uint64_t offset = tape::kFileHeaderSize;
        std::optional<Batch> pending;
        if (!stopped_) {
            // Record digests, the whole-file digest and the walk a batch ahead.
            pool_ = std::make_unique<WorkerPool>(threads_ + (fileHasher_ ? 1u : 0u) + 1u);
            pending = collect(offset);
        }
        while (pending) {
            // The next window is read and its frame headers walked on a thread of its own
            // (which then starts hashing it) while this one checks the pending batch in order.
            std::future<std::optional<Batch>> next;
            WaitOnExit<std::optional<Batch>> waitForNext{next};
            if (!pending->stop && offset < file_.size() && !options_.headerOnly)
                next = pool().submit([this, &offset]() { return collect(offset); });
            for (auto& task : pending->hashing)
                task.get();
            bool carryOn = process(*pending);
            if (pending->window.empty())
                file_.release(pending->begin, pending->end - pending->begin);
            recycle(*pending);
            if (options_.progress) {
                options_.progress->report(pending->end, file_.size(), "verifying");
                if (options_.progress->cancelRequested()) {
                    drain(next);
                    throw OperationCancelled();
                }
            }
            if (!carryOn) {
                drain(next);
                break;
            }
            if (next.valid())
                pending = next.get();
            else
                pending.reset();
        }
        finish();
        return std::move(summary_);
    }

private:
    // Waits for the batch being collected and for its hashing, whole-file digest included.
    static void drain(std::future<std::optional<Batch>>& next)
    {
        if (!next.valid())
            return;
        std::optional<Batch> batch = next.get();
        if (!batch)
            return;
        for (auto& task : batch->hashing)
            if (task.valid())
                task.wait();
    }

    void readFileHeader()
    {
        ByteSpan bytes = file_.bytes();
        const std::size_t known = std::min<std::uint64_t>(bytes.size, sizeof tape::kMagic);
        // An empty file maps to no bytes at all (a null pointer), which memcmp may not see.
        if (bytes.size == 0 || std::memcmp(bytes.data, tape::kMagic, known) != 0) {
            std::size_t at = 0;
            while (at < known && bytes.data[at] == static_cast<std::uint8_t>(tape::kMagic[at]))
                ++at;
            throw NotATapeError(file_.path() + " is not a ZKDV tape: expected the magic \"ZKDVTAPE\"" +
                                    (bytes.size == 0 ? std::string(", found an empty file") : ""),
                                at);
        }
        if (bytes.size < tape::kFileHeaderSize) {
            summary_.status = TapeStatus::Truncated;
            summary_.problem = TapeProblem{0, bytes.size, "file ends inside the 16-byte file header"};
            stopped_ = true;
            return;
        }
        summary_.formatMajor = readLittleEndian<std::uint16_t>(bytes.data + 8);
        summary_.formatMinor = readLittleEndian<std::uint16_t>(bytes.data + 10);
        if (summary_.formatMajor != tape::kMajorVersion)
            throw NotATapeError(file_.path() + ": tape format major version " + std::to_string(summary_.formatMajor) +
                                    " is not supported (this build reads version " + std::to_string(tape::kMajorVersion) + ")",
                                8);
        std::uint32_t reserved = readLittleEndian<std::uint32_t>(bytes.data + 12);
        if (reserved != 0) {
            corrupt(0, 12, "file header reserved field must be 0, found " + hex32(reserved));
            return;
        }
        previous_ = Sha256::of(bytes.sub(0, tape::kFileHeaderSize));
        summary_.validBytes = tape::kFileHeaderSize;
        if (options_.computeFileSha256)
            fileHasher_.emplace();
    }

    // A batch's storage (its window and frame list) comes from batches already checked.
    void takeStorage(Batch& batch, std::uint64_t& capacity)
    {
        capacity = options_.headerOnly ? kHeaderOnlyWindowBytes : kWindowBytes;
        {
            std::lock_guard<std::mutex> lock(storageMutex_);
            if (!spareWindows_.empty()) {
                batch.window = std::move(spareWindows_.back());
                spareWindows_.pop_back();
            }
            if (!spareFrames_.empty()) {
                batch.frames = std::move(spareFrames_.back());
                spareFrames_.pop_back();
            }
        }
        // Allocated once and reused; a small file needs no more than its own size.
        if (batch.window.empty())
            batch.window.resize(std::min(capacity, file_.size()));
        batch.frames.clear();
    }

    void recycle(Batch& batch)
    {
        std::lock_guard<std::mutex> lock(storageMutex_);
        if (!batch.window.empty())
            spareWindows_.push_back(std::move(batch.window));
        spareFrames_.push_back(std::move(batch.frames));
    }

    WorkerPool& pool() { return *pool_; }

    // Runs on one thread at a time (a batch ahead of process()); it alone uses the collect*
    // members, the whole-file hasher's bookkeeping and `offset`.
    std::optional<Batch> collect(std::uint64_t& offset)
    {
        if (collectStopped_)
            return std::nullopt;
        Batch batch;
        batch.begin = offset;
        batch.end = offset;
        const std::uint64_t size = file_.size();
        std::uint64_t index = collectIndex_;
        std::uint64_t capacity = 0;
        takeStorage(batch, capacity);
        batch.windowSize = std::min(capacity, size - offset);
        file_.read(offset, batch.window.data(), batch.windowSize);
        const std::uint64_t windowEnd = offset + batch.windowSize;
        while (offset < size && batch.frames.size() < kBatchFrames) {
            const std::uint64_t remaining = size - offset;
            if (remaining < tape::kFrameHeaderSize) {
                batch.stop = TapeProblem{index, offset,
                                         "file ends inside the record's 56-byte frame header (" + std::to_string(remaining) + " bytes present)"};
                batch.stop->frameOffset = offset;
                batch.stopStatus = TapeStatus::Truncated;
                break;
            }
            if (offset + tape::kFrameHeaderSize > windowEnd)
                break;  // the header starts the next window
            const std::uint8_t* header = batch.window.data() + (offset - batch.begin);
            Frame frame;
            frame.offset = offset;
            frame.bytes = header;
            frame.type = readLittleEndian<std::uint32_t>(header);
            frame.flags = readLittleEndian<std::uint32_t>(header + 4);
            frame.length = readLittleEndian<std::uint64_t>(header + 8);
            std::uint32_t storedCheck = readLittleEndian<std::uint32_t>(header + 16);
            std::uint32_t computedCheck = crc32(ByteSpan(header, 16));
            if (storedCheck != computedCheck) {
                batch.stop = TapeProblem{index, offset + 16,
                                         "frame header check failed: stored " + hex32(storedCheck) + ", computed " + hex32(computedCheck) +
                                             " (type, flags or length were altered)"};
                batch.stop->frameOffset = offset;
                break;
            }
            // From here on the header check vouches for the type; process() adds the
            // transaction index, which only the in-order checks know.
            if (frame.flags & ~tape::kKnownFlags) {
                batch.stop = TapeProblem{index, offset + 4, "unknown frame flags " + hex32(frame.flags)};
                batch.stop->recordType = frame.type;
                batch.stop->frameOffset = offset;
                break;
            }
            std::uint32_t reserved = readLittleEndian<std::uint32_t>(header + 20);
            if (reserved != 0) {
                batch.stop = TapeProblem{index, offset + 20, "frame reserved field must be 0, found " + hex32(reserved)};
                batch.stop->recordType = frame.type;
                batch.stop->frameOffset = offset;
                break;
            }
            if (frame.length > remaining || tape::frameSize(frame.length) > remaining) {
                batch.stop = TapeProblem{index, offset,
                                         "file ends inside the record: its frame needs " + std::to_string(tape::frameSize(frame.length)) +
                                             " bytes, " + std::to_string(remaining) + " remain"};
                batch.stop->recordType = frame.type;
                batch.stop->frameOffset = offset;
                batch.stopStatus = TapeStatus::Truncated;
                break;
            }
            frame.size = tape::frameSize(frame.length);
            if (offset + frame.size > windowEnd) {
                if (!batch.frames.empty())
                    break;  // the frame starts the next window
                // Larger than a window: this batch is this one frame, read through the map.
                {
                    std::lock_guard<std::mutex> lock(storageMutex_);
                    spareWindows_.push_back(std::move(batch.window));
                }
                batch.windowSize = 0;
                frame.bytes = file_.bytes().data + offset;
                offset += frame.size;
                batch.end = offset;
                batch.frames.push_back(frame);
                ++index;
                break;
            }
            offset += frame.size;
            batch.end = offset;
            batch.frames.push_back(frame);
            ++index;
        }
        collectIndex_ = index;
        if (batch.stop)
            collectStopped_ = true;
        startHashing(batch);
        return batch;
    }

    // Feeds bytes [from, to) of the file to `hasher`: from the batch's window where it holds
    // them, otherwise through the map, handing those pages back.
    static void hashFileRange(const MappedFile& file, const std::uint8_t* window, std::uint64_t windowBegin,
                              std::uint64_t windowSize, Sha256& hasher, std::uint64_t from, std::uint64_t to)
    {
        const std::uint64_t windowEnd = window ? windowBegin + windowSize : windowBegin;
        while (from < to) {
            if (from >= windowBegin && from < windowEnd) {
                const std::uint64_t until = std::min(to, windowEnd);
                hasher.update(ByteSpan(window + (from - windowBegin), until - from));
                from = until;
                continue;
            }
            std::uint64_t until = std::min(to, from + kHashChunk);
            if (from < windowBegin)
                until = std::min(until, windowBegin);
            hasher.update(file.bytes(from, until - from));
            file.release(from, until - from);
            from = until;
        }
    }

    void startHashing(Batch& batch)
    {
        const MappedFile& file = file_;
        if (fileHasher_) {
            // The whole-file digest is sequential: each batch's part waits for the one before.
            std::uint64_t from = fileHashedTo_;
            std::uint64_t to = batch.stop || batch.end >= file.size() ? file.size() : batch.end;
            fileHashedTo_ = to;
            auto before = previousFileHash_;
            Sha256* hasher = &*fileHasher_;
            const std::uint8_t* window = batch.window.empty() ? nullptr : batch.window.data();
            const std::uint64_t windowBegin = batch.begin, windowSize = batch.windowSize;
            previousFileHash_ = pool().submit([&file, window, windowBegin, windowSize, hasher, from, to, before]() {
                if (before.valid())
                    before.get();
                hashFileRange(file, window, windowBegin, windowSize, *hasher, from, to);
            }).share();
            batch.fileHashed = previousFileHash_;
            batch.hashing.emplace_back(std::async(std::launch::deferred, [done = previousFileHash_]() { done.get(); }));
        }
        if (batch.frames.empty())
            return;
        const unsigned workers = std::max(1u, threads_ - (fileHasher_ ? 1u : 0u));
        const std::uint64_t share = (batch.end - batch.begin) / workers + 1;
        std::size_t first = 0;
        for (unsigned w = 0; w < workers && first < batch.frames.size(); ++w) {
            std::size_t last = first;
            std::uint64_t bytes = 0;
            while (last < batch.frames.size() && (bytes < share || last == first))
                bytes += batch.frames[last++].size;
            if (w + 1 == workers)
                last = batch.frames.size();
            Frame* frames = batch.frames.data();
            batch.hashing.emplace_back(pool().submit([&file, frames, first, last]() {
                Sha256 hasher;
                for (std::size_t i = first; i < last; ++i)
                    frames[i].computed = digestFrame(file, frames[i], hasher);
            }));
            first = last;
        }
    }

    static Digest digestFrame(const MappedFile& file, const Frame& frame, Sha256& hasher)
    {
        const std::uint64_t covered = frame.size - tape::kDigestSize;
        // One context per worker for every frame: a context made per frame (Sha256::of) costs
        // an allocation and a provider lookup, ~3 % of hashing records of 2 KB.
        if (covered <= kLargeFrame)
            return hasher.update(ByteSpan(frame.bytes, covered)).finish();
        for (std::uint64_t at = 0; at < covered; at += kHashChunk) {
            std::uint64_t length = std::min(kHashChunk, covered - at);
            hasher.update(file.bytes(frame.offset + at, length));
            file.release(frame.offset + at, length);
        }
        return hasher.finish();
    }

    // Checks the batch's frames in order; false once the scan must stop.
    bool process(const Batch& batch)
    {
        const std::size_t count = batch.frames.size();
        for (std::size_t i = 0; i < count; ++i) {
            if (i + kPrefetchAhead < count && batch.window.size())
                prefetchHead(batch.frames[i + kPrefetchAhead]);
            if (!processFrame(batch.frames[i]))
                return false;
            if (options_.headerOnly && headerDone())
                return false;
        }
        if (batch.stop) {
            if (sealed_) {
                corrupt(nextIndex_, batch.stop->byteOffset, std::to_string(file_.size() - summary_.validBytes) + " bytes follow the seal");
                summary_.problem->frameOffset = batch.stop->frameOffset;
            } else {
                summary_.problem = batch.stop;
                summary_.status = batch.stopStatus;
                if (summary_.problem->recordType)
                    nameRecord(*summary_.problem, *summary_.problem->recordType);
            }
            return false;
        }
        return true;
    }

    // The window was read and hashed on other cores, so the bytes the checks read first (the
    // frame header and the payload's safetensors header) are fetched a few frames ahead
    // instead of stalling on each cache line in turn.
    static constexpr std::size_t kPrefetchAhead = 4;
    static constexpr std::uint64_t kPrefetchBytes = 1024;
    static void prefetchHead(const Frame& frame)
    {
        const std::uint64_t bytes = std::min(frame.size, kPrefetchBytes);
        for (std::uint64_t at = 0; at < bytes; at += 64)
            __builtin_prefetch(frame.bytes + at);
    }

    bool headerDone() const { return root_ && (!root_->programEmbedded || nextIndex_ >= 2); }

    void corrupt(std::uint64_t index, std::uint64_t offset, std::string message)
    {
        summary_.status = TapeStatus::Corrupt;
        summary_.problem = TapeProblem{index, offset, std::move(message)};
        stopped_ = true;
    }

    // The problem of a frame whose header check matched, so its type can be named.
    void corrupt(const Frame& frame, std::uint64_t index, std::uint64_t offset, std::string message)
    {
        corrupt(index, offset, std::move(message));
        summary_.problem->frameOffset = frame.offset;
        nameRecord(*summary_.problem, frame.type);
    }

    // Every record before the one at fault was valid, so the transactions counted so far
    // are the ones before it.
    void nameRecord(TapeProblem& problem, std::uint32_t type) const
    {
        problem.recordType = type;
        if (type == static_cast<std::uint32_t>(tape::RecordType::Transaction))
            problem.transactionIndex = summary_.transactionCount;
    }

    bool processFrame(const Frame& frame)
    {
        const std::uint64_t index = nextIndex_;
        const std::uint8_t* base = frame.bytes;
        const std::uint64_t digestOffset = frame.offset + frame.size - tape::kDigestSize;
        Digest stored;
        std::memcpy(stored.data(), base + frame.size - tape::kDigestSize, stored.size());
        if (stored != frame.computed) {
            corrupt(frame, index, digestOffset,
                    "record digest mismatch: stored " + toHex(stored) + ", computed " + toHex(frame.computed) + " (the record's bytes were altered)");
            return false;
        }
        Digest link;
        std::memcpy(link.data(), base + 24, link.size());
        if (link != previous_) {
            corrupt(frame, index, frame.offset + 24,
                    "hash chain broken: previous digest expected " + toHex(previous_) + ", found " + toHex(link) +
                        " (a record was removed, inserted or reordered before this one)");
            return false;
        }
        if (sealed_) {
            corrupt(frame, index, frame.offset, "a " + std::string(tape::recordTypeName(frame.type)) + " record follows the seal");
            return false;
        }

        RecordLocation location;
        location.index = index;
        location.type = frame.type;
        location.offset = frame.offset;
        location.frameSize = frame.size;
        location.payload = ByteSpan(base + tape::kFrameHeaderSize, frame.length);
        location.digest = frame.computed;
        const std::uint64_t payloadOffset = frame.offset + tape::kFrameHeaderSize;
        try {
            checkRecord(frame, location);
        } catch (const NotATapeError&) {
            throw;
        } catch (const FormatError& error) {
            // An error about the record as a whole (no offset) points at its payload's first byte.
            corrupt(frame, index, payloadOffset + error.offset().value_or(0), error.detail());
            return false;
        } catch (const RecordOrderError& error) {
            corrupt(frame, index, frame.offset, error.what());
            return false;
        }
        previous_ = frame.computed;
        ++nextIndex_;
        summary_.recordCount = nextIndex_;
        summary_.validBytes = frame.offset + frame.size;
        summary_.chainHead = frame.computed;
        return true;
    }

    struct RecordOrderError : Error {
        using Error::Error;
    };

    void checkRecord(const Frame& frame, const RecordLocation& location)
    {
        const std::uint64_t index = location.index;
        const auto type = static_cast<tape::RecordType>(frame.type);
        if (!tape::isKnownRecordType(frame.type)) {
            if (frame.flags & tape::kFlagCritical)
                throw RecordOrderError("unknown critical record type " + std::to_string(frame.type) +
                                       " (written by a newer ZKDV; this build cannot skip it)");
            ++summary_.unknownRecordCount;
            return;
        }
        if (index == 0 && type != tape::RecordType::Root)
            throw RecordOrderError("record 0 must be the root record, found a " + std::string(tape::recordTypeName(frame.type)) + " record");
        if (root_ && root_->programEmbedded && index == 1 && type != tape::RecordType::Program)
            throw RecordOrderError("the root says the program is embedded, so record 1 must be the program record, found a " +
                                   std::string(tape::recordTypeName(frame.type)) + " record");
        switch (type) {
        case tape::RecordType::Root: {
            if (index != 0)
                throw RecordOrderError("only record 0 may be a root record");
            RootRecord root = RootRecord::parse(location.payload);
            if (root.formatMajor != summary_.formatMajor || root.formatMinor != summary_.formatMinor)
                throw RecordOrderError("root says format " + std::to_string(root.formatMajor) + "." + std::to_string(root.formatMinor) +
                                       " but the file header says " + std::to_string(summary_.formatMajor) + "." +
                                       std::to_string(summary_.formatMinor));
            root_ = std::move(root);
            summary_.root = root_;
            sampling_.emplace(*root_);
            samplingAnchor_ = location.digest;
            optimizerOptions_.emplace(*root_);
            if (visitor_)
                visitor_->onRoot(*root_, location);
            break;
        }
        case tape::RecordType::Program: {
            if (index != 1 || !root_->programEmbedded)
                throw RecordOrderError("a program record may only be record 1, and only when the root says the program is embedded");
            Digest digest = Sha256::of(location.payload);
            if (digest != root_->programSha256)
                throw RecordOrderError("embedded program digest " + toHex(digest) + " does not match the root's program.sha256 " +
                                       toHex(root_->programSha256));
            summary_.embeddedProgramSha256 = digest;
            if (visitor_)
                visitor_->onProgram(location);
            break;
        }
        case tape::RecordType::Snapshot: {
            snapshotView_.reparse(location.payload);
            SnapshotRecord snapshot = SnapshotRecord::parse(snapshotView_, *root_);
            checkSnapshotPlace(snapshot.beforeTransaction);
            if (snapshot.beforeTransaction == 0) {
                summary_.firstStateDigest = snapshot.stateDigest();
                // A resumed tape starts from the state its predecessor ended in (spec 3.4).
                if (root_->resumes && *summary_.firstStateDigest != root_->resumes->stateDigest)
                    throw RecordOrderError("snapshot 0 holds a state of digest " + toHex(*summary_.firstStateDigest) +
                                           ", but the root's resumes.state_digest says the tape starts from " +
                                           toHex(root_->resumes->stateDigest));
            }
            lastSnapshot_ = static_cast<std::int64_t>(summary_.transactionCount);
            lastSnapshotPayload_ = {location.offset + tape::kFrameHeaderSize, location.payload.size};
            ++summary_.snapshotCount;
            if (visitor_)
                visitor_->onSnapshot(snapshot, location);
            break;
        }
        case tape::RecordType::Transaction: {
            view_.reparse(location.payload);
            TransactionRecord& transaction = transaction_;
            TransactionRecord::parse(view_, *root_, transaction);
            const std::uint64_t expected = summary_.transactionCount;
            if (transaction.index != expected)
                throw RecordOrderError("transaction index " + std::to_string(transaction.index) + " out of sequence: expected " +
                                       std::to_string(expected));
            if (onInterval(expected) && lastSnapshot_ != static_cast<std::int64_t>(expected))
                throw RecordOrderError("transaction " + std::to_string(expected) + " must be preceded by the snapshot before it (interval " +
                                       std::to_string(root_->snapshotInterval) + ")");
            if (!onInterval(expected) && lastSnapshot_ == static_cast<std::int64_t>(expected))
                throw RecordOrderError("transaction " + std::to_string(expected) + " follows the final snapshot (before transaction " +
                                       std::to_string(expected) + ", not a multiple of the interval " +
                                       std::to_string(root_->snapshotInterval) + "): only the seal may follow a final snapshot");
            checkSampledChecks(transaction, location);
            if (std::optional<std::string> mismatch = optimizerOptions_->violation(transaction))
                throw RecordOrderError(transactionAt(location, expected) + *mismatch);
            // Every transaction's rows, not only the replayed ones' (spec 5.7): the check needs
            // no kernel, and a poisoned row a replay's selection misses must not pass.
            if (const std::optional<SampleMismatch> row = sampleCheck_.firstMismatch(transaction, *root_))
                throw RecordOrderError(transactionAt(location, expected) + "the batch is not the committed samples it names: " +
                                       row->describe(transaction.microBatches.size()));
            samplingAnchor_ = location.digest;
            summary_.lastScheduleEpoch = transaction.scheduleEpoch;
            summary_.lastGradScalerStep = transaction.gradScaler;
            ++summary_.transactionCount;
            summary_.drawnChecks.transactions = summary_.transactionCount;
            summary_.drawnChecks.updateChecks += transaction.deltas.empty() ? 0 : 1;
            summary_.drawnChecks.stateChecks += transaction.stateDigest ? 1 : 0;
            if (visitor_)
                visitor_->onTransaction(transaction, location);
            break;
        }
        case tape::RecordType::Seal: {
            SealRecord seal = SealRecord::parse(location.payload);
            auto mismatch = [](const char* what, std::uint64_t found, std::uint64_t counted) {
                return RecordOrderError(std::string("seal counts ") + std::to_string(found) + " " + what + ", but the tape holds " +
                                        std::to_string(counted));
            };
            if (seal.records != index)
                throw mismatch("records", seal.records, index);
            if (seal.transactions != summary_.transactionCount)
                throw mismatch("transactions", seal.transactions, summary_.transactionCount);
            if (seal.snapshots != summary_.snapshotCount)
                throw mismatch("snapshots", seal.snapshots, summary_.snapshotCount);
            if (seal.chainHead != previous_)
                throw RecordOrderError("seal chain_head " + toHex(seal.chainHead) + " differs from the digest of the last record " +
                                       toHex(previous_));
            const std::uint64_t n = summary_.transactionCount;
            if (lastSnapshot_ != static_cast<std::int64_t>(n) && (onInterval(n) || tape::hasFinalSnapshot(summary_.formatMinor)))
                throw RecordOrderError("the tape ends after " + std::to_string(n) + " transactions without the snapshot of that state" +
                                       (onInterval(n) ? std::string()
                                                      : " (format " + std::to_string(summary_.formatMajor) + "." +
                                                            std::to_string(summary_.formatMinor) +
                                                            " puts the final snapshot, before_transaction " + std::to_string(n) +
                                                            ", right before the seal)"));
            // From 1.11 on, a signature is checked against the tape as read (section 7.1).
            if (summary_.formatMinor >= tape::kSignatureMinor && seal.signatureJson != "null") {
                summary_.finalStateDigest = finalStateDigest();
                SealFacts found;
                found.root = &*root_;
                found.chainHead = previous_;
                found.bytesBeforeSeal = location.offset;
                found.records = index;
                found.transactions = summary_.transactionCount;
                found.snapshots = summary_.snapshotCount;
                found.finalStateDigest = *summary_.finalStateDigest;
                summary_.signer = checkTapeSignature(seal.signatureJson, found);
            }
            sealed_ = true;
            summary_.seal = seal;
            if (visitor_)
                visitor_->onSeal(seal, location);
            break;
        }
        }
    }

    bool onInterval(std::uint64_t transactions) const { return transactions % static_cast<std::uint64_t>(root_->snapshotInterval) == 0; }

    // Snapshots hold the state after every multiple of the interval, and from format 1.5 on
    // also the final state, after the last transaction, right before the seal (spec 2.4).
    void checkSnapshotPlace(std::uint64_t beforeTransaction) const
    {
        const std::uint64_t expected = summary_.transactionCount;
        const bool duplicate = lastSnapshot_ == static_cast<std::int64_t>(expected);
        const bool allowedHere = onInterval(expected) || tape::hasFinalSnapshot(summary_.formatMinor);
        if (beforeTransaction == expected && allowedHere && !duplicate)
            return;
        std::string why;
        if (duplicate)
            why = ", and the snapshot before transaction " + std::to_string(expected) + " is already on the tape";
        else if (allowedHere)
            why = ", the snapshot expected here is before transaction " + std::to_string(expected);
        else
            why = ", no snapshot belongs here (format " + std::to_string(summary_.formatMajor) + "." + std::to_string(summary_.formatMinor) +
                  " has snapshots only at multiples of the interval)";
        throw RecordOrderError("snapshot before transaction " + std::to_string(beforeTransaction) + " is out of place: after " +
                               std::to_string(expected) + " transactions with interval " + std::to_string(root_->snapshotInterval) + why);
    }

    // The shortest decimal that reads back as `value`, so a draw just below its probability
    // does not print as equal to it.
    static std::string shortestDecimal(double value)
    {
        char text[32];
        const auto result = std::to_chars(text, text + sizeof text, value);
        return std::string(text, result.ptr);
    }

    static std::string transactionAt(const RecordLocation& location, std::uint64_t index)
    {
        return "transaction " + std::to_string(index) + " (offset " + std::to_string(location.offset) + "): ";
    }

    // The checks a transaction carries are the ones its draws select (spec 5.2): a sampled
    // check left out, or one added where none was drawn, is the trainer choosing. A 1.0 tape
    // names no draw rule, so which of its transactions carry checks is not enforced (the
    // checks they carry are read and replayed all the same).
    void checkSampledChecks(const TransactionRecord& transaction, const RecordLocation& location)
    {
        if (!sampling_->enforced())
            return;
        const SampledChecks drawn = sampling_->next(samplingAnchor_);
        // A model without parameters has no deltas to record: its update checks hold vacuously.
        const bool hasDeltas = root_->parameters.empty() ? drawn.update : !transaction.deltas.empty();
        const bool hasDigest = transaction.stateDigest.has_value();
        if (drawn.update == hasDeltas && drawn.state == hasDigest)
            return;
        const std::string draws = std::string(samplingGuaranteeName(sampling_->guarantee())) + " draw ";
        auto compared = [&](double draw, bool sampled, double probability, const char* member) {
            return "(" + draws + shortestDecimal(draw) + (sampled ? " < " : " >= ") + std::string(member) + " " +
                   shortestDecimal(probability) + ")";
        };
        const std::string firstDelta = "delta/" + root_->parameters.front().name;
        std::string message = transactionAt(location, transaction.index);
        if (drawn.update != hasDeltas)
            message += drawn.update ? "update check sampled " + compared(drawn.updateDraw, true, root_->updateCheckProbability, "update_check_probability") +
                                          " but " + firstDelta + " missing"
                                    : "update check not sampled " +
                                          compared(drawn.updateDraw, false, root_->updateCheckProbability, "update_check_probability") +
                                          " but the record holds " + firstDelta;
        else
            message += drawn.state ? "state check sampled " + compared(drawn.stateDraw, true, root_->stateCheckProbability, "state_check_probability") +
                                         " but metadata state_digest missing"
                                   : "state check not sampled " +
                                         compared(drawn.stateDraw, false, root_->stateCheckProbability, "state_check_probability") +
                                         " but the record holds metadata state_digest";
        throw RecordOrderError(message);
    }

    void finish()
    {
        if (previousFileHash_.valid()) {
            previousFileHash_.get();
            // A scan that stopped early still reports the digest of the whole file.
            for (std::uint64_t at = fileHashedTo_; at < file_.size(); at += kHashChunk) {
                std::uint64_t length = std::min(kHashChunk, file_.size() - at);
                fileHasher_->update(file_.bytes(at, length));
                file_.release(at, length);
            }
            summary_.fileSha256 = fileHasher_->finish();
        }
        summary_.finalStateOnTape = root_ && lastSnapshot_ == static_cast<std::int64_t>(summary_.transactionCount);
        if (summary_.problem)
            return;
        if (summary_.finalStateOnTape && !summary_.finalStateDigest)
            summary_.finalStateDigest = finalStateDigest();
        if (sealed_)
            summary_.status = TapeStatus::Sealed;
        else
            summary_.status = TapeStatus::Unsealed;
    }

    // Read again at the end, once it is known to be the last: hashing every snapshot's state
    // as it passes would double the hashing of most of a tape's bytes.
    Digest finalStateDigest()
    {
        if (lastSnapshot_ == 0)
            return *summary_.firstStateDigest;
        const auto [offset, length] = lastSnapshotPayload_;
        SafetensorsView view;
        view.reparse(file_.bytes(offset, length));
        const Digest digest = SnapshotRecord::parse(view, *root_).stateDigest();
        file_.release(offset, length);
        return digest;
    }

    MappedFile file_;
    TapeVisitor* visitor_;
    ScanOptions options_;
    unsigned threads_ = 1;
    TapeSummary summary_;
    Digest previous_{};
    std::uint64_t nextIndex_ = 0;
    std::optional<RootRecord> root_;
    std::int64_t lastSnapshot_ = -1;
    std::pair<std::uint64_t, std::uint64_t> lastSnapshotPayload_{0, 0};  // offset, length
    // Reused for every record, so the in-order checks allocate next to nothing per record;
    // one per record type, so that each sees the same header layout record after record.
    SafetensorsView view_;
    SafetensorsView snapshotView_;
    TransactionRecord transaction_;
    std::optional<SamplingSchedule> sampling_;
    Digest samplingAnchor_{};  // the digest the next transaction's draws are keyed by (1.3)
    std::optional<RecordedOptimizerOptions> optimizerOptions_;
    BatchSampleCheck sampleCheck_;
    bool sealed_ = false;
    bool stopped_ = false;
    // Where the frame walk stands; it runs a batch ahead of the in-order checks.
    std::uint64_t collectIndex_ = 0;
    bool collectStopped_ = false;
    std::mutex storageMutex_;
    std::vector<HugePageVector<std::uint8_t>> spareWindows_;
    std::vector<std::vector<Frame>> spareFrames_;
    // Last: its threads finish before anything they use goes.
    std::unique_ptr<WorkerPool> pool_;
    std::optional<Sha256> fileHasher_;
    std::uint64_t fileHashedTo_ = 0;
    std::shared_future<void> previousFileHash_;
};

}  // namespace

TapeSummary scanTape(const std::string& path, TapeVisitor* visitor, const ScanOptions& options)
{
    Scanner scanner(path, visitor, options);
    return scanner.run();
}

TapeSummary scanTapeBytes(ByteSpan bytes, const std::string& name, TapeVisitor* visitor, const ScanOptions& options)
{
    Scanner scanner(bytes, name, visitor, options);
    return scanner.run();
}

}  // namespace zkdv
