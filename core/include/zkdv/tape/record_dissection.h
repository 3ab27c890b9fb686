#pragma once
// One record of a tape taken apart field by field, each field with its place in the file, as
// Wireshark's packet details take a packet apart: the frame header (spec 2.2), the payload
// (JSON, or a safetensors header, its metadata and its tensor table), the padding and the
// digest, checked against the bytes. The bytes are someone else's: a damaged or cut record
// dissects as far as it can and says where it stops and why; nothing is thrown.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace zkdv {

class MappedFile;
class ProgressSink;

struct DissectedField {
    std::string name;
    std::uint64_t offset = 0;  // file offset of the field's first byte
    std::uint64_t length = 0;
    std::string value;         // what the field holds, in words, valid UTF-8 and bounded in length
    std::optional<std::string> problem;  // what is wrong with it, as expected vs found
    std::vector<DissectedField> children;

    bool contains(std::uint64_t fileOffset) const { return fileOffset >= offset && fileOffset - offset < length; }
};

struct RecordDissection {
    std::uint64_t frameOffset = 0;
    // The frame's length as its header gives it (88 + L + P), or what the file holds from
    // frameOffset on when the header is cut short or its length cannot be a frame's.
    std::uint64_t frameLength = 0;
    std::optional<std::uint32_t> recordType;  // when the frame header is whole
    // The top-level parts: "frame header", "payload", "padding", "digest".
    std::vector<DissectedField> fields;
    // Where the dissection ended before the frame did, and why (a cut file, a frame that
    // runs past its end, an unreadable file).
    struct Stop {
        std::uint64_t offset = 0;
        std::string reason;
    };
    std::optional<Stop> stop;

    std::size_t fieldCount() const;  // every field, children included
    // The smallest field whose bytes hold `fileOffset`, or nullptr.
    const DissectedField* innermostAt(std::uint64_t fileOffset) const;
    // Every field's problem, in file order, as "name: problem".
    std::vector<std::string> problems() const;
};

// Bounds on what a dissection reads and lists, whatever a record claims.
struct RecordDissectionLimits {
    // The longest safetensors header or JSON payload read to take it apart; a longer one is
    // shown without its parts (the format allows headers of 100 MiB).
    std::uint64_t maxStructureBytes = 16u << 20;
    // The most tensors and metadata entries listed; the rest are counted in one line.
    std::size_t maxListedEntries = 4096;
    // The longest value text of one field, in bytes.
    std::size_t maxValueBytes = 512;
    // Polled while the digest is computed (the frame may be hundreds of MB); asking to stop
    // throws OperationCancelled.
    ProgressSink* progress = nullptr;
};

// Dissects the record whose frame starts at `frameOffset` of `file`. The record's digest is
// recomputed by reading the frame in pieces, so no more than a few MiB are held at once.
// Throws nothing but OperationCancelled; an unreadable file is a stop.
RecordDissection dissectRecord(const MappedFile& file, std::uint64_t frameOffset, const RecordDissectionLimits& limits = {});

// What the workstation's bytes pane shows of one record: its dissection and a window of its
// bytes.
struct RecordBytes {
    RecordDissection dissection;
    std::uint64_t bytesOffset = 0;    // file offset of bytes[0]
    std::vector<std::uint8_t> bytes;  // at most the cap asked for, all inside the frame
    bool partial() const { return bytes.size() < dissection.frameLength; }
};

// Opens the tape at `path` and reads the record at `frameOffset`: its dissection and at most
// `byteCap` of its bytes: the first ones, or, when `focus` (a file offset inside the frame)
// lies past them, a window around it (a finding in a record's last bytes). Throws IoError
// when the file cannot be opened (moved, removed) or shrinks while read.
RecordBytes readRecordBytes(const std::string& path, std::uint64_t frameOffset, std::size_t byteCap,
                            std::optional<std::uint64_t> focus = std::nullopt, const RecordDissectionLimits& limits = {});

}  // namespace zkdv
