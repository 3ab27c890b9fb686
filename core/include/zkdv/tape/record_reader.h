#pragma once
// Random access to single records of a tape that was verified once (at ingest): reads the
// frame at a remembered offset and checks it is still, byte for byte, that record.

#include <cstdint>
#include <memory>
#include <string>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

class MappedFile;

// Where a record sits and which digest the case remembers for it.
struct RecordRef {
    std::uint64_t index = 0;      // record index in the tape
    std::uint64_t offset = 0;     // start of the frame
    std::uint64_t frameSize = 0;  // whole frame, digest included
    Digest digest{};
};

class RecordReader {
public:
    // Maps the tape; throws IoError naming the path.
    explicit RecordReader(const std::string& path);
    ~RecordReader();
    RecordReader(const RecordReader&) = delete;
    RecordReader& operator=(const RecordReader&) = delete;

    // The payload of the record `ref` describes (a view into the mapped file), after
    // checking the frame lies inside the file, has `type`, a valid header check, and hashes
    // to ref.digest. Throws FormatError ("record N at byte B: ...") when the file changed.
    // Safe to call from several threads at once.
    ByteSpan payload(const RecordRef& ref, tape::RecordType type) const;
    // Hands the pages of a record back once its payload is no longer needed.
    void release(const RecordRef& ref) const;

    const std::string& path() const;
    std::uint64_t size() const;

private:
    std::unique_ptr<MappedFile> file_;
};

}  // namespace zkdv
