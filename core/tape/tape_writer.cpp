#include "zkdv/tape/tape_writer.h"

#include "zkdv/tape/root_record.h"
#include "zkdv/tape/tape_signature.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

#include "zkdv/tape/record_frame.h"
#include "zkdv/util/crc32.h"
#include "zkdv/util/error.h"
#include "zkdv/util/little_endian.h"

namespace zkdv {

namespace {
constexpr std::size_t kBufferSize = 1u << 20;
// Pieces at least this large skip the buffer and go straight to the file.
constexpr std::size_t kDirectWriteThreshold = 256u * 1024u;
}  // namespace

TapeWriter::TapeWriter(const std::string& path, OpenMode mode, std::uint16_t minorVersion) : path_(path)
{
    int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == OpenMode::CreateNew ? O_EXCL : O_TRUNC);
    fd_ = ::open(path.c_str(), flags, 0644);
    if (fd_ < 0) {
        if (errno == EEXIST)
            throw IoError("tape " + path + " already exists; choose another path or overwrite it explicitly");
        throw IoError("cannot create tape " + path + ": " + std::strerror(errno));
    }
    buffer_.reserve(kBufferSize);
    std::uint8_t header[tape::kFileHeaderSize] = {};
    std::memcpy(header, tape::kMagic, sizeof tape::kMagic);
    writeLittleEndian<std::uint16_t>(header + 8, tape::kMajorVersion);
    writeLittleEndian<std::uint16_t>(header + 10, minorVersion);
    writeLittleEndian<std::uint32_t>(header + 12, 0);
    write(ByteSpan(header, sizeof header));
    chainHead_ = Sha256::of(ByteSpan(header, sizeof header));
}

TapeWriter::~TapeWriter()
{
    try {
        close();
    } catch (...) {
        // A destructor cannot report; callers who care call flush()/sync() first.
    }
}

void TapeWriter::close()
{
    if (fd_ < 0)
        return;
    flush();
    ::close(fd_);
    fd_ = -1;
}

Digest TapeWriter::append(tape::RecordType type, const std::vector<ByteSpan>& pieces)
{
    if (sealed_)
        throw Error("tape " + path_ + " is sealed; no record may follow the seal");
    if ((recordCount_ == 0) != (type == tape::RecordType::Root))
        throw Error("tape " + path_ + ": the root record must be the first record, and only the first");
    if (type == tape::RecordType::Root) {
        rootPayload_.clear();
        for (const ByteSpan& piece : pieces)
            rootPayload_.insert(rootPayload_.end(), piece.begin(), piece.end());
    }
    Digest digest = appendRaw(static_cast<std::uint32_t>(type), tape::kFlagCritical, pieces);
    if (type == tape::RecordType::Transaction)
        ++transactionCount_;
    else if (type == tape::RecordType::Snapshot)
        ++snapshotCount_;
    return digest;
}

Digest TapeWriter::appendRaw(std::uint32_t type, std::uint32_t flags, const std::vector<ByteSpan>& pieces)
{
    if (fd_ < 0)
        throw IoError("tape " + path_ + " is closed");
    std::uint64_t length = 0;
    for (const ByteSpan& piece : pieces)
        length += piece.size;

    const FrameHeader header = frameHeader(type, flags, length, chainHead_);
    static const std::uint8_t zeros[8] = {};
    const ByteSpan padding(zeros, tape::paddingFor(length));
    const Digest digest = frameDigest(header, pieces, hasher_);

    write(ByteSpan(header.data(), header.size()));
    for (const ByteSpan& piece : pieces)
        write(piece);
    write(padding);
    write(ByteSpan(digest.data(), digest.size()));

    chainHead_ = digest;
    ++recordCount_;
    return digest;
}

Digest TapeWriter::seal(const SigningKey* key, const std::optional<Digest>& finalStateDigest)
{
    nlohmann::json signature = nullptr;
    if (key) {
        if (!finalStateDigest)
            throw Error("tape " + path_ + ": a signed seal needs the digest of the final state");
        const RootRecord root = RootRecord::parse(ByteSpan(rootPayload_));
        SealFacts facts;
        facts.root = &root;
        facts.chainHead = chainHead_;
        facts.bytesBeforeSeal = bytesWritten_;
        facts.records = recordCount_;
        facts.transactions = transactionCount_;
        facts.snapshots = snapshotCount_;
        facts.finalStateDigest = *finalStateDigest;
        signature = signTape(facts, *key);
    }
    nlohmann::json seal = {
        {"records", recordCount_},
        {"transactions", transactionCount_},
        {"snapshots", snapshotCount_},
        {"chain_head", toHex(chainHead_)},
        {"signature", signature},
    };
    std::string text = seal.dump();
    Digest digest = append(tape::RecordType::Seal, ByteSpan(std::string_view(text)));
    sealed_ = true;
    flush();
    return digest;
}

void TapeWriter::write(ByteSpan bytes)
{
    if (bytes.size >= kDirectWriteThreshold) {
        flush();
        std::size_t done = 0;
        while (done < bytes.size) {
            ssize_t n = ::write(fd_, bytes.data + done, bytes.size - done);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                throw IoError("cannot write tape " + path_ + ": " + std::strerror(errno));
            }
            done += static_cast<std::size_t>(n);
        }
    } else {
        if (buffer_.size() + bytes.size > kBufferSize)
            flush();
        buffer_.insert(buffer_.end(), bytes.begin(), bytes.end());
    }
    bytesWritten_ += bytes.size;
}

void TapeWriter::flush()
{
    std::size_t done = 0;
    while (done < buffer_.size()) {
        ssize_t n = ::write(fd_, buffer_.data() + done, buffer_.size() - done);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            // Keep what was not written so a retry after freeing space can complete it.
            buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(done));
            throw IoError("cannot write tape " + path_ + ": " + std::strerror(errno));
        }
        done += static_cast<std::size_t>(n);
    }
    buffer_.clear();
}

void TapeWriter::sync()
{
    flush();
    if (::fsync(fd_) != 0)
        throw IoError("cannot sync tape " + path_ + ": " + std::strerror(errno));
}

}  // namespace zkdv
