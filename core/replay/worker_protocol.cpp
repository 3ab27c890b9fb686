#include "zkdv/replay/worker_protocol.h"

#include <cerrno>
#include <cstring>
#include <limits>

#include <sys/socket.h>
#include <unistd.h>

#include "zkdv/util/little_endian.h"

namespace zkdv::worker {

namespace {

class Writer {
public:
    void u8(std::uint8_t v) { bytes.push_back(v); }
    void u32(std::uint32_t v) { put(v); }
    void u64(std::uint64_t v) { put(v); }
    void i64(std::int64_t v) { put(static_cast<std::uint64_t>(v)); }
    void f64(double v)
    {
        std::uint64_t bits;
        std::memcpy(&bits, &v, 8);
        put(bits);
    }
    void blob(const std::uint8_t* data, std::size_t size)
    {
        u64(size);
        bytes.insert(bytes.end(), data, data + size);
    }
    void text(const std::string& s) { blob(reinterpret_cast<const std::uint8_t*>(s.data()), s.size()); }
    void digest(const Digest& d) { bytes.insert(bytes.end(), d.begin(), d.end()); }

    std::vector<std::uint8_t> bytes;

private:
    template <typename T>
    void put(T v)
    {
        const std::size_t at = bytes.size();
        bytes.resize(at + sizeof(T));
        writeLittleEndian<T>(bytes.data() + at, v);
    }
};

// Every read checks the bytes left, so a message from a misbehaving worker fails with a
// ProtocolError saying where, never reads past its end.
class Reader {
public:
    Reader(const std::vector<std::uint8_t>& bytes, const char* what) : bytes_(bytes), what_(what) {}
    std::uint8_t u8() { return take(1)[0]; }
    std::uint32_t u32() { return readLittleEndian<std::uint32_t>(take(4)); }
    std::uint64_t u64() { return readLittleEndian<std::uint64_t>(take(8)); }
    std::int64_t i64() { return static_cast<std::int64_t>(u64()); }
    double f64()
    {
        const std::uint64_t bits = u64();
        double v;
        std::memcpy(&v, &bits, 8);
        return v;
    }
    std::vector<std::uint8_t> blob()
    {
        const std::uint64_t size = u64();
        const std::uint8_t* p = take(size);
        return std::vector<std::uint8_t>(p, p + size);
    }
    std::string text()
    {
        const std::uint64_t size = u64();
        const std::uint8_t* p = take(size);
        return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(size));
    }
    Digest digest()
    {
        Digest d;
        std::memcpy(d.data(), take(d.size()), d.size());
        return d;
    }
    // A count of items of at least `itemSize` bytes each, checked against the bytes left.
    std::uint64_t count(std::size_t itemSize)
    {
        const std::uint64_t n = u64();
        if (n > (bytes_.size() - at_) / itemSize)
            fail("a count of " + std::to_string(n) + " items");
        return n;
    }
    void finish() const
    {
        if (at_ != bytes_.size())
            fail(std::to_string(bytes_.size() - at_) + " bytes after the end");
    }
    [[noreturn]] void fail(const std::string& why) const
    {
        throw ProtocolError(std::string("malformed ") + what_ + " message: " + why + " at byte " + std::to_string(at_) + " of " +
                            std::to_string(bytes_.size()));
    }

private:
    const std::uint8_t* take(std::uint64_t n)
    {
        if (n > bytes_.size() - at_)
            fail("needs " + std::to_string(n) + " more bytes");
        const std::uint8_t* p = bytes_.data() + at_;
        at_ += static_cast<std::size_t>(n);
        return p;
    }

    const std::vector<std::uint8_t>& bytes_;
    const char* what_;
    std::size_t at_ = 0;
};

Verdict verdictFrom(Reader& in)
{
    const std::uint8_t v = in.u8();
    if (v > static_cast<std::uint8_t>(Verdict::Unverifiable))
        in.fail("verdict " + std::to_string(v));
    return static_cast<Verdict>(v);
}

UnverifiableCause causeFrom(Reader& in)
{
    const std::uint8_t v = in.u8();
    if (v > static_cast<std::uint8_t>(UnverifiableCause::TapeMalformed))
        in.fail("cause " + std::to_string(v));
    return static_cast<UnverifiableCause>(v);
}

void writeRefs(Writer& out, const std::map<std::uint64_t, RecordRef>& refs)
{
    out.u64(refs.size());
    for (const auto& [key, ref] : refs) {
        out.u64(key);
        out.u64(ref.index);
        out.u64(ref.offset);
        out.u64(ref.frameSize);
        out.digest(ref.digest);
    }
}

std::map<std::uint64_t, RecordRef> readRefs(Reader& in)
{
    std::map<std::uint64_t, RecordRef> refs;
    for (std::uint64_t n = in.count(64); n > 0; --n) {
        const std::uint64_t key = in.u64();
        RecordRef ref;
        ref.index = in.u64();
        ref.offset = in.u64();
        ref.frameSize = in.u64();
        ref.digest = in.digest();
        refs.emplace(key, ref);
    }
    return refs;
}

bool knownType(std::uint32_t type)
{
    switch (static_cast<MessageType>(type)) {
    case MessageType::Job:
    case MessageType::Segment:
    case MessageType::Hello:
    case MessageType::Ready:
    case MessageType::LoadFailed:
    case MessageType::Outcome:
    case MessageType::SegmentDone:
    case MessageType::MemoryExhausted: return true;
    }
    return false;
}

}  // namespace

