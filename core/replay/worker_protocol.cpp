#include "zkdv/replay/worker_protocol.h"

#include <cstdlib>

#include <cerrno>
#include <cstring>
#include <algorithm>
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
// ProtocolError saying which field and where, never reads past its end or allocates more
// than the message holds.
class Reader {
public:
    Reader(const std::vector<std::uint8_t>& bytes, const char* what) : bytes_(bytes), what_(what) {}
    std::uint8_t u8(const char* field) { return take(1, field)[0]; }
    std::uint32_t u32(const char* field) { return readLittleEndian<std::uint32_t>(take(4, field)); }
    std::uint64_t u64(const char* field) { return readLittleEndian<std::uint64_t>(take(8, field)); }
    std::int64_t i64(const char* field) { return static_cast<std::int64_t>(u64(field)); }
    double f64(const char* field)
    {
        const std::uint64_t bits = u64(field);
        double v;
        std::memcpy(&v, &bits, 8);
        return v;
    }
    std::vector<std::uint8_t> blob(const char* field)
    {
        const std::uint64_t size = u64(field);
        const std::uint8_t* p = take(size, field);
        return std::vector<std::uint8_t>(p, p + size);
    }
    std::string text(const char* field)
    {
        const std::uint64_t size = u64(field);
        const std::uint8_t* p = take(size, field);
        return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(size));
    }
    Digest digest(const char* field)
    {
        Digest d;
        std::memcpy(d.data(), take(d.size(), field), d.size());
        return d;
    }
    // A count of items of at least `itemSize` bytes each, checked against the bytes left.
    std::uint64_t count(std::size_t itemSize, const char* field)
    {
        const std::size_t at = at_;
        const std::uint64_t n = u64(field);
        if (n > (bytes_.size() - at_) / itemSize)
            fail(field, "a count of " + std::to_string(n) + " items of at least " + std::to_string(itemSize) + " bytes in " +
                            std::to_string(bytes_.size() - at_) + " bytes", at);
        return n;
    }
    void finish() const
    {
        if (at_ != bytes_.size())
            fail("the end", std::to_string(bytes_.size() - at_) + " bytes after it", at_);
    }
    std::size_t offset() const { return at_; }
    bool atEnd() const { return at_ == bytes_.size(); }
    // `field` (starting at byte `at`) is wrong in the way `why` says.
    [[noreturn]] void fail(const std::string& field, const std::string& why, std::size_t at) const
    {
        throw ProtocolError(std::string("malformed ") + what_ + " message: " + field + " at byte " + std::to_string(at) + " of " +
                            std::to_string(bytes_.size()) + ": " + why);
    }

private:
    const std::uint8_t* take(std::uint64_t n, const char* field)
    {
        if (n > bytes_.size() - at_)
            fail(field, "needs " + std::to_string(n) + " bytes, " + std::to_string(bytes_.size() - at_) + " left", at_);
        const std::uint8_t* p = bytes_.data() + at_;
        at_ += static_cast<std::size_t>(n);
        return p;
    }

    const std::vector<std::uint8_t>& bytes_;
    const char* what_;
    std::size_t at_ = 0;
};

Verdict verdictFrom(Reader& in, const char* field)
{
    const std::size_t at = in.offset();
    const std::uint8_t v = in.u8(field);
    if (v > static_cast<std::uint8_t>(Verdict::Unverifiable))
        in.fail(field, "no verdict is numbered " + std::to_string(v), at);
    return static_cast<Verdict>(v);
}

UnverifiableCause causeFrom(Reader& in, const char* field)
{
    const std::size_t at = in.offset();
    const std::uint8_t v = in.u8(field);
    if (v > static_cast<std::uint8_t>(UnverifiableCause::TapeMalformed))
        in.fail(field, "no cause is numbered " + std::to_string(v), at);
    return static_cast<UnverifiableCause>(v);
}

