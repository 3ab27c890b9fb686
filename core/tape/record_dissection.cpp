#include "zkdv/tape/record_dissection.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/shape_text.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/util/crc32.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/mapped_file.h"
#include "zkdv/util/progress.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/utf8.h"

namespace zkdv {

namespace {

// The digest is recomputed in pieces of this size, so a record of hundreds of MB is never
// held at once.
constexpr std::uint64_t kHashPiece = 1u << 20;
// Bytes of a program shown as its first bytes.
constexpr std::size_t kProgramPreviewBytes = 16;

std::string hex32(std::uint32_t value)
{
    char text[11];
    std::snprintf(text, sizeof text, "0x%08x", value);
    return text;
}

std::string hexBytes(ByteSpan bytes)
{
    static constexpr char kHex[] = "0123456789abcdef";
    std::string text;
    for (std::size_t i = 0; i < bytes.size; ++i) {
        if (i)
            text.push_back(' ');
        text.push_back(kHex[bytes.data[i] >> 4]);
        text.push_back(kHex[bytes.data[i] & 0xF]);
    }
    return text;
}

// "file bytes 120–143" ([begin, end) shown inclusive, as a reader counts them).
std::string fileRange(std::uint64_t begin, std::uint64_t end)
{
    if (begin == end)
        return "no bytes (at file byte " + std::to_string(begin) + ")";
    return "file bytes " + std::to_string(begin) + "–" + std::to_string(end - 1);
}

// Someone else's text made fit for one line of a tree: valid UTF-8, control bytes as spaces,
// at most `maxBytes` bytes (cut at a character's start, "…" added).
std::string displayText(std::string_view raw, std::size_t maxBytes)
{
    bool cut = raw.size() > maxBytes;
    std::string text = toValidUtf8(raw.substr(0, maxBytes));
    for (char& c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = ' ';
    if (text.size() > maxBytes) {  // U+FFFD replacements made it longer
        std::size_t end = maxBytes;
        while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80)
            --end;
        text.resize(end);
        cut = true;
    }
    if (cut)
        text += "…";
    return text;
}

DissectedField field(std::string name, std::uint64_t offset, std::uint64_t length, std::string value)
{
    DissectedField f;
    f.name = std::move(name);
    f.offset = offset;
    f.length = length;
    f.value = std::move(value);
    return f;
}

class Dissector {
public:
    Dissector(const MappedFile& file, const RecordDissectionLimits& limits, RecordDissection& out)
        : file_(file), limits_(limits), out_(out), at_(out.frameOffset)
    {
    }

    // Where reading stood, for a stop when the file cannot be read.
    std::uint64_t position() const { return at_; }

    void run()
    {
        const std::uint64_t start = out_.frameOffset;
        const std::uint64_t size = file_.size();
        if (start >= size) {
            out_.frameLength = 0;
            out_.stop = RecordDissection::Stop{start, "the file is " + std::to_string(size) + " bytes long and ends before the frame's start"};
            return;
        }
        available_ = size - start;
        if (!dissectHeader())
            return;
        const std::uint64_t length = payloadLength_;
        const std::uint64_t needed = neededFrameBytes(length);
        const bool whole = needed <= available_;
        out_.frameLength = whole ? needed : available_;
        const std::uint64_t payloadAt = start + tape::kFrameHeaderSize;
        present_ = std::min(length, available_ - tape::kFrameHeaderSize);
        dissectPayload(payloadAt, length);
        if (!whole) {
            const std::string neededText = needed == kOverflow ? std::string("more than 2^64") : std::to_string(needed);
            // With a failed header check the length is as likely the damage as the file's end.
            out_.stop = RecordDissection::Stop{
                start + available_, headerCheckMatches_
                                        ? "the file ends inside the record: its frame needs " + neededText +
                                              " bytes (56 + payload + padding + 32), " + std::to_string(available_) + " remain"
                                        : "the header check failed and the payload length (" + std::to_string(length) +
                                              " bytes) puts the frame's end past the file's: where the record ends is unknown"};
            return;
        }
        dissectPaddingAndDigest(payloadAt, length);
    }

private:
    static constexpr std::uint64_t kOverflow = ~std::uint64_t(0);

