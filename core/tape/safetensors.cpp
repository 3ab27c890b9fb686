#include "zkdv/tape/safetensors.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <limits>

#include "json_scanner.h"
#include "zkdv/util/error.h"

namespace zkdv {

namespace {

using detail::JsonScanner;

constexpr std::size_t kLengthPrefixSize = 8;
constexpr std::string_view kMetadataKey = "__metadata__";
constexpr std::uint64_t kInt64Max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());

// Up to this many names, comparing every pair is cheaper than sorting; beyond it, sorting
// keeps a hostile header with many names from costing quadratic time.
constexpr std::size_t kPairwiseDuplicateLimit = 24;

bool multiplyChecked(std::uint64_t a, std::uint64_t b, std::uint64_t limit, std::uint64_t& product)
{
    std::uint64_t result = 0;
    if (__builtin_mul_overflow(a, b, &result) || result > limit)
        return false;
    product = result;
    return true;
}

// Element count, folded left to right like the reference implementation, so a zero
// dimension after an overflowing prefix is still an overflow there and here.
bool checkedElementCount(const std::vector<std::int64_t>& shape, std::uint64_t& count)
{
    count = 1;
    for (std::int64_t dim : shape) {
        if (dim < 0 || !multiplyChecked(count, static_cast<std::uint64_t>(dim), kInt64Max, count))
            return false;
    }
    return true;
}

std::uint64_t readLittleEndian64(const std::uint8_t* p)
{
    std::uint64_t value = 0;
    for (int i = 7; i >= 0; --i)
        value = value << 8 | p[i];
    return value;
}

// Where a tensor sits in the data buffer and where its header entry is, for sorting by
// offset and for pointing error messages at the right bytes.
struct Placement {
    std::uint64_t begin = 0;
    std::uint64_t end = 0;
    std::uint64_t keyAt = 0;
    std::uint64_t offsetsAt = 0;
    std::uint64_t nameHash = 0;
    std::size_t index = 0;
    // The rest of where the entry's JSON lies, for SafetensorsLayout.
    std::uint64_t entryEnd = 0;
    std::uint64_t dtypeAt = 0;
    std::uint64_t dtypeEnd = 0;
    std::uint64_t shapeAt = 0;
    std::uint64_t shapeEnd = 0;
    std::uint64_t offsetsEnd = 0;
};

// FNV-1a: cheap for short names, and only ever compared, never trusted, so collisions
// merely cost a full comparison.
std::uint64_t hashName(std::string_view name)
{
    std::uint64_t hash = 0xcbf29ce484222325u;
    for (char c : name)
        hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
    return hash;
}

// Consumes `literal` at `p` if the bytes there are exactly it.
template <std::size_t N>
bool matchLiteral(const std::uint8_t*& p, const std::uint8_t* end, const char (&literal)[N])
{
    if (static_cast<std::size_t>(end - p) < N - 1 || std::memcmp(p, literal, N - 1) != 0)
        return false;
    p += N - 1;
    return true;
}

// Consumes a canonical unsigned integer of at most 18 digits (too few to overflow) at
// `p`. Anything else, longer numbers included, is left to the general parser, which
// either accepts it or reports precisely what is wrong.
bool matchSmallInteger(const std::uint8_t*& p, const std::uint8_t* end, std::uint64_t& value)
{
    const std::uint8_t* start = p;
    std::uint64_t result = 0;
    while (p < end && static_cast<unsigned>(*p - '0') < 10u)
        result = result * 10 + static_cast<std::uint64_t>(*p++ - '0');
    const auto digits = static_cast<std::size_t>(p - start);
    if (digits == 0 || digits > 18 || (digits > 1 && *start == '0'))
        return false;
    value = result;
    return true;
}

// Records usually hold a dozen tensors; reserving that many avoids regrowing the vectors.
constexpr std::size_t kTypicalTensorCount = 16;
// Dimensions beyond this many spill from the stack into the shape vector.
constexpr std::size_t kInlineDims = 8;

using MetadataMap = std::map<std::string, std::string, std::less<>>;

// Storage kept from one parse to the next on the same thread, so that parsing many blobs
// (a tape's records) allocates nothing per blob: the placements, and metadata map nodes
// handed back by SafetensorsView::reparse. Bounded, so one huge header is not kept alive.
constexpr std::size_t kKeptPlacements = 4096;
constexpr std::size_t kKeptMetadataNodes = 64;
// A view remembers the layout of headers up to this size for SafetensorsView::reparse().
constexpr std::uint64_t kRememberedHeaderLimit = 64u << 10;
struct ParseStorage {
    std::vector<Placement> placements;
    std::vector<MetadataMap::node_type> spareNodes;
};
ParseStorage& parseStorage()
{
    thread_local ParseStorage storage;
    return storage;
}

[[noreturn]] void duplicateMetadataKey(const std::string& key, std::uint64_t keyAt)
{
    throw FormatError("expected distinct metadata keys, found " + JsonScanner::quoteForMessage(key) + " twice", keyAt);
}

using MetadataPlaces = std::vector<SafetensorsLayout::MetadataEntry>;

// Reads the "__metadata__" object at the scanner's cursor into the empty map `metadata`,
// taking nodes (and their strings' storage) from `spareNodes` while there are any, and,
// when `places` is given, also each entry and where its text lies, in the header's order.
void parseMetadataObject(JsonScanner& scanner, MetadataMap& metadata, std::vector<MetadataMap::node_type>& spareNodes,
                         MetadataPlaces* places = nullptr)
{
    scanner.expect('{', "'{' opening the \"__metadata__\" object");
    if (scanner.consumeIf('}'))
        return;
    do {
        const std::uint64_t keyAt = (scanner.skipWhitespace(), scanner.offset());
        if (spareNodes.empty()) {
            std::string key;
            scanner.readString(key, "a '\"' opening a metadata key");
            scanner.expect(':', "':' after a metadata key");
            std::string value;
            scanner.readString(value, "a string as the metadata value");
            if (places)
                places->push_back({key, value, {keyAt, scanner.offset()}});
            const auto [position, inserted] = metadata.emplace(std::move(key), std::move(value));
            if (!inserted)
                duplicateMetadataKey(position->first, keyAt);
            continue;
        }
        MetadataMap::node_type node = std::move(spareNodes.back());
        spareNodes.pop_back();
        scanner.readString(node.key(), "a '\"' opening a metadata key");
        scanner.expect(':', "':' after a metadata key");
        scanner.readString(node.mapped(), "a string as the metadata value");
        if (places)
            places->push_back({node.key(), node.mapped(), {keyAt, scanner.offset()}});
        auto result = metadata.insert(std::move(node));
        if (!result.inserted)
            duplicateMetadataKey(result.position->first, keyAt);
    } while (scanner.consumeIf(','));
    scanner.expect('}', "',' or '}' in the \"__metadata__\" object");
}

class HeaderParser {
public:
    // `header` is the JSON text, right after the length prefix; `bufferSize` the size of the
    // data buffer after it. `metadataPlaces`, when given, receives the metadata entries.
    HeaderParser(const std::uint8_t* header, std::uint64_t headerLength, std::uint64_t bufferSize,
                 MetadataPlaces* metadataPlaces = nullptr)
        : scanner_(header, static_cast<std::size_t>(headerLength), kLengthPrefixSize), bufferSize_(bufferSize),
          placements_(parseStorage().placements), spareNodes_(parseStorage().spareNodes), metadataPlaces_(metadataPlaces)
    {
        placements_.clear();
    }

