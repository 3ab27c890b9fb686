#pragma once
// Appends framed, hash-chained records to a tape file (docs/tape-format.md, section 2).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/tape/tape_format.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/sha256.h"
#include "zkdv/util/signing_key.h"

namespace zkdv {

class TapeWriter {
public:
    enum class OpenMode { CreateNew, Overwrite };

    // Creates the file and writes the file header. CreateNew refuses an existing path
    // (IoError saying to pass overwrite explicitly). An older `minorVersion` is for rewriting
    // tapes of that version (tests); the root record must then say the same version.
    explicit TapeWriter(const std::string& path, OpenMode mode = OpenMode::CreateNew, std::uint16_t minorVersion = tape::kMinorVersion);
    // Flushes and closes; an unsealed tape stays readable as `unsealed`.
    ~TapeWriter();
    TapeWriter(const TapeWriter&) = delete;
    TapeWriter& operator=(const TapeWriter&) = delete;

    // Appends one record whose payload is the concatenation of `pieces`; returns its digest.
    // The first record must be the root, and nothing may follow the seal (Error otherwise).
    Digest append(tape::RecordType type, const std::vector<ByteSpan>& pieces);
    Digest append(tape::RecordType type, ByteSpan payload) { return append(type, std::vector<ByteSpan>{payload}); }
    // Appends a record of any type and flags, unchecked: for producing future-version or
    // deliberately malformed tapes in tests.
    Digest appendRaw(std::uint32_t type, std::uint32_t flags, const std::vector<ByteSpan>& pieces);

    // Writes the seal record (section 7) with the counts so far and flushes. With `key`, the
    // seal carries the trainer's signature over the tape (section 7.1), which needs the state
    // digest of the final snapshot just written (section 8).
    Digest seal(const SigningKey* key = nullptr, const std::optional<Digest>& finalStateDigest = std::nullopt);
    // Hands buffered bytes to the operating system.
    void flush();
    // flush() and fsync(): the bytes are on disk.
    void sync();

    const std::string& path() const { return path_; }
    std::uint64_t recordCount() const { return recordCount_; }
    std::uint64_t transactionCount() const { return transactionCount_; }
    std::uint64_t snapshotCount() const { return snapshotCount_; }
    std::uint64_t bytesWritten() const { return bytesWritten_; }
    const Digest& chainHead() const { return chainHead_; }
    bool sealed() const { return sealed_; }

private:
    void write(ByteSpan bytes);
    void close();

    std::string path_;
    int fd_ = -1;
    std::vector<std::uint8_t> buffer_;
    Sha256 hasher_;
    Digest chainHead_{};
    std::uint64_t recordCount_ = 0;
    std::uint64_t transactionCount_ = 0;
    std::uint64_t snapshotCount_ = 0;
    std::uint64_t bytesWritten_ = 0;
    bool sealed_ = false;
    std::vector<std::uint8_t> rootPayload_;  // what a signed seal states about the root
};

}  // namespace zkdv
