#include "zkdv/tape/record_reader.h"

#include <cstring>

#include "zkdv/util/crc32.h"
#include "zkdv/util/error.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/mapped_file.h"

namespace zkdv {

namespace {

[[noreturn]] void fail(const RecordRef& ref, std::uint64_t offset, const std::string& what)
{
    throw FormatError("record " + std::to_string(ref.index) + ": " + what +
                          "; the tape changed since it was ingested, re-ingest it or restore the original file",
                      offset);
}

}  // namespace

RecordReader::RecordReader(const std::string& path) : file_(std::make_unique<MappedFile>(path)) {}

RecordReader::~RecordReader() = default;

const std::string& RecordReader::path() const { return file_->path(); }

std::uint64_t RecordReader::size() const { return file_->size(); }

ByteSpan RecordReader::payload(const RecordRef& ref, tape::RecordType type) const
{
    if (ref.frameSize < tape::kFrameHeaderSize + tape::kDigestSize || ref.offset > file_->size() ||
        file_->size() - ref.offset < ref.frameSize)
        fail(ref, ref.offset, "the frame of " + std::to_string(ref.frameSize) + " bytes lies outside the file of " +
                                  std::to_string(file_->size()) + " bytes");
    const ByteSpan frame = file_->bytes(ref.offset, ref.frameSize);
    const auto foundType = readLittleEndian<std::uint32_t>(frame.data);
    if (foundType != static_cast<std::uint32_t>(type))
        fail(ref, ref.offset, "expected a " + std::string(tape::recordTypeName(static_cast<std::uint32_t>(type))) +
                                  " record, found type " + std::to_string(foundType));
    const auto length = readLittleEndian<std::uint64_t>(frame.data + 8);
    if (tape::frameSize(length) != ref.frameSize)
        fail(ref, ref.offset + 8, "payload length " + std::to_string(length) + " does not fit the remembered frame");
    if (crc32(frame.sub(0, 16)) != readLittleEndian<std::uint32_t>(frame.data + 16))
        fail(ref, ref.offset + 16, "bad header check");
    const std::uint64_t digestOffset = ref.frameSize - tape::kDigestSize;
    const Digest digest = Sha256::of(frame.sub(0, digestOffset));
    if (digest != ref.digest)
        fail(ref, ref.offset + digestOffset, "digest " + toHex(digest) + " differs from the ingested " + toHex(ref.digest));
    return frame.sub(tape::kFrameHeaderSize, length);
}

void RecordReader::release(const RecordRef& ref) const
{
    if (ref.offset <= file_->size() && file_->size() - ref.offset >= ref.frameSize)
        file_->release(ref.offset, ref.frameSize);
}

}  // namespace zkdv