    ~HeaderParser()
    {
        if (placements_.capacity() > kKeptPlacements)
            std::vector<Placement>().swap(placements_);
    }

    HeaderParser(const HeaderParser&) = delete;
    HeaderParser& operator=(const HeaderParser&) = delete;

    // Fills `tensors` (whose elements, and their strings' and shapes' storage, are reused
    // and the surplus dropped) and the empty map `metadata`.
    void parse(std::vector<TensorView>& tensors, MetadataMap& metadata)
    {
        used_ = 0;
        parseEntries(tensors, metadata);
        tensors.resize(used_);
    }

    std::vector<Placement>& placements() { return placements_; }
    std::uint64_t bufferSize() const { return bufferSize_; }
    // The metadata object's bytes, from the first byte after its key's ':' to its '}';
    // null when the header has none.
    const std::uint8_t* metadataBegin() const { return metadataBegin_; }
    const std::uint8_t* metadataEnd() const { return metadataEnd_; }

private:
    void parseEntries(std::vector<TensorView>& tensors, MetadataMap& metadata)
    {
        // Readers that check the header start (safetensors' InvalidHeaderStart) want '{'
        // first; writers never emit leading whitespace, so refusing it costs nothing.
        if (scanner_.peek() != '{')
            scanner_.fail("'{' as the first byte of the header");
        scanner_.expect('{', "'{'");
        tensors.reserve(kTypicalTensorCount);
        placements_.reserve(kTypicalTensorCount);
        bool sawMetadata = false;
        if (!scanner_.consumeIf('}')) {
            std::string escapedKey;
            do {
                const std::uint64_t keyAt = (scanner_.skipWhitespace(), scanner_.offset());
                std::string_view key;
                if (!scanner_.readPlainString(key)) {
                    scanner_.readString(escapedKey, "a '\"' opening a tensor name");
                    key = escapedKey;
                }
                scanner_.expect(':', "':' after a key");
                if (key == kMetadataKey) {
                    if (sawMetadata)
                        throw FormatError("expected one \"__metadata__\" entry, found a second", keyAt);
                    sawMetadata = true;
                    parseMetadata(metadata);
                } else {
                    if (key.empty())
                        throw FormatError("expected a non-empty tensor name, found \"\"", keyAt);
                    parseTensor(key, keyAt, tensors);
                }
            } while (scanner_.consumeIf(','));
            scanner_.expect('}', "',' or '}' after a top-level entry");
        }
        // Writers pad the header with spaces to align the data buffer. Other JSON whitespace
        // is accepted there too, as the reference's serde_json accepts it.
        scanner_.skipWhitespace();
        if (!scanner_.atEnd())
            scanner_.fail("only whitespace after the header object");
    }