// The traced operators of an outcome: every count checked against the bytes left, every
// output's values against its shape.
void readOperators(Reader& in, TransactionOutcome& outcome)
{
    // An operator takes 8 + 8 + 4 + 8 + 8 bytes at least; an output 1 + 8 + 8 + 8 + 32.
    for (std::uint64_t n = in.count(36, "operators"); n > 0; --n) {
        TracedOperator op;
        op.name = in.text("operator name");
        op.phase = in.text("operator phase");
        op.depth = in.u32("operator depth");
        op.finished = in.u64("operator finished");
        for (std::uint64_t k = in.count(57, "operator outputs"); k > 0; --k) {
            TracedOutput o;
            std::size_t at = in.offset();
            const std::uint8_t kind = in.u8("output kind");
            if (kind > static_cast<std::uint8_t>(TracedOutput::Kind::Opaque))
                in.fail("output kind", "no output kind is numbered " + std::to_string(kind), at);
            o.kind = static_cast<TracedOutput::Kind>(kind);
            at = in.offset();
            const std::string dtype = in.text("output dtype");
            const std::optional<DType> known = dtypeFromName(dtype);
            if (!known)
                in.fail("output dtype", "unknown dtype '" + dtype.substr(0, 32) + "'", at);
            o.dtype = *known;
            at = in.offset();
            for (std::uint64_t d = in.count(8, "output shape"); d > 0; --d)
                o.shape.push_back(in.i64("output shape"));
            std::uint64_t bytes = dtypeSize(o.dtype);
            for (std::int64_t d : o.shape)
                if (d < 0 || __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes))
                    in.fail("output shape", "a dimension of " + std::to_string(d) + " in a shape no tensor has", at);
            at = in.offset();
            o.bytes = in.blob("output values");
            if (o.kind == TracedOutput::Kind::Values ? o.bytes.size() != bytes : !o.bytes.empty())
                in.fail("output values", std::to_string(o.bytes.size()) + " bytes for an output of kind " + std::to_string(kind) + " and " +
                                             std::to_string(bytes) + " bytes",
                        at);
            o.digest = in.digest("output digest");
            op.outputs.push_back(std::move(o));
        }
        outcome.operators.push_back(std::move(op));
    }
    outcome.operatorsOmitted = in.text("operators omitted");
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

// The encoder writes a map: keys ascending, each once.
std::map<std::uint64_t, RecordRef> readRefs(Reader& in, const char* field)
{
    std::map<std::uint64_t, RecordRef> refs;
    for (std::uint64_t n = in.count(64, field); n > 0; --n) {
        const std::size_t at = in.offset();
        const std::uint64_t key = in.u64(field);
        if (!refs.empty() && key <= refs.rbegin()->first)
            in.fail(field, "key " + std::to_string(key) + " after key " + std::to_string(refs.rbegin()->first), at);
        RecordRef ref;
        ref.index = in.u64(field);
        ref.offset = in.u64(field);
        ref.frameSize = in.u64(field);
        ref.digest = in.digest(field);
        refs.emplace_hint(refs.end(), key, ref);
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
    out.text(hello.determinism.toJson());
    out.i64(static_cast<std::int64_t>(hello.deviceNames.size()));
    for (const std::string& name : hello.deviceNames)
        out.text(name);
    return std::move(out.bytes);
}

WorkerHello decodeHello(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "hello");
    WorkerHello hello;
    hello.libtorchVersion = in.text("libtorch version");
    hello.cudaVersion = in.text("CUDA version");
    std::size_t at = in.offset();
    const std::int64_t devices = in.i64("CUDA devices");
    if (devices < 0 || devices > 4096)
        in.fail("CUDA devices", std::to_string(devices) + ", not 0 to 4096", at);
    at = in.offset();
    const std::int64_t threads = in.i64("intra-op threads");
    if (threads < 1 || threads > 65536)
        in.fail("intra-op threads", std::to_string(threads) + ", not 1 to 65536", at);
    hello.cudaDevices = static_cast<int>(devices);
    hello.defaultIntraOpThreads = static_cast<int>(threads);
    at = in.offset();
    try {
        hello.numerics = NumericEnvironment::parse(in.text("numerics"), "the worker's numerics");
    } catch (const FormatError& error) {
        in.fail("numerics", error.what(), at);
    }
    at = in.offset();
    try {
        hello.determinism = DeterminismProfile::parse(in.text("determinism"), "the worker's determinism profile");
    } catch (const FormatError& error) {
        in.fail("determinism", error.what(), at);
    }
    at = in.offset();
    const std::int64_t names = in.i64("device names");
    if (names != devices)
        in.fail("device names", std::to_string(names) + " names for " + std::to_string(devices) + " CUDA devices", at);
    for (std::int64_t i = 0; i < names; ++i)
        hello.deviceNames.push_back(in.text("device name"));
    in.finish();
    return hello;
}