    // 88 + L + P, or kOverflow for a length no file can hold.
    static std::uint64_t neededFrameBytes(std::uint64_t length)
    {
        std::uint64_t needed = 0;
        if (__builtin_add_overflow(length, tape::kFrameHeaderSize + tape::kDigestSize + tape::paddingFor(length), &needed))
            return kOverflow;
        return needed;
    }

    std::vector<std::uint8_t> read(std::uint64_t offset, std::uint64_t length)
    {
        at_ = offset;
        std::vector<std::uint8_t> bytes(static_cast<std::size_t>(length));
        file_.read(offset, bytes.data(), length);
        return bytes;
    }

    std::string clip(std::string_view text) const { return displayText(text, limits_.maxValueBytes); }
    // A parser's message quotes the bytes it refused, which need not be UTF-8.
    std::string clipProblem(std::string_view text) const { return displayText(text, 4 * limits_.maxValueBytes); }

    // False when the header is cut short and nothing after it can be placed.
    bool dissectHeader()
    {
        const std::uint64_t start = out_.frameOffset;
        const std::uint64_t present = std::min<std::uint64_t>(tape::kFrameHeaderSize, available_);
        const std::vector<std::uint8_t> bytes = read(start, present);
        DissectedField header = field("frame header", start, present, "");
        if (start % 8 != 0)
            header.problem = "expected the frame to start at a multiple of 8, found byte " + std::to_string(start);
        const std::uint8_t* b = bytes.data();
        std::uint32_t type = 0;
        std::uint32_t flags = 0;
        if (present >= 4) {
            type = readLittleEndian<std::uint32_t>(b);
            header.children.push_back(field("type", start, 4,
                                            std::to_string(type) + " (" +
                                                (tape::isKnownRecordType(type) ? std::string(tape::recordTypeName(type))
                                                                               : std::string("a type this build does not know")) +
                                                ")"));
        }
        if (present >= 8) {
            flags = readLittleEndian<std::uint32_t>(b + 4);
            DissectedField f = field("flags", start + 4, 4,
                                     hex32(flags) + ((flags & tape::kFlagCritical) ? ": critical" : ": not critical"));
            if (flags & ~tape::kKnownFlags)
                f.problem = "expected no bits but bit 0 (critical), found unknown bits " + hex32(flags & ~tape::kKnownFlags);
            header.children.push_back(std::move(f));
        }
        if (present >= 16) {
            payloadLength_ = readLittleEndian<std::uint64_t>(b + 8);
            header.children.push_back(field("payload length", start + 8, 8, std::to_string(payloadLength_) + " bytes"));
        }
        if (present >= 20) {
            const std::uint32_t stored = readLittleEndian<std::uint32_t>(b + 16);
            const std::uint32_t computed = crc32(ByteSpan(b, 16));
            DissectedField f = field("header check", start + 16, 4,
                                     hex32(stored) + (stored == computed ? " (matches the CRC-32 of bytes 0–15)" : ""));
            headerCheckMatches_ = stored == computed;
            if (stored != computed)
                f.problem = "expected " + hex32(computed) + " (the CRC-32 of bytes 0–15), found " + hex32(stored) +
                            ": type, flags or length were altered";
            header.children.push_back(std::move(f));
        }
        if (present >= 24) {
            const std::uint32_t reserved = readLittleEndian<std::uint32_t>(b + 20);
            DissectedField f = field("reserved", start + 20, 4, std::to_string(reserved));
            if (reserved != 0)
                f.problem = "expected 0, found " + hex32(reserved);
            header.children.push_back(std::move(f));
        }
        if (present >= tape::kFrameHeaderSize)
            header.children.push_back(field("previous digest", start + 24, 32, toHex(ByteSpan(b + 24, 32))));
        if (present < tape::kFrameHeaderSize) {
            header.value = std::to_string(present) + " of 56 bytes";
            out_.fields.push_back(std::move(header));
            out_.frameLength = available_;
            out_.stop = RecordDissection::Stop{start + present, "the file ends inside the 56-byte frame header (" +
                                                                    std::to_string(present) + " bytes present)"};
            return false;
        }
        out_.recordType = type;
        header.value = std::string(tape::isKnownRecordType(type) ? tape::recordTypeName(type) : "unknown type") + ", " +
                       std::to_string(payloadLength_) + "-byte payload";
        out_.fields.push_back(std::move(header));
        return true;
    }