    void parseMetadata(MetadataMap& metadata)
    {
        metadataBegin_ = scanner_.cursor();
        parseMetadataObject(scanner_, metadata, spareNodes_, metadataPlaces_);
        metadataEnd_ = scanner_.cursor();
    }

    enum Field : unsigned { kDtype = 1, kShape = 2, kDataOffsets = 4 };

    // Writers spell field names plainly; anything else (escapes, unknown names) takes the
    // general path, which decodes before comparing so "dtyp\u0065" is still "dtype".
    Field readFieldName()
    {
        if (scanner_.consumeLiteral("\"dtype\""))
            return kDtype;
        if (scanner_.consumeLiteral("\"shape\""))
            return kShape;
        if (scanner_.consumeLiteral("\"data_offsets\""))
            return kDataOffsets;
        const std::uint64_t fieldAt = (scanner_.skipWhitespace(), scanner_.offset());
        scanner_.readString(scratch_, "a '\"' opening a tensor field name");
        if (scratch_ == "dtype")
            return kDtype;
        if (scratch_ == "shape")
            return kShape;
        if (scratch_ == "data_offsets")
            return kDataOffsets;
        throw FormatError("expected a tensor field \"dtype\", \"shape\" or \"data_offsets\", found " +
                              JsonScanner::quoteForMessage(scratch_),
                          fieldAt);
    }

    DType readDtype()
    {
        const std::uint64_t valueAt = (scanner_.skipWhitespace(), scanner_.offset());
        std::string_view name;
        if (!scanner_.readPlainString(name)) {
            scanner_.readString(scratch_, "a string as the dtype");
            name = scratch_;
        }
        const std::optional<DType> dtype = dtypeFromName(name);
        if (!dtype)
            throw FormatError("expected a dtype F64, F32, F16, BF16, I64, I32, I16, I8, U8 or BOOL, found " +
                                  JsonScanner::quoteForMessage(name),
                              valueAt);
        return *dtype;
    }

    void readShape(std::vector<std::int64_t>& shape)
    {
        scanner_.expect('[', "'[' opening the shape");
        if (scanner_.consumeIf(']'))
            return;
        // Collecting on the stack first gives the shape vector exactly one allocation.
        std::int64_t inlineDims[kInlineDims];
        std::size_t count = 0;
        do {
            const auto dim =
                static_cast<std::int64_t>(scanner_.readUnsigned(kInt64Max, "a non-negative integer dimension"));
            if (count < kInlineDims) {
                inlineDims[count] = dim;
            } else {
                if (count == kInlineDims)
                    shape.assign(inlineDims, inlineDims + kInlineDims);
                shape.push_back(dim);
            }
            ++count;
        } while (scanner_.consumeIf(','));
        scanner_.expect(']', "',' or ']' in the shape");
        if (count <= kInlineDims)
            shape.assign(inlineDims, inlineDims + count);
    }

    void readDataOffsets(Placement& placement)
    {
        placement.offsetsAt = (scanner_.skipWhitespace(), scanner_.offset());
        scanner_.expect('[', "'[' opening data_offsets");
        placement.begin =
            scanner_.readUnsigned(std::numeric_limits<std::uint64_t>::max(), "a non-negative integer offset");
        scanner_.expect(',', "',' between the two data_offsets");
        placement.end =
            scanner_.readUnsigned(std::numeric_limits<std::uint64_t>::max(), "a non-negative integer offset");
        scanner_.expect(']', "']' after exactly two data_offsets");
    }