DeterminismProfile workerDeterminism(const RootRecord& root, const WorkerHello& hello, const std::string& device, int intraOpThreads)
{
    std::string name = hello.numerics.cpuModel;
    if (device.rfind("cuda:", 0) == 0) {
        const std::size_t index = std::strtoul(device.c_str() + 5, nullptr, 10);
        name = index < hello.deviceNames.size() ? hello.deviceNames[index] : "";
    }
    DeterminismProfile profile = replayDeterminism(root.determinism, hello.determinism, device, name);
    profile.intraOpThreads = intraOpThreads;
    return profile;
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
    out.f64(job.noiseEnvelope);
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
    job.rootJson = in.text("root");
    job.program = in.blob("program");
    job.device = in.text("device");
    std::size_t at = in.offset();
    const std::int64_t threads = in.i64("intra-op threads");
    if (threads < 0 || threads > std::numeric_limits<int>::max())
        in.fail("intra-op threads", std::to_string(threads) + ", not a thread count", at);
    job.intraOpThreads = static_cast<int>(threads);
    job.tolerance.maxUlp = in.f64("tolerance ulp");
    job.tolerance.relativeL2 = in.f64("tolerance rel");
    job.tolerance.fingerprintRelative = in.f64("tolerance fingerprint");
    job.tolerance.envelope = in.f64("tolerance envelope");
    job.noiseEnvelope = in.f64("noise envelope");
    job.memoryLimitBytes = in.u64("memory limit");
    RecordPlan& r = job.records;
    r.embedded = in.u8("embedded") != 0;
    r.tapePath = in.text("tape path");
    r.casePath = in.text("case path");
    r.tapeId = in.i64("tape id");
    at = in.offset();
    r.snapshotInterval = in.u64("snapshot interval");
    if (r.snapshotInterval == 0)
        in.fail("snapshot interval", "0", at);
    r.beforeFirstSnapshot = in.digest("digest before the first snapshot");
    r.transactions = readRefs(in, "transaction records");
    r.snapshots = readRefs(in, "snapshot records");
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
    // Optional, last: the transactions to trace (zkdv-audit explain).
    if (!segment.trace.empty()) {
        out.u64(segment.trace.size());
        for (std::uint64_t t : segment.trace)
            out.u64(t);
    }
    return std::move(out.bytes);
}

ReplaySegment decodeSegment(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "segment");
    ReplaySegment segment;
    segment.snapshot = in.u64("snapshot");
    const std::size_t at = in.offset();
    segment.lastTransaction = in.u64("last transaction");
    if (segment.lastTransaction < segment.snapshot)
        in.fail("last transaction", std::to_string(segment.lastTransaction) + ", before the segment's start " + std::to_string(segment.snapshot), at);
    segment.reachesNextSnapshot = in.u8("reaches next snapshot") != 0;
    for (std::uint64_t n = in.count(8, "selected"); n > 0; --n)
        segment.selected.push_back(in.u64("selected"));
    for (std::uint64_t n = in.count(8, "capture"); n > 0; --n)
        segment.capture.push_back(in.u64("capture"));
    if (!in.atEnd())
        for (std::uint64_t n = in.count(8, "trace"); n > 0; --n)
            segment.trace.push_back(in.u64("trace"));
    in.finish();
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
        out.f64(c.envelopeRatio);
        out.u8(c.roundingNoise ? 1 : 0);
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
    // Optional, last: the traced operators (zkdv-audit explain).
    if (!outcome.operators.empty() || !outcome.operatorsOmitted.empty()) {
        out.u64(outcome.operators.size());
        for (const TracedOperator& op : outcome.operators) {
            out.text(op.name);
            out.text(op.phase);
            out.u32(op.depth);
            out.u64(op.finished);
            out.u64(op.outputs.size());
            for (const TracedOutput& o : op.outputs) {
                out.u8(static_cast<std::uint8_t>(o.kind));
                out.text(std::string(dtypeName(o.dtype)));
                out.u64(o.shape.size());
                for (std::int64_t d : o.shape)
                    out.i64(d);
                out.blob(o.bytes.data(), o.bytes.size());
                out.digest(o.digest);
            }
        }
        out.text(outcome.operatorsOmitted);
    }
    return std::move(out.bytes);
}