    void dissectPayload(std::uint64_t payloadAt, std::uint64_t length)
    {
        DissectedField payload = field("payload", payloadAt, present_, std::to_string(length) + " bytes");
        switch (static_cast<tape::RecordType>(*out_.recordType)) {
        case tape::RecordType::Root:
        case tape::RecordType::Seal:
            dissectJson(payload, length);
            break;
        case tape::RecordType::Program:
            dissectProgram(payload, length);
            break;
        case tape::RecordType::Snapshot:
        case tape::RecordType::Transaction:
            dissectSafetensors(payload, length);
            break;
        default:
            payload.value += " of a record type this build does not know: not taken apart";
            break;
        }
        if (present_ < length)
            payload.value += " (" + std::to_string(present_) + " of " + std::to_string(length) + " bytes in the file)";
        if (!headerCheckMatches_)
            payload.value += " (its length is one the failed header check does not vouch for)";
        out_.fields.push_back(std::move(payload));
    }

    void dissectJson(DissectedField& payload, std::uint64_t length)
    {
        const std::string what = std::string(tape::recordTypeName(*out_.recordType)) + " record";
        if (length > limits_.maxStructureBytes) {
            payload.value += " of JSON, longer than a dissection reads (" + std::to_string(limits_.maxStructureBytes) + " bytes)";
            return;
        }
        const std::vector<std::uint8_t> bytes = read(payload.offset, present_);
        const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        payload.value = clip(text);
        if (present_ < length)
            return;  // the stop says why the rest is missing
        try {
            (void)parseUntrustedJson(text, what);
        } catch (const FormatError& error) {
            payload.problem = clipProblem(error.detail());
            if (error.offset())
                payload.children.push_back(problemAt(payload.offset + *error.offset(), *payload.problem));
        }
    }

    void dissectProgram(DissectedField& payload, std::uint64_t length)
    {
        const std::vector<std::uint8_t> first = read(payload.offset, std::min<std::uint64_t>(present_, kProgramPreviewBytes));
        payload.value = std::to_string(length) + " bytes of program" + (first.empty() ? "" : ", starting " + hexBytes(first));
        if (present_ == length)
            hashProgram_ = true;  // its SHA-256 comes with the record digest's pass
    }

    void dissectSafetensors(DissectedField& payload, std::uint64_t length)
    {
        const std::uint64_t at = payload.offset;
        payload.value = std::string(tape::recordTypeName(*out_.recordType)) + ", a safetensors blob of " + std::to_string(length) + " bytes";
        if (present_ < 8)
            return;
        const std::vector<std::uint8_t> prefix = read(at, 8);
        const std::uint64_t headerLength = readLittleEndian<std::uint64_t>(prefix.data());
        DissectedField lengthField = field("header length", at, 8, std::to_string(headerLength) + " bytes");
        if (headerLength == 0 || headerLength > SafetensorsView::kMaxHeaderSize || headerLength > length - 8) {
            try {
                (void)SafetensorsLayout::parse(ByteSpan(prefix), length);
            } catch (const FormatError& error) {
                lengthField.problem = clipProblem(error.detail());
            }
            payload.children.push_back(std::move(lengthField));
            return;
        }
        payload.children.push_back(std::move(lengthField));
        const std::uint64_t headerPresent = std::min(headerLength, present_ - 8);
        DissectedField header = field("header", at + 8, headerPresent, "");
        if (headerLength > limits_.maxStructureBytes) {
            header.value = std::to_string(headerLength) + " bytes of JSON, longer than a dissection reads (" +
                           std::to_string(limits_.maxStructureBytes) + " bytes)";
            payload.children.push_back(std::move(header));
            return;
        }
        const std::vector<std::uint8_t> head = read(at, 8 + headerPresent);
        header.value = clip(ByteSpan(head.data() + 8, headerPresent).asString());
        if (headerPresent < headerLength) {
            payload.children.push_back(std::move(header));
            return;  // the stop says why the rest is missing
        }
        SafetensorsLayout layout;
        try {
            layout = SafetensorsLayout::parse(ByteSpan(head), length);
        } catch (const FormatError& error) {
            header.problem = clipProblem(error.detail());
            if (error.offset())
                header.children.push_back(problemAt(at + *error.offset(), *header.problem));
            payload.children.push_back(std::move(header));
            return;
        }
        if (layout.metadataObject)
            header.children.push_back(metadataField(layout, at));
        payload.children.push_back(std::move(header));
        payload.children.push_back(tensorTable(layout, head, at));
        const std::uint64_t bufferAt = at + layout.dataOffset;
        const std::uint64_t bufferPresent = present_ - std::min(present_, layout.dataOffset);
        payload.children.push_back(field("data buffer", bufferAt, bufferPresent,
                                         std::to_string(length - layout.dataOffset) + " bytes, " +
                                             std::to_string(layout.tensors.size()) + " tensors"));
        describeRecord(payload, layout);
    }