    // Reads a tensor object spelled exactly as compact writers (this builder, the reference
    // serializer) spell it: no whitespace, fields in the order dtype, shape, data_offsets.
    // Returns false, having consumed nothing, on any deviation; the general parser then
    // decides whether the deviation is legal JSON or an error worth a precise message.
    bool parseCompactTensorBody(TensorView& tensor, Placement& placement)
    {
        const std::uint8_t* p = scanner_.cursor();
        const std::uint8_t* const end = scanner_.end();
        if (!matchLiteral(p, end, "{\"dtype\":\""))
            return false;
        const std::uint8_t* dtypeStart = p;
        while (p < end && *p >= 'A' && *p <= 'Z')
            ++p;
        while (p < end && *p >= '0' && *p <= '9')
            ++p;
        const std::optional<DType> dtype = dtypeFromName(
            std::string_view(reinterpret_cast<const char*>(dtypeStart), static_cast<std::size_t>(p - dtypeStart)));
        const std::uint8_t* dtypeNameEnd = p;
        if (!dtype || !matchLiteral(p, end, "\",\"shape\":["))
            return false;
        const std::uint8_t* shapeStart = p - 1;
        std::int64_t dims[kInlineDims];
        std::size_t count = 0;
        if (!matchLiteral(p, end, "]")) {
            do {
                std::uint64_t dim = 0;
                if (count == kInlineDims || !matchSmallInteger(p, end, dim))
                    return false;
                dims[count++] = static_cast<std::int64_t>(dim);
            } while (matchLiteral(p, end, ","));
            if (!matchLiteral(p, end, "]"))
                return false;
        }
        const std::uint8_t* shapeEnd = p;
        if (!matchLiteral(p, end, ",\"data_offsets\":"))
            return false;
        const std::uint8_t* offsetsStart = p;
        if (!matchLiteral(p, end, "[") || !matchSmallInteger(p, end, placement.begin) || !matchLiteral(p, end, ",") ||
            !matchSmallInteger(p, end, placement.end) || !matchLiteral(p, end, "]}"))
            return false;
        placement.offsetsAt = scanner_.offsetOf(offsetsStart);
        placement.offsetsEnd = scanner_.offsetOf(p - 1);
        placement.entryEnd = scanner_.offsetOf(p);
        placement.dtypeAt = scanner_.offsetOf(dtypeStart - 1);
        placement.dtypeEnd = scanner_.offsetOf(dtypeNameEnd + 1);  // past the closing quote
        placement.shapeAt = scanner_.offsetOf(shapeStart);
        placement.shapeEnd = scanner_.offsetOf(shapeEnd);
        tensor.dtype = *dtype;
        tensor.shape.assign(dims, dims + count);
        scanner_.setCursor(p);
        return true;
    }

    void parseTensor(std::string_view name, std::uint64_t keyAt, std::vector<TensorView>& tensors)
    {
        scanner_.skipWhitespace();
        const std::uint8_t* objectStart = scanner_.cursor();

        Placement placement;
        placement.keyAt = keyAt;
        placement.nameHash = hashName(name);
        placement.index = used_;
        if (used_ == tensors.size())
            tensors.emplace_back();
        TensorView& tensor = tensors[used_++];
        tensor.name.assign(name);
        tensor.dtype = DType::F32;
        tensor.shape.clear();
        tensor.data = ByteSpan();

        if (parseCompactTensorBody(tensor, placement)) {
            checkExtent(tensor, placement);
            placements_.push_back(placement);
            return;
        }
        scanner_.setCursor(objectStart);
        if (!scanner_.consumeIf('{'))
            scanner_.fail("'{' opening the tensor object of " + JsonScanner::quoteForMessage(name));
        const std::uint64_t objectAt = scanner_.offset() - 1;
        unsigned seen = 0;
        if (!scanner_.consumeIf('}')) {
            do {
                const std::uint64_t fieldAt = (scanner_.skipWhitespace(), scanner_.offset());
                const Field field = readFieldName();
                if (seen & field) {
                    const char* fieldName = field == kDtype ? "dtype" : field == kShape ? "shape" : "data_offsets";
                    throw FormatError(std::string("expected each tensor field once, found \"") + fieldName +
                                          "\" twice",
                                      fieldAt);
                }
                seen |= field;
                scanner_.expect(':', "':' after a tensor field name");
                const std::uint64_t valueAt = (scanner_.skipWhitespace(), scanner_.offset());
                if (field == kDtype) {
                    tensor.dtype = readDtype();
                    placement.dtypeAt = valueAt;
                    placement.dtypeEnd = scanner_.offset();
                } else if (field == kShape) {
                    readShape(tensor.shape);
                    placement.shapeAt = valueAt;
                    placement.shapeEnd = scanner_.offset();
                } else {
                    readDataOffsets(placement);
                    placement.offsetsEnd = scanner_.offset();
                }
            } while (scanner_.consumeIf(','));
            scanner_.expect('}', "',' or '}' in a tensor object");
        }
        placement.entryEnd = scanner_.offset();
        if (seen != (kDtype | kShape | kDataOffsets)) {
            const char* missing = !(seen & kDtype) ? "\"dtype\"" : !(seen & kShape) ? "\"shape\"" : "\"data_offsets\"";
            throw FormatError("expected the tensor " + JsonScanner::quoteForMessage(tensor.name) + " to have " +
                                  missing + ", found it missing",
                              objectAt);
        }
        checkExtent(tensor, placement);
        placements_.push_back(placement);
    }

