#pragma once
// Strict reading and writing of safetensors blobs, the only tensor encoding in a tape.
//
// Layout (https://github.com/huggingface/safetensors): an 8-byte little-endian header
// length N, N bytes of UTF-8 JSON, then the data buffer. The JSON object maps tensor
// names to {"dtype", "shape", "data_offsets": [begin, end]} (offsets relative to the
// data buffer) plus an optional "__metadata__" object of string values.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "zkdv/tape/dtype.h"
#include "zkdv/util/byte_span.h"

namespace zkdv {

// One tensor inside a parsed blob; data points into the blob (not owned).
struct TensorView {
    std::string name;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    ByteSpan data;

    std::int64_t elementCount() const;
};

// A parsed, validated, non-owning view of one safetensors blob.
class SafetensorsView {
public:
    // Largest header accepted, as in the reference implementation.
    static constexpr std::uint64_t kMaxHeaderSize = 100u * 1024u * 1024u;

    // Parses and validates `blob`; throws FormatError (offset relative to the blob) when
    // the header length is out of range, the JSON is invalid or not UTF-8, a key repeats,
    // a dtype is unknown, a shape is negative or overflows, data_offsets are reversed, out
    // of the buffer, overlapping or leave holes, or shape x dtype size != byte length.
    static SafetensorsView parse(ByteSpan blob);

    // Parses `blob` exactly as parse() does, into this view, reusing the storage it holds
    // from an earlier parse: a reader going through many blobs of one layout (a tape's
    // records) then allocates nothing per blob. When the header differs from the previous
    // one only inside the "__metadata__" object (a tape's records of one run: same tensors,
    // new index and timings) and the data buffer has the same size, only the metadata is
    // parsed again: the tensors are the previous ones at the new address. Views of the
    // previous blob are invalidated. Throws as parse() does, leaving the view empty.
    void reparse(ByteSpan blob);

    // Tensors in the order of their data offsets.
    const std::vector<TensorView>& tensors() const { return tensors_; }
    // nullptr when absent.
    const TensorView* find(std::string_view name) const;
    const std::map<std::string, std::string, std::less<>>& metadata() const { return metadata_; }
    // "" when absent.
    std::string_view metadataValue(std::string_view key) const;
    // Offset of the data buffer inside the blob (8 + header length).
    std::uint64_t dataOffset() const { return dataOffset_; }

private:
    void parseInto(ByteSpan blob);  // into an empty or reused view
    // The reparse() of a header that differs from the last one parsed only in its metadata;
    // false, with the view unchanged but its metadata, when the header differs elsewhere.
    bool reparseMetadataOnly(ByteSpan blob);
    void forgetLayout();

    std::vector<TensorView> tensors_;
    std::map<std::string, std::string, std::less<>> metadata_;
    std::uint64_t dataOffset_ = 0;

    // The layout of the last header parsed in full, for reparseMetadataOnly(): its bytes
    // before and after the metadata object (all of them in `headerBefore_` when it has
    // none), the data buffer's size and where each tensor starts in it.
    bool layoutKnown_ = false;
    bool layoutHasMetadata_ = false;
    std::string headerBefore_;
    std::string headerAfter_;
    std::uint64_t layoutBufferSize_ = 0;
    std::vector<std::uint64_t> layoutDataBegins_;
};

// Where a blob's header puts each of its parts, in bytes from the blob's start, read from the
// blob's first bytes alone: what a viewer of a record (the workstation's bytes pane) shows
// without holding data buffers of hundreds of MB. Not for reading tensors: it has no data.
struct SafetensorsLayout {
    // [begin, end) of one piece of the header's JSON text.
    struct Extent {
        std::uint64_t begin = 0;
        std::uint64_t end = 0;
    };
    struct Tensor {
        std::string name;
        DType dtype = DType::F32;
        std::vector<std::int64_t> shape;
        Extent entry;        // from the name's opening quote to the tensor object's '}'
        Extent dtypeText;    // the dtype string, quotes included
        Extent shapeText;    // the shape array
        Extent offsetsText;  // the data_offsets array
        Extent data;         // the tensor's bytes (dataOffset + data_offsets)
    };
    struct MetadataEntry {
        std::string key;
        std::string value;
        Extent text;  // from the key's opening quote to the value's closing quote
    };

    std::uint64_t headerLength = 0;  // N, the JSON header's length
    std::uint64_t dataOffset = 0;    // 8 + N
    std::vector<Tensor> tensors;     // in the order of their data
    std::vector<MetadataEntry> metadata;  // in the header's order
    std::optional<Extent> metadataObject;  // the "__metadata__" object, when present

    // Validates the header as SafetensorsView::parse() validates a whole blob of `blobSize`
    // bytes (tiling checked against that size), reading only `head`, the blob's first bytes,
    // which must hold the length prefix and the whole header. Throws FormatError (offset
    // relative to the blob) as parse() does, and also when `head` stops inside the header.
    static SafetensorsLayout parse(ByteSpan head, std::uint64_t blobSize);
};

// Builds one blob. Tensor bytes are referenced, not copied: they must stay alive until
// the blob has been written. Tensors are laid out in the order they were added.
class SafetensorsBuilder {
public:
    void setMetadata(std::string key, std::string value);
    // data.size must equal product(shape) * dtypeSize(dtype); throws Error otherwise or
    // when the name repeats or is "__metadata__".
    void add(std::string name, DType dtype, std::vector<std::int64_t> shape, ByteSpan data);

    // The 8-byte length prefix and JSON header, padded with spaces to a multiple of 8.
    std::vector<std::uint8_t> header() const;
    // The pieces of the blob in order: header() then each tensor's bytes. `headerStorage`
    // keeps the header alive for the returned spans.
    std::vector<ByteSpan> pieces(std::vector<std::uint8_t>& headerStorage) const;
    std::uint64_t serializedSize() const;
    std::vector<std::uint8_t> toBytes() const;

private:
    struct Entry {
        std::string name;
        DType dtype;
        std::vector<std::int64_t> shape;
        ByteSpan data;
    };
    std::vector<Entry> entries_;
    std::map<std::string, std::string> metadata_;
};

}  // namespace zkdv