    // "transaction 14", "snapshot before transaction 24", from the record's own metadata.
    void describeRecord(DissectedField& payload, const SafetensorsLayout& layout) const
    {
        const auto value = [&](std::string_view key) -> std::string {
            for (const SafetensorsLayout::MetadataEntry& entry : layout.metadata)
                if (entry.key == key)
                    return entry.value;
            return {};
        };
        const bool transaction = *out_.recordType == static_cast<std::uint32_t>(tape::RecordType::Transaction);
        const std::string index = value(transaction ? "index" : "before_transaction");
        if (!index.empty())
            payload.value = (transaction ? "transaction " : "snapshot before transaction ") + clip(index) + ", a safetensors blob of " +
                            std::to_string(payloadLength_) + " bytes";
    }

    DissectedField metadataField(const SafetensorsLayout& layout, std::uint64_t blobAt) const
    {
        const SafetensorsLayout::Extent object = *layout.metadataObject;
        DissectedField metadata =
            field("__metadata__", blobAt + object.begin, object.end - object.begin, std::to_string(layout.metadata.size()) + " entries");
        const std::size_t listed = std::min(layout.metadata.size(), limits_.maxListedEntries);
        for (std::size_t i = 0; i < listed; ++i) {
            const SafetensorsLayout::MetadataEntry& entry = layout.metadata[i];
            metadata.children.push_back(field(clip(entry.key), blobAt + entry.text.begin, entry.text.end - entry.text.begin, clip(entry.value)));
        }
        if (listed < layout.metadata.size())
            metadata.children.push_back(
                field("…", blobAt + object.end, 0, std::to_string(layout.metadata.size() - listed) + " more entries not listed"));
        return metadata;
    }

    DissectedField tensorTable(const SafetensorsLayout& layout, const std::vector<std::uint8_t>& head, std::uint64_t blobAt) const
    {
        const std::uint64_t bufferAt = blobAt + layout.dataOffset;
        DissectedField table = field("tensor table", bufferAt, present_ - std::min(present_, layout.dataOffset),
                                     std::to_string(layout.tensors.size()) + " tensors, in the order of their data");
        const std::size_t listed = std::min(layout.tensors.size(), limits_.maxListedEntries);
        for (std::size_t i = 0; i < listed; ++i) {
            const SafetensorsLayout::Tensor& tensor = layout.tensors[i];
            const std::uint64_t dataBegin = blobAt + tensor.data.begin;
            const std::uint64_t dataEnd = blobAt + tensor.data.end;
            const std::uint64_t bytes = tensor.data.end - tensor.data.begin;
            DissectedField entry = field(clip(tensor.name), dataBegin, bytes,
                                         std::string(dtypeName(tensor.dtype)) + " " + clip(shapeText(tensor.shape)) + ", " +
                                             std::to_string(bytes) + " bytes at " + fileRange(dataBegin, dataEnd));
            const auto text = [&](const SafetensorsLayout::Extent& extent) {
                return clip(ByteSpan(head.data() + extent.begin, extent.end - extent.begin).asString());
            };
            const auto place = [&](std::string name, const SafetensorsLayout::Extent& extent, std::string value) {
                entry.children.push_back(field(std::move(name), blobAt + extent.begin, extent.end - extent.begin, std::move(value)));
            };
            place("header entry", tensor.entry, text(tensor.entry));
            place("dtype", tensor.dtypeText, std::string(dtypeName(tensor.dtype)));
            place("shape", tensor.shapeText, clip(shapeText(tensor.shape)));
            place("data_offsets", tensor.offsetsText,
                  "[" + std::to_string(tensor.data.begin - layout.dataOffset) + ", " + std::to_string(tensor.data.end - layout.dataOffset) +
                      "] of the data buffer: " + fileRange(dataBegin, dataEnd));
            table.children.push_back(std::move(entry));
        }
        if (listed < layout.tensors.size())
            table.children.push_back(field("…", bufferAt, 0, std::to_string(layout.tensors.size() - listed) + " more tensors not listed"));
        return table;
    }