    void checkExtent(const TensorView& tensor, const Placement& placement) const
    {
        const auto quoted = [&] { return JsonScanner::quoteForMessage(tensor.name); };
        if (placement.begin > placement.end)
            throw FormatError("expected data_offsets begin <= end for " + quoted() + ", found [" +
                                  std::to_string(placement.begin) + ", " + std::to_string(placement.end) + "]",
                              placement.offsetsAt);
        if (placement.end > bufferSize_)
            throw FormatError("expected data_offsets end <= " + std::to_string(bufferSize_) +
                                  " (the data buffer size) for " + quoted() + ", found " +
                                  std::to_string(placement.end),
                              placement.offsetsAt);
        std::uint64_t count = 0;
        std::uint64_t bytes = 0;
        if (!checkedElementCount(tensor.shape, count) ||
            !multiplyChecked(count, dtypeSize(tensor.dtype), std::numeric_limits<std::uint64_t>::max(), bytes))
            throw FormatError("expected a shape whose byte size fits in 64 bits for " + quoted() +
                                  ", found one that overflows",
                              placement.keyAt);
        if (bytes != placement.end - placement.begin)
            throw FormatError("expected " + std::to_string(bytes) + " bytes for " + quoted() + " (shape x " +
                                  std::string(dtypeName(tensor.dtype)) + "), found data_offsets spanning " +
                                  std::to_string(placement.end - placement.begin),
                              placement.offsetsAt);
    }

    JsonScanner scanner_;
    std::uint64_t bufferSize_;
    std::vector<Placement>& placements_;
    std::vector<MetadataMap::node_type>& spareNodes_;
    MetadataPlaces* metadataPlaces_;
    std::size_t used_ = 0;  // tensors filled so far
    const std::uint8_t* metadataBegin_ = nullptr;
    const std::uint8_t* metadataEnd_ = nullptr;
    // Holds field names and dtypes that needed decoding.
    std::string scratch_;
};

void rejectDuplicateNames(const std::vector<TensorView>& tensors, const std::vector<Placement>& placements)
{
    const auto fail = [&](std::size_t later) {
        throw FormatError("expected distinct tensor names, found " +
                              JsonScanner::quoteForMessage(tensors[later].name) + " twice",
                          placements[later].keyAt);
    };
    if (tensors.size() <= kPairwiseDuplicateLimit) {
        for (std::size_t i = 1; i < tensors.size(); ++i) {
            for (std::size_t j = 0; j < i; ++j) {
                if (placements[i].nameHash == placements[j].nameHash && tensors[i].name == tensors[j].name)
                    fail(i);
            }
        }
        return;
    }
    std::vector<std::size_t> order(tensors.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = i;
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return tensors[a].name != tensors[b].name ? tensors[a].name < tensors[b].name : a < b;
    });
    for (std::size_t i = 1; i < order.size(); ++i) {
        if (tensors[order[i]].name == tensors[order[i - 1]].name)
            fail(order[i]);
    }
}

// The length prefix of a blob of `blobSize` bytes whose first bytes are `head`, checked
// against the limit and the blob's size.
std::uint64_t checkedHeaderLength(ByteSpan head, std::uint64_t blobSize)
{
    if (blobSize < kLengthPrefixSize || head.size < kLengthPrefixSize)
        throw FormatError("expected at least 8 bytes (the header length), found " + std::to_string(std::min<std::uint64_t>(blobSize, head.size)), 0);
    const std::uint64_t headerLength = readLittleEndian64(head.data);
    if (headerLength == 0)
        throw FormatError("expected a header length of at least 1, found 0", 0);
    if (headerLength > SafetensorsView::kMaxHeaderSize)
        throw FormatError("expected a header length of at most " + std::to_string(SafetensorsView::kMaxHeaderSize) + ", found " +
                              std::to_string(headerLength),
                          0);
    if (headerLength > blobSize - kLengthPrefixSize)
        throw FormatError("expected a header length of at most " + std::to_string(blobSize - kLengthPrefixSize) +
                              " (the bytes after the length), found " + std::to_string(headerLength),
                          0);
    return headerLength;
}