std::vector<std::uint8_t> frame(MessageType type, const std::vector<std::uint8_t>& payload)
{
    std::vector<std::uint8_t> bytes(kFrameHeaderSize + payload.size());
    writeLittleEndian<std::uint32_t>(bytes.data(), static_cast<std::uint32_t>(type));
    writeLittleEndian<std::uint32_t>(bytes.data() + 4, static_cast<std::uint32_t>(payload.size()));
    if (!payload.empty())
        std::memcpy(bytes.data() + kFrameHeaderSize, payload.data(), payload.size());
    return bytes;
}

std::vector<std::uint8_t> encodeHello(const WorkerHello& hello)
{
    Writer out;
    out.text(hello.libtorchVersion);
    out.text(hello.cudaVersion);
    out.i64(hello.cudaDevices);
    out.i64(hello.defaultIntraOpThreads);
    out.text(hello.numerics.toJson());
    return std::move(out.bytes);
}

WorkerHello decodeHello(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "hello");
    WorkerHello hello;
    hello.libtorchVersion = in.text();
    hello.cudaVersion = in.text();
    const std::int64_t devices = in.i64(), threads = in.i64();
    if (devices < 0 || devices > 4096 || threads < 1 || threads > 65536)
        in.fail(std::to_string(devices) + " CUDA devices and " + std::to_string(threads) + " threads");
    hello.cudaDevices = static_cast<int>(devices);
    hello.defaultIntraOpThreads = static_cast<int>(threads);
    try {
        hello.numerics = NumericEnvironment::parse(in.text(), "the worker's numerics");
    } catch (const FormatError& error) {
        in.fail(error.what());
    }
    in.finish();
    return hello;
}

std::vector<std::uint8_t> encodeJob(const WorkerJob& job)
{
    Writer out;
    out.text(job.rootJson);
    out.blob(job.program.data(), job.program.size());
    out.text(job.device);
    out.i64(job.intraOpThreads);
    out.f64(job.tolerance.maxUlp);
    out.f64(job.tolerance.relativeL2);
    out.f64(job.tolerance.fingerprintRelative);
    out.f64(job.tolerance.envelope);
    out.u64(job.memoryLimitBytes);
    const RecordPlan& r = job.records;
    out.u8(r.embedded ? 1 : 0);
    out.text(r.tapePath);
    out.text(r.casePath);
    out.i64(r.tapeId);
    out.u64(r.snapshotInterval);
    out.digest(r.beforeFirstSnapshot);
    writeRefs(out, r.transactions);
    writeRefs(out, r.snapshots);
    return std::move(out.bytes);
}

WorkerJob decodeJob(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "job");
    WorkerJob job;
    job.rootJson = in.text();
    job.program = in.blob();
    job.device = in.text();
    job.intraOpThreads = static_cast<int>(in.i64());
    job.tolerance.maxUlp = in.f64();
    job.tolerance.relativeL2 = in.f64();
    job.tolerance.fingerprintRelative = in.f64();
    job.tolerance.envelope = in.f64();
    job.memoryLimitBytes = in.u64();
    RecordPlan& r = job.records;
    r.embedded = in.u8() != 0;
    r.tapePath = in.text();
    r.casePath = in.text();
    r.tapeId = in.i64();
    r.snapshotInterval = in.u64();
    if (r.snapshotInterval == 0)
        in.fail("snapshot interval 0");
    r.beforeFirstSnapshot = in.digest();
    r.transactions = readRefs(in);
    r.snapshots = readRefs(in);
    in.finish();
    return job;
}

std::vector<std::uint8_t> encodeSegment(const ReplaySegment& segment)
{
    Writer out;
    out.u64(segment.snapshot);
    out.u64(segment.lastTransaction);
    out.u8(segment.reachesNextSnapshot ? 1 : 0);
    out.u64(segment.selected.size());
    for (std::uint64_t t : segment.selected)
        out.u64(t);
    out.u64(segment.capture.size());
    for (std::uint64_t t : segment.capture)
        out.u64(t);
    return std::move(out.bytes);
}