TransactionOutcome decodeOutcome(const std::vector<std::uint8_t>& payload)
{
    Reader in(payload, "outcome");
    TransactionOutcome outcome;
    outcome.index = in.u64("index");
    outcome.segment = in.u64("segment");
    outcome.selected = in.u8("selected") != 0;
    outcome.verdict = verdictFrom(in, "verdict");
    outcome.cause = causeFrom(in, "cause");
    outcome.detail = in.text("detail");
    outcome.replayNs = in.u64("replay time");
    // A comparison takes at least 8 + 8 + 1 + 8 + 8 + 1 + 5 * 8 + 2 * 8 + 1 + 8 + 1 bytes.
    for (std::uint64_t n = in.count(100, "comparisons"); n > 0; --n) {
        TensorComparison c;
        c.tensor = in.text("comparison tensor");
        c.slot = in.text("comparison slot");
        c.verdict = verdictFrom(in, "comparison verdict");
        c.note = in.text("comparison note");
        DivergenceMetrics& m = c.metrics;
        m.elements = in.u64("comparison elements");
        m.bitwiseEqual = in.u8("comparison bitwise equal") != 0;
        m.maxAbs = in.f64("comparison max abs");
        m.relativeL2 = in.f64("comparison relative L2");
        m.cosine = in.f64("comparison cosine");
        m.maxUlp = in.f64("comparison max ulp");
        m.meanUlp = in.f64("comparison mean ulp");
        m.nanMismatches = in.u64("comparison NaN mismatches");
        m.infMismatches = in.u64("comparison inf mismatches");
        const std::size_t at = in.offset();
        const std::uint8_t used = in.u8("comparison ulp histogram");
        if (used > m.ulpHistogram.size())
            in.fail("comparison ulp histogram", std::to_string(used) + " bins, at most " + std::to_string(m.ulpHistogram.size()), at);
        for (std::size_t b = 0; b < used; ++b)
            m.ulpHistogram[b] = in.u64("comparison ulp histogram");
        c.envelopeRatio = in.f64("comparison envelope ratio");
        c.roundingNoise = in.u8("comparison rounding noise") != 0;
        outcome.comparisons.push_back(std::move(c));
    }
    // Values: 8 + 8 + 8 + 8 + 8 + 8 bytes at least each.
    for (std::uint64_t n = in.count(48, "values"); n > 0; --n) {
        ComparedValues v;
        const std::size_t start = in.offset();
        v.tensor = in.text("values tensor");
        v.slot = in.text("values slot");
        std::size_t at = in.offset();
        const std::string dtype = in.text("values dtype");
        const std::optional<DType> known = dtypeFromName(dtype);
        if (!known)
            in.fail("values dtype", "unknown dtype '" + dtype.substr(0, 32) + "'", at);
        v.dtype = *known;
        at = in.offset();
        for (std::uint64_t d = in.count(8, "values shape"); d > 0; --d)
            v.shape.push_back(in.i64("values shape"));
        // The bytes the shape needs, without wrapping around (2^62 F32 elements need 2^64 bytes, not 0).
        std::uint64_t bytes = dtypeSize(v.dtype);
        for (std::int64_t d : v.shape)
            if (d < 0 || __builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes))
                in.fail("values shape", "a dimension of " + std::to_string(d) + " in a shape no tensor has", at);
        at = in.offset();
        v.recorded = in.blob("values recorded");
        if (v.recorded.size() != bytes)
            in.fail("values recorded", std::to_string(v.recorded.size()) + " bytes for a shape of " + std::to_string(bytes) + " bytes (tensor '" +
                                           v.tensor.substr(0, 64) + "' at byte " + std::to_string(start) + ")", at);
        at = in.offset();
        v.replayed = in.blob("values replayed");
        if (!v.replayed.empty() && v.replayed.size() != v.recorded.size())
            in.fail("values replayed", std::to_string(v.replayed.size()) + " bytes, recorded " + std::to_string(v.recorded.size()), at);
        outcome.values.push_back(std::move(v));
    }
    outcome.valuesOmitted = in.text("values omitted");
    if (!in.atEnd())
        readOperators(in, outcome);
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
    std::string text = in.text("text");
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
    failure.cause = causeFrom(in, "cause");
    failure.why = in.text("why");
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
    const std::uint64_t value = in.u64("count");
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
    // The buffer grows with the bytes that arrive, so a header that promises more than is
    // sent costs no more memory than was sent.
    constexpr std::size_t kChunk = 1u << 20;
    payload.clear();
    while (payload.size() < length) {
        const std::size_t got = payload.size();
        payload.resize(got + std::min<std::size_t>(kChunk, length - got));
        readExactly(fd, payload.data() + got, payload.size() - got, false);
    }
    return true;
}

}  // namespace zkdv::worker