// Sorts `placements` into the order of the tensors' data and checks that the tensors tile
// the data buffer exactly; true when the header already listed them in that order.
bool placeInDataOrder(std::vector<Placement>& placements, const std::vector<TensorView>& tensors, std::uint64_t bufferSize,
                      std::uint64_t dataOffset)
{
    // Sorting by (begin, end) as the reference does lets zero-size tensors share an offset
    // with the tensor that starts there, whatever the header order.
    const auto byOffsets = [](const Placement& a, const Placement& b) {
        return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
    };
    const bool inOrder = std::is_sorted(placements.begin(), placements.end(), byOffsets);
    if (!inOrder)
        std::stable_sort(placements.begin(), placements.end(), byOffsets);

    std::uint64_t cursor = 0;
    for (const Placement& placement : placements) {
        if (placement.begin != cursor) {
            const std::string quoted = JsonScanner::quoteForMessage(tensors[placement.index].name);
            const std::string problem = placement.begin < cursor ? "overlapping the previous tensor"
                                                                 : "leaving a hole of " +
                                                                       std::to_string(placement.begin - cursor) +
                                                                       " bytes";
            throw FormatError("expected " + quoted + " to start at data offset " + std::to_string(cursor) +
                                  " where the previous tensor ends, found " + std::to_string(placement.begin) +
                                  ", " + problem,
                              placement.offsetsAt);
        }
        cursor = placement.end;
    }
    if (cursor != bufferSize)
        throw FormatError("expected the tensors to cover the whole data buffer of " + std::to_string(bufferSize) +
                              " bytes, found " + std::to_string(bufferSize - cursor) + " unused bytes after the last tensor",
                          dataOffset + cursor);
    return inOrder;
}

void appendJsonString(std::string& out, std::string_view text)
{
    out.push_back('"');
    for (char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(ch);
        } else if (c < 0x20) {
            static constexpr char kHex[] = "0123456789abcdef";
            out += "\\u00";
            out.push_back(kHex[c >> 4]);
            out.push_back(kHex[c & 0xF]);
        } else {
            out.push_back(ch);
        }
    }
    out.push_back('"');
}

template <typename Integer>
void appendInteger(std::string& out, Integer value)
{
    char buffer[24];
    const auto result = std::to_chars(buffer, buffer + sizeof buffer, value);
    out.append(buffer, result.ptr);
}

}  // namespace

std::int64_t TensorView::elementCount() const
{
    std::uint64_t count = 0;
    if (!checkedElementCount(shape, count))
        throw Error("tensor \"" + name + "\": shape is negative or its element count overflows");
    return static_cast<std::int64_t>(count);
}

SafetensorsView SafetensorsView::parse(ByteSpan blob)
{
    SafetensorsView view;
    view.parseInto(blob);
    return view;
}

void SafetensorsView::reparse(ByteSpan blob)
{
    // Hand the metadata nodes to this thread's spares; the parse takes them back.
    std::vector<MetadataMap::node_type>& spareNodes = parseStorage().spareNodes;
    const auto recycleMetadata = [&] {
        while (!metadata_.empty()) {
            if (spareNodes.size() < kKeptMetadataNodes)
                spareNodes.push_back(metadata_.extract(metadata_.begin()));
            else
                metadata_.erase(metadata_.begin());
        }
    };
    recycleMetadata();
    try {
        if (layoutKnown_ && reparseMetadataOnly(blob))
            return;
        recycleMetadata();
        parseInto(blob);
    } catch (...) {
        tensors_.clear();
        metadata_.clear();
        dataOffset_ = 0;
        forgetLayout();
        throw;
    }
}

bool SafetensorsView::reparseMetadataOnly(ByteSpan blob)
{
    // Anything parseInto() would check before the header's JSON goes to it.
    if (blob.size < kLengthPrefixSize)
        return false;
    const std::uint64_t headerLength = readLittleEndian64(blob.data);
    if (headerLength == 0 || headerLength > kMaxHeaderSize || headerLength > blob.size - kLengthPrefixSize ||
        blob.size - kLengthPrefixSize - headerLength != layoutBufferSize_)
        return false;
    const std::uint8_t* header = blob.data + kLengthPrefixSize;
    const std::size_t before = headerBefore_.size();
    if (headerLength < before + headerAfter_.size() || std::memcmp(header, headerBefore_.data(), before) != 0)
        return false;
    if (!layoutHasMetadata_) {
        if (headerLength != before)
            return false;
    } else {
        // The full parse would reach the metadata object in the same state, through the same
        // bytes, so a failure here is the failure it would report, at the same offset.
        JsonScanner scanner(header, static_cast<std::size_t>(headerLength), kLengthPrefixSize);
        scanner.setCursor(header + before);
        parseMetadataObject(scanner, metadata_, parseStorage().spareNodes);
        const std::uint8_t* rest = scanner.cursor();
        if (static_cast<std::uint64_t>(header + headerLength - rest) != headerAfter_.size() ||
            std::memcmp(rest, headerAfter_.data(), headerAfter_.size()) != 0)
            return false;
    }
    dataOffset_ = kLengthPrefixSize + headerLength;
    const std::uint8_t* buffer = blob.data + dataOffset_;
    for (std::size_t i = 0; i < tensors_.size(); ++i)
        tensors_[i].data = ByteSpan(buffer + layoutDataBegins_[i], tensors_[i].data.size);
    return true;
}

