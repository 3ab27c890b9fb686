// Fuzz target for the replay worker protocol (zkdv/replay/worker_protocol.h): the parent reads
// whatever the worker process sends, and the worker runs the trainer's program, so every
// decoder, the frame splitter and the blocking frame reader take arbitrary bytes. The first
// byte chooses which one reads the rest. Only zkdv::Error may come out; a message that decodes
// is encoded again, and decoding that gives the same bytes once more (encode is a fixed point
// of decode); decoded values keep the invariants their consumers rely on. See docs/fuzzing.md.

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <unistd.h>

#include "zkdv/replay/worker_protocol.h"
#include "zkdv/tape/dtype.h"
#include "zkdv/util/error.h"

using namespace zkdv;
using namespace zkdv::worker;

namespace {

using Bytes = std::vector<std::uint8_t>;

void require(bool condition)
{
    if (!condition)
        std::abort();
}

// ZKDV_FUZZ_VERBOSE=1: say what became of each input (to check what a seed exercises).
bool verbose()
{
    static const bool on = std::getenv("ZKDV_FUZZ_VERBOSE") != nullptr;
    return on;
}

// decode(encode(decode(payload))) encodes to the same bytes as decode(payload) does.
template <typename Decode, typename Encode>
void roundTrip(const Bytes& payload, Decode decode, Encode encode)
{
    const Bytes first = encode(decode(payload));
    const Bytes second = encode(decode(first));
    require(first == second);
}

void checkOutcome(const TransactionOutcome& outcome)
{
    for (const ComparedValues& v : outcome.values) {
        // The values fill the shape exactly, without the element count wrapping around.
        std::uint64_t bytes = dtypeSize(v.dtype);
        for (std::int64_t d : v.shape) {
            require(d >= 0);
            require(!__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes));
        }
        require(v.recorded.size() == bytes);
        require(v.replayed.empty() || v.replayed.size() == v.recorded.size());
    }
    for (const TensorComparison& c : outcome.comparisons)
        require(static_cast<int>(c.verdict) <= static_cast<int>(Verdict::Unverifiable));
    // A traced operator's values (zkdv-audit explain) fill its shape exactly; a digest or an
    // opaque output carries none.
    for (const TracedOperator& op : outcome.operators)
        for (const TracedOutput& o : op.outputs) {
            std::uint64_t bytes = dtypeSize(o.dtype);
            for (std::int64_t d : o.shape) {
                require(d >= 0);
                require(!__builtin_mul_overflow(bytes, static_cast<std::uint64_t>(d), &bytes));
            }
            require(o.kind == TracedOutput::Kind::Values ? o.bytes.size() == bytes : o.bytes.empty());
        }
}

// Decodes one payload as a message of `type`, the way the two sides of the channel do.
void decodeAs(MessageType type, const Bytes& payload)
{
    switch (type) {
    case MessageType::Hello:
        roundTrip(payload, decodeHello, encodeHello);
        break;
    case MessageType::Job:
        roundTrip(payload, decodeJob, encodeJob);
        break;
    case MessageType::Segment: {
        const ReplaySegment segment = decodeSegment(payload);
        require(segment.lastTransaction >= segment.snapshot);
        roundTrip(payload, decodeSegment, encodeSegment);
        break;
    }
    case MessageType::Outcome:
        checkOutcome(decodeOutcome(payload));
        roundTrip(payload, decodeOutcome, encodeOutcome);
        break;
    case MessageType::LoadFailed: {
        roundTrip(payload, decodeLoadFailure, encodeLoadFailure);
        break;
    }
    case MessageType::MemoryExhausted:
        // A count has one encoding.
        require(encodeCount(decodeCount(payload)) == payload);
        break;
    case MessageType::Ready:
    case MessageType::SegmentDone:
        break;
    }
}

void checkText(const Bytes& payload)
{
    // Text has one encoding too.
    require(encodeText(decodeText(payload)) == payload);
}

// Splits frames off a buffer fed in pieces whose sizes come from the input (the parent's
// side), decoding each frame as its type says; pendingFrameBytes stays within its limit.
void splitFrames(const Bytes& bytes)
{
    FrameBuffer buffer(kMaxResultFrame);
    std::size_t at = 0;
    while (at < bytes.size()) {
        const std::size_t piece = std::min<std::size_t>(bytes.size() - at, 1 + bytes[at] % 61);
        buffer.append(bytes.data() + at, piece);
        at += piece;
        while (auto message = buffer.next())
            try {
                decodeAs(message->first, message->second);
            } catch (const Error&) {
            }
        const std::size_t pending = buffer.pendingFrameBytes(kFrameHeaderSize + kMaxResultFrame);
        require(pending <= kFrameHeaderSize + kMaxResultFrame);
    }
}

// Reads frames with the blocking reader from a memory file holding the bytes.
void readFrames(const Bytes& bytes)
{
    const int fd = ::memfd_create("zkdv-fuzz-worker-protocol", 0);
    if (fd < 0)
        return;
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    if (!bytes.empty() && ::write(fd, bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size()))
        return;
    ::lseek(fd, 0, SEEK_SET);
    MessageType type{};
    Bytes payload;
    while (readFrame(fd, kMaxResultFrame, type, payload)) {
        require(payload.size() <= kMaxResultFrame);
        try {
            decodeAs(type, payload);
        } catch (const Error&) {
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    if (size == 0)
        return 0;
    const Bytes rest(data + 1, data + size);
    try {
        switch (data[0] % 10) {
        case 0: decodeAs(MessageType::Hello, rest); break;
        case 1: decodeAs(MessageType::Job, rest); break;
        case 2: decodeAs(MessageType::Segment, rest); break;
        case 3: decodeAs(MessageType::Outcome, rest); break;
        case 4: decodeAs(MessageType::LoadFailed, rest); break;
        case 5: decodeAs(MessageType::MemoryExhausted, rest); break;
        case 6: checkText(rest); break;
        case 7: splitFrames(rest); break;
        case 8: readFrames(rest); break;
        default: decodeAs(MessageType::Outcome, rest); break;
        }
        if (verbose())
            std::fprintf(stderr, "read\n");
    } catch (const Error& error) {
        // ProtocolError and the errors under it: the expected refusal.
        if (verbose())
            std::fprintf(stderr, "refused: %.300s\n", error.what());
    }
    return 0;
}