ReplaySegment decodeSegment(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "segment");
    ReplaySegment segment;
    segment.snapshot = in.u64();
    segment.lastTransaction = in.u64();
    segment.reachesNextSnapshot = in.u8() != 0;
    for (std::uint64_t n = in.count(8); n > 0; --n)
        segment.selected.push_back(in.u64());
    for (std::uint64_t n = in.count(8); n > 0; --n)
        segment.capture.push_back(in.u64());
    in.finish();
    if (segment.lastTransaction < segment.snapshot)
        in.fail("a segment that ends before it starts");
    return segment;
}

std::vector<std::uint8_t> encodeOutcome(const TransactionOutcome& outcome)
{
    Writer out;
    out.u64(outcome.index);
    out.u64(outcome.segment);
    out.u8(outcome.selected ? 1 : 0);
    out.u8(static_cast<std::uint8_t>(outcome.verdict));
    out.u8(static_cast<std::uint8_t>(outcome.cause));
    out.text(outcome.detail);
    out.u64(outcome.replayNs);
    out.u64(outcome.comparisons.size());
    for (const TensorComparison& c : outcome.comparisons) {
        out.text(c.tensor);
        out.text(c.slot);
        out.u8(static_cast<std::uint8_t>(c.verdict));
        out.text(c.note);
        const DivergenceMetrics& m = c.metrics;
        out.u64(m.elements);
        out.u8(m.bitwiseEqual ? 1 : 0);
        out.f64(m.maxAbs);
        out.f64(m.relativeL2);
        out.f64(m.cosine);
        out.f64(m.maxUlp);
        out.f64(m.meanUlp);
        out.u64(m.nanMismatches);
        out.u64(m.infMismatches);
        std::size_t used = m.ulpHistogram.size();
        while (used > 0 && m.ulpHistogram[used - 1] == 0)
            --used;
        out.u8(static_cast<std::uint8_t>(used));
        for (std::size_t b = 0; b < used; ++b)
            out.u64(m.ulpHistogram[b]);
    }
    out.u64(outcome.values.size());
    for (const ComparedValues& v : outcome.values) {
        out.text(v.tensor);
        out.text(v.slot);
        out.text(std::string(dtypeName(v.dtype)));
        out.u64(v.shape.size());
        for (std::int64_t d : v.shape)
            out.i64(d);
        out.blob(v.recorded.data(), v.recorded.size());
        out.blob(v.replayed.data(), v.replayed.size());
    }
    out.text(outcome.valuesOmitted);
    return std::move(out.bytes);
}

TransactionOutcome decodeOutcome(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "outcome");
    TransactionOutcome outcome;
    outcome.index = in.u64();
    outcome.segment = in.u64();
    outcome.selected = in.u8() != 0;
    outcome.verdict = verdictFrom(in);
    outcome.cause = causeFrom(in);
    outcome.detail = in.text();
    outcome.replayNs = in.u64();
    // A comparison takes at least 8 + 8 + 1 + 8 + 8 + 1 + 5 * 8 + 2 * 8 + 1 bytes.
    for (std::uint64_t n = in.count(91); n > 0; --n) {
        TensorComparison c;
        c.tensor = in.text();
        c.slot = in.text();
        c.verdict = verdictFrom(in);
        c.note = in.text();
        DivergenceMetrics& m = c.metrics;
        m.elements = in.u64();
        m.bitwiseEqual = in.u8() != 0;
        m.maxAbs = in.f64();
        m.relativeL2 = in.f64();
        m.cosine = in.f64();
        m.maxUlp = in.f64();
        m.meanUlp = in.f64();
        m.nanMismatches = in.u64();
        m.infMismatches = in.u64();
        const std::uint8_t used = in.u8();
        if (used > m.ulpHistogram.size())
            in.fail("a histogram of " + std::to_string(used) + " bins");
        for (std::size_t b = 0; b < used; ++b)
            m.ulpHistogram[b] = in.u64();
        outcome.comparisons.push_back(std::move(c));
    }
    // Values: 8 + 8 + 8 + 8 + 8 + 8 bytes at least each.
    for (std::uint64_t n = in.count(48); n > 0; --n) {
        ComparedValues v;
        v.tensor = in.text();
        v.slot = in.text();
        const std::string dtype = in.text();
        const std::optional<DType> known = dtypeFromName(dtype);
        if (!known)
            in.fail("an unknown dtype '" + dtype + "'");
        v.dtype = *known;
        for (std::uint64_t d = in.count(8); d > 0; --d)
            v.shape.push_back(in.i64());
        v.recorded = in.blob();
        v.replayed = in.blob();
        std::uint64_t elements = 1;
        for (std::int64_t d : v.shape) {
            if (d < 0 || (d != 0 && elements > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(d)))
                in.fail("a shape that holds no tensor");
            elements *= static_cast<std::uint64_t>(d);
        }
        if (v.recorded.size() != elements * dtypeSize(v.dtype) || (!v.replayed.empty() && v.replayed.size() != v.recorded.size()))
            in.fail("values of " + v.tensor + " that do not fill its shape");
        outcome.values.push_back(std::move(v));
    }
    outcome.valuesOmitted = in.text();
    in.finish();
    return outcome;
}