void SafetensorsView::forgetLayout()
{
    layoutKnown_ = false;
    headerBefore_.clear();
    headerAfter_.clear();
    layoutDataBegins_.clear();
}

void SafetensorsView::parseInto(ByteSpan blob)
{
    SafetensorsView& view = *this;
    const std::uint64_t headerLength = checkedHeaderLength(blob, blob.size);

    view.forgetLayout();
    view.dataOffset_ = kLengthPrefixSize + headerLength;
    HeaderParser parser(blob.data + kLengthPrefixSize, headerLength, blob.size - kLengthPrefixSize - headerLength);
    parser.parse(view.tensors_, view.metadata_);
    std::vector<Placement>& placements = parser.placements();
    rejectDuplicateNames(view.tensors_, placements);
    const bool inOrder = placeInDataOrder(placements, view.tensors_, parser.bufferSize(), view.dataOffset_);

    const std::uint8_t* buffer = blob.data + view.dataOffset_;
    if (inOrder) {
        for (std::size_t i = 0; i < placements.size(); ++i)
            view.tensors_[i].data = ByteSpan(buffer + placements[i].begin, placements[i].end - placements[i].begin);
    } else {
        std::vector<TensorView> sorted;
        sorted.reserve(placements.size());
        for (const Placement& placement : placements) {
            sorted.push_back(std::move(view.tensors_[placement.index]));
            sorted.back().data = ByteSpan(buffer + placement.begin, placement.end - placement.begin);
        }
        view.tensors_ = std::move(sorted);
    }

    // Kept for reparse(); a header too large to be worth keeping is parsed in full each time.
    if (headerLength > kRememberedHeaderLimit)
        return;
    const std::uint8_t* header = blob.data + kLengthPrefixSize;
    view.layoutHasMetadata_ = parser.metadataBegin() != nullptr;
    if (view.layoutHasMetadata_) {
        view.headerBefore_.assign(reinterpret_cast<const char*>(header), static_cast<std::size_t>(parser.metadataBegin() - header));
        view.headerAfter_.assign(reinterpret_cast<const char*>(parser.metadataEnd()),
                                 static_cast<std::size_t>(header + headerLength - parser.metadataEnd()));
    } else {
        view.headerBefore_.assign(reinterpret_cast<const char*>(header), static_cast<std::size_t>(headerLength));
    }
    view.layoutBufferSize_ = parser.bufferSize();
    view.layoutDataBegins_.resize(view.tensors_.size());
    for (std::size_t i = 0; i < view.tensors_.size(); ++i)
        view.layoutDataBegins_[i] = static_cast<std::uint64_t>(view.tensors_[i].data.data - buffer);
    view.layoutKnown_ = true;
}

const TensorView* SafetensorsView::find(std::string_view name) const
{
    for (const TensorView& tensor : tensors_) {
        if (tensor.name == name)
            return &tensor;
    }
    return nullptr;
}

std::string_view SafetensorsView::metadataValue(std::string_view key) const
{
    const auto found = metadata_.find(key);
    return found == metadata_.end() ? std::string_view() : std::string_view(found->second);
}

SafetensorsLayout SafetensorsLayout::parse(ByteSpan head, std::uint64_t blobSize)
{
    const std::uint64_t headerLength = checkedHeaderLength(head, blobSize);
    if (head.size - kLengthPrefixSize < headerLength)
        throw FormatError("expected the whole header of " + std::to_string(headerLength) + " bytes, found " +
                              std::to_string(head.size - kLengthPrefixSize),
                          head.size);
    SafetensorsLayout layout;
    layout.headerLength = headerLength;
    layout.dataOffset = kLengthPrefixSize + headerLength;
    std::vector<TensorView> tensors;
    MetadataMap metadata;
    HeaderParser parser(head.data + kLengthPrefixSize, headerLength, blobSize - layout.dataOffset, &layout.metadata);
    parser.parse(tensors, metadata);
    std::vector<Placement>& placements = parser.placements();
    rejectDuplicateNames(tensors, placements);
    placeInDataOrder(placements, tensors, parser.bufferSize(), layout.dataOffset);

    layout.tensors.reserve(placements.size());
    for (const Placement& placement : placements) {
        TensorView& tensor = tensors[placement.index];
        layout.tensors.push_back({std::move(tensor.name), tensor.dtype, std::move(tensor.shape),
                                  {placement.keyAt, placement.entryEnd}, {placement.dtypeAt, placement.dtypeEnd},
                                  {placement.shapeAt, placement.shapeEnd}, {placement.offsetsAt, placement.offsetsEnd},
                                  {layout.dataOffset + placement.begin, layout.dataOffset + placement.end}});
    }
    if (parser.metadataBegin())
        layout.metadataObject = Extent{static_cast<std::uint64_t>(parser.metadataBegin() - head.data),
                                       static_cast<std::uint64_t>(parser.metadataEnd() - head.data)};
    return layout;
}