    static DissectedField problemAt(std::uint64_t offset, const std::string& problem)
    {
        DissectedField f = field("byte at fault", offset, 1, "file byte " + std::to_string(offset));
        f.problem = problem;
        return f;
    }

    void dissectPaddingAndDigest(std::uint64_t payloadAt, std::uint64_t length)
    {
        const std::uint64_t paddingAt = payloadAt + length;
        const std::uint64_t padding = tape::paddingFor(length);
        const std::vector<std::uint8_t> tail = read(paddingAt, padding + tape::kDigestSize);
        DissectedField paddingField = field("padding", paddingAt, padding, padding ? std::to_string(padding) + " zero bytes" : "none: the payload ends 8-aligned");
        if (std::any_of(tail.begin(), tail.begin() + static_cast<std::ptrdiff_t>(padding), [](std::uint8_t b) { return b != 0; }))
            paddingField.problem = "expected " + std::to_string(padding) + " zero bytes, found " + hexBytes(ByteSpan(tail.data(), padding));
        out_.fields.push_back(std::move(paddingField));

        Digest stored{};
        std::copy(tail.begin() + static_cast<std::ptrdiff_t>(padding), tail.end(), stored.begin());
        const Digest computed = hashFrame(paddingAt + padding - out_.frameOffset, payloadAt, length);
        DissectedField digest = field("digest", paddingAt + padding, tape::kDigestSize, toHex(stored));
        if (stored == computed)
            digest.value += " (matches the SHA-256 of the frame's bytes)";
        else
            digest.problem = "expected " + toHex(computed) + " (the SHA-256 of the frame's bytes), found " + toHex(stored) +
                             ": the record's bytes were altered";
        out_.fields.push_back(std::move(digest));
        if (programDigest_) {
            auto& payload = *std::find_if(out_.fields.begin(), out_.fields.end(), [](const DissectedField& f) { return f.name == "payload"; });
            payload.children.push_back(field("SHA-256", payloadAt, length, toHex(*programDigest_) + " (compare the root's program.sha256)"));
        }
    }

    // SHA-256 of the frame's first `covered` bytes, read a piece at a time; the program's own
    // SHA-256 on the way, when it is wanted.
    Digest hashFrame(std::uint64_t covered, std::uint64_t payloadAt, std::uint64_t length)
    {
        Sha256 frame;
        std::optional<Sha256> program;
        if (hashProgram_)
            program.emplace();
        std::vector<std::uint8_t> piece(static_cast<std::size_t>(std::min(covered, kHashPiece)));
        for (std::uint64_t done = 0; done < covered;) {
            const std::uint64_t step = std::min(kHashPiece, covered - done);
            const std::uint64_t offset = out_.frameOffset + done;
            at_ = offset;
            file_.read(offset, piece.data(), step);
            frame.update(ByteSpan(piece.data(), step));
            if (program) {
                const std::uint64_t from = std::max(offset, payloadAt);
                const std::uint64_t to = std::min(offset + step, payloadAt + length);
                if (from < to)
                    program->update(ByteSpan(piece.data() + (from - offset), to - from));
            }
            done += step;
            if (limits_.progress) {
                limits_.progress->report(done, covered, "hashing the record");
                if (limits_.progress->cancelRequested())
                    throw OperationCancelled();
            }
        }
        if (program)
            programDigest_ = program->finish();
        return frame.finish();
    }