std::vector<std::uint8_t> encodeText(const std::string& text)
{
    Writer out;
    out.text(text);
    return std::move(out.bytes);
}

std::string decodeText(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "text");
    std::string text = in.text();
    in.finish();
    return text;
}

std::vector<std::uint8_t> encodeLoadFailure(const LoadFailure& failure)
{
    Writer out;
    out.u8(static_cast<std::uint8_t>(failure.cause));
    out.text(failure.why);
    return std::move(out.bytes);
}

LoadFailure decodeLoadFailure(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "load failure");
    LoadFailure failure;
    failure.cause = causeFrom(in);
    failure.why = in.text();
    in.finish();
    return failure;
}

std::vector<std::uint8_t> encodeCount(std::uint64_t value)
{
    Writer out;
    out.u64(value);
    return std::move(out.bytes);
}

std::uint64_t decodeCount(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "count");
    const std::uint64_t value = in.u64();
    in.finish();
    return value;
}

std::optional<std::pair<MessageType, std::vector<std::uint8_t>>> FrameBuffer::next()
{
    const std::size_t available = bytes_.size() - start_;
    if (available < kFrameHeaderSize)
        return std::nullopt;
    const std::uint8_t* head = bytes_.data() + start_;
    const std::uint32_t type = readLittleEndian<std::uint32_t>(head);
    const std::uint32_t length = readLittleEndian<std::uint32_t>(head + 4);
    if (!knownType(type))
        throw ProtocolError("unknown message type " + std::to_string(type));
    if (length > maxPayload_)
        throw ProtocolError("a message of " + std::to_string(length) + " bytes, above the bound of " + std::to_string(maxPayload_));
    if (available - kFrameHeaderSize < length)
        return std::nullopt;
    std::vector<std::uint8_t> payload(head + kFrameHeaderSize, head + kFrameHeaderSize + length);
    start_ += kFrameHeaderSize + length;
    // Consumed bytes are dropped in bulk, not per frame.
    if (start_ == bytes_.size() || start_ > (1u << 20)) {
        bytes_.erase(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(start_));
        start_ = 0;
    }
    return std::make_pair(static_cast<MessageType>(type), std::move(payload));
}

std::size_t FrameBuffer::pendingFrameBytes(std::size_t limit) const
{
    const std::size_t available = bytes_.size() - start_;
    if (available < kFrameHeaderSize)
        return kFrameHeaderSize - available;
    const std::size_t total = kFrameHeaderSize + readLittleEndian<std::uint32_t>(bytes_.data() + start_ + 4);
    return total > limit ? 0 : total - std::min(total, available);
}

namespace {

void writeAll(int fd, const std::uint8_t* data, std::size_t size)
{
    while (size > 0) {
        const ssize_t n = send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            throw ProtocolError(std::string("the replay channel is closed: ") + std::strerror(errno));
        data += n;
        size -= static_cast<std::size_t>(n);
    }
}

// Reads exactly `size` bytes; false when the stream ends before the first of them.
bool readExactly(int fd, std::uint8_t* data, std::size_t size, bool endAllowed)
{
    std::size_t got = 0;
    while (got < size) {
        const ssize_t n = read(fd, data + got, size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && got == 0 && endAllowed)
            return false;
        if (n <= 0)
            throw ProtocolError("the replay channel ended inside a message");
        got += static_cast<std::size_t>(n);
    }
    return true;
}

}  // namespace

void writeFrame(int fd, MessageType type, const std::vector<std::uint8_t>& payload)
{
    const std::vector<std::uint8_t> bytes = frame(type, payload);
    writeAll(fd, bytes.data(), bytes.size());
}

bool readFrame(int fd, std::uint32_t maxPayload, MessageType& type, std::vector<std::uint8_t>& payload)
{
    std::uint8_t header[kFrameHeaderSize];
    if (!readExactly(fd, header, sizeof header, true))
        return false;
    const std::uint32_t rawType = readLittleEndian<std::uint32_t>(header);
    const std::uint32_t length = readLittleEndian<std::uint32_t>(header + 4);
    if (!knownType(rawType) || length > maxPayload)
        throw ProtocolError("unknown message type " + std::to_string(rawType) + " or length " + std::to_string(length));
    type = static_cast<MessageType>(rawType);
    payload.resize(length);
    if (length > 0)
        readExactly(fd, payload.data(), length, false);
    return true;
}

}  // namespace zkdv::worker