void SafetensorsBuilder::setMetadata(std::string key, std::string value)
{
    // A reader would reject the blob later; failing here names the culprit.
    if (!isValidUtf8(key) || !isValidUtf8(value))
        throw Error("safetensors metadata must be valid UTF-8 (key " + JsonScanner::quoteForMessage(key) + ")");
    metadata_[std::move(key)] = std::move(value);
}

void SafetensorsBuilder::add(std::string name, DType dtype, std::vector<std::int64_t> shape, ByteSpan data)
{
    const std::string quoted = JsonScanner::quoteForMessage(name);
    if (name.empty())
        throw Error("safetensors tensor names must not be empty");
    if (name == kMetadataKey)
        throw Error("\"__metadata__\" is reserved and cannot name a tensor");
    if (!isValidUtf8(name))
        throw Error("safetensors tensor name " + quoted + " is not valid UTF-8");
    for (const Entry& entry : entries_) {
        if (entry.name == name)
            throw Error("safetensors tensor " + quoted + " added twice");
    }
    std::uint64_t count = 0;
    std::uint64_t bytes = 0;
    if (!checkedElementCount(shape, count) ||
        !multiplyChecked(count, dtypeSize(dtype), std::numeric_limits<std::uint64_t>::max(), bytes))
        throw Error("safetensors tensor " + quoted + " has a negative or overflowing shape");
    if (bytes != data.size)
        throw Error("safetensors tensor " + quoted + " needs " + std::to_string(bytes) + " bytes for its shape and " +
                    std::string(dtypeName(dtype)) + ", got " + std::to_string(data.size));
    entries_.push_back(Entry{std::move(name), dtype, std::move(shape), data});
}

std::vector<std::uint8_t> SafetensorsBuilder::header() const
{
    std::string json;
    json.reserve(64 + entries_.size() * 96);
    json.push_back('{');
    bool first = true;
    if (!metadata_.empty()) {
        appendJsonString(json, kMetadataKey);
        json += ":{";
        for (const auto& [key, value] : metadata_) {
            if (!first)
                json.push_back(',');
            first = false;
            appendJsonString(json, key);
            json.push_back(':');
            appendJsonString(json, value);
        }
        json.push_back('}');
        first = false;
    }
    std::uint64_t offset = 0;
    for (const Entry& entry : entries_) {
        if (!first)
            json.push_back(',');
        first = false;
        appendJsonString(json, entry.name);
        json += ":{\"dtype\":\"";
        json += dtypeName(entry.dtype);
        json += "\",\"shape\":[";
        for (std::size_t i = 0; i < entry.shape.size(); ++i) {
            if (i != 0)
                json.push_back(',');
            appendInteger(json, entry.shape[i]);
        }
        json += "],\"data_offsets\":[";
        appendInteger(json, offset);
        json.push_back(',');
        offset += entry.data.size;
        appendInteger(json, offset);
        json += "]}";
    }
    json.push_back('}');
    // The prefix is 8 bytes, so padding the JSON to a multiple of 8 aligns the data buffer.
    json.resize((json.size() + 7) / 8 * 8, ' ');
    if (json.size() > SafetensorsView::kMaxHeaderSize)
        throw Error("safetensors header of " + std::to_string(json.size()) + " bytes exceeds the limit of " +
                    std::to_string(SafetensorsView::kMaxHeaderSize));

    std::vector<std::uint8_t> bytes(kLengthPrefixSize + json.size());
    std::uint64_t length = json.size();
    for (std::size_t i = 0; i < kLengthPrefixSize; ++i, length >>= 8)
        bytes[i] = static_cast<std::uint8_t>(length & 0xFF);
    std::memcpy(bytes.data() + kLengthPrefixSize, json.data(), json.size());
    return bytes;
}

std::vector<ByteSpan> SafetensorsBuilder::pieces(std::vector<std::uint8_t>& headerStorage) const
{
    headerStorage = header();
    std::vector<ByteSpan> result;
    result.reserve(1 + entries_.size());
    result.emplace_back(headerStorage);
    for (const Entry& entry : entries_)
        result.push_back(entry.data);
    return result;
}

std::uint64_t SafetensorsBuilder::serializedSize() const
{
    std::uint64_t size = header().size();
    for (const Entry& entry : entries_)
        size += entry.data.size;
    return size;
}

std::vector<std::uint8_t> SafetensorsBuilder::toBytes() const
{
    std::vector<std::uint8_t> bytes = header();
    std::uint64_t total = bytes.size();
    for (const Entry& entry : entries_)
        total += entry.data.size;
    bytes.reserve(total);
    for (const Entry& entry : entries_)
        bytes.insert(bytes.end(), entry.data.begin(), entry.data.end());
    return bytes;
}

}  // namespace zkdv