    const MappedFile& file_;
    const RecordDissectionLimits& limits_;
    RecordDissection& out_;
    std::uint64_t at_;
    std::uint64_t available_ = 0;  // bytes of the file from the frame's start
    std::uint64_t payloadLength_ = 0;
    bool headerCheckMatches_ = false;
    std::uint64_t present_ = 0;  // payload bytes the file holds
    bool hashProgram_ = false;
    std::optional<Digest> programDigest_;
};

void countFields(const std::vector<DissectedField>& fields, std::size_t& count)
{
    for (const DissectedField& f : fields) {
        ++count;
        countFields(f.children, count);
    }
}

// Children may lie outside their parent (a tensor's header entry, away from its data), so
// every field is looked at. Depth is bounded by the dissector's shape (four levels).
void findInnermost(const std::vector<DissectedField>& fields, std::uint64_t offset, const DissectedField*& best)
{
    for (const DissectedField& f : fields) {
        if (f.contains(offset) && (!best || f.length <= best->length))
            best = &f;
        findInnermost(f.children, offset, best);
    }
}

void collectProblems(const std::vector<DissectedField>& fields, std::vector<std::pair<std::uint64_t, std::string>>& problems)
{
    for (const DissectedField& f : fields) {
        if (f.problem)
            problems.emplace_back(f.offset, f.name + ": " + *f.problem);
        collectProblems(f.children, problems);
    }
}

}  // namespace

std::size_t RecordDissection::fieldCount() const
{
    std::size_t count = 0;
    countFields(fields, count);
    return count;
}

const DissectedField* RecordDissection::innermostAt(std::uint64_t fileOffset) const
{
    const DissectedField* best = nullptr;
    findInnermost(fields, fileOffset, best);
    return best;
}

std::vector<std::string> RecordDissection::problems() const
{
    std::vector<std::pair<std::uint64_t, std::string>> found;
    collectProblems(fields, found);
    std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::string> texts;
    for (auto& [offset, text] : found)
        texts.push_back(std::move(text));
    return texts;
}

RecordDissection dissectRecord(const MappedFile& file, std::uint64_t frameOffset, const RecordDissectionLimits& limits)
{
    RecordDissection dissection;
    dissection.frameOffset = frameOffset;
    Dissector dissector(file, limits, dissection);
    try {
        dissector.run();
    } catch (const OperationCancelled&) {
        throw;
    } catch (const std::exception& error) {
        // The file shrank or became unreadable under the dissection: what was read stands.
        dissection.stop = RecordDissection::Stop{dissector.position(), toValidUtf8(std::string("the file could not be read: ") + error.what())};
    }
    return dissection;
}

RecordBytes readRecordBytes(const std::string& path, std::uint64_t frameOffset, std::size_t byteCap,
                            std::optional<std::uint64_t> focus, const RecordDissectionLimits& limits)
{
    MappedFile file(path);
    RecordBytes record;
    record.dissection = dissectRecord(file, frameOffset, limits);
    const std::uint64_t frameLength = record.dissection.frameLength;
    const std::uint64_t shown = std::min<std::uint64_t>(byteCap, frameLength);
    std::uint64_t start = 0;  // inside the frame
    if (focus && *focus >= frameOffset && *focus - frameOffset >= shown && *focus - frameOffset < frameLength) {
        // Centred on the focus, starting a 16-byte row where that still holds the focus, and
        // never past the frame's end.
        const std::uint64_t focusInFrame = *focus - frameOffset;
        start = std::min(focusInFrame - shown / 2, frameLength - shown) / 16 * 16;
        if (focusInFrame - start >= shown)
            start = frameLength - shown;
    }
    record.bytesOffset = frameOffset + start;
    record.bytes.resize(static_cast<std::size_t>(shown));
    file.read(record.bytesOffset, record.bytes.data(), shown);
    return record;
}

}  // namespace zkdv
