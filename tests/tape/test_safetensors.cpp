// Tests for the strict safetensors reader and writer: round trips, hostile headers, mutations.

#include <QtTest>

#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/tape/dtype.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/util/error.h"

using zkdv::ByteSpan;
using zkdv::DType;
using zkdv::SafetensorsBuilder;
using zkdv::SafetensorsView;

Q_DECLARE_METATYPE(zkdv::DType)
Q_DECLARE_METATYPE(std::vector<std::int64_t>)

namespace {

const DType kAllDtypes[] = {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64,
                            DType::I32, DType::I16, DType::I8,  DType::U8,   DType::Bool};

ByteSpan spanOf(const QByteArray& bytes)
{
    return ByteSpan(bytes.constData(), static_cast<std::size_t>(bytes.size()));
}

QByteArray toQByteArray(const std::vector<std::uint8_t>& bytes)
{
    return QByteArray(reinterpret_cast<const char*>(bytes.data()), static_cast<qsizetype>(bytes.size()));
}

QByteArray lengthPrefix(std::uint64_t length)
{
    QByteArray prefix(8, '\0');
    for (int i = 0; i < 8; ++i, length >>= 8)
        prefix[i] = static_cast<char>(length & 0xFF);
    return prefix;
}

// A blob with `json` as its header (unpadded, as a hostile writer would send it).
QByteArray blobWithHeader(const QByteArray& json, const QByteArray& data = {})
{
    return lengthPrefix(static_cast<std::uint64_t>(json.size())) + json + data;
}

// Runs parse and says how it ended, so that a test can tell FormatError from anything else.
enum class Outcome { Parsed, FormatError, OtherException };

Outcome tryParse(const QByteArray& blob, std::string* message = nullptr, std::uint64_t* offset = nullptr)
{
    try {
        SafetensorsView::parse(spanOf(blob));
        return Outcome::Parsed;
    } catch (const zkdv::FormatError& error) {
        if (message)
            *message = error.detail();
        if (offset)
            *offset = error.offset().value_or(std::numeric_limits<std::uint64_t>::max());
        return Outcome::FormatError;
    } catch (...) {
        return Outcome::OtherException;
    }
}

std::vector<std::uint8_t> patternBytes(std::size_t size, std::uint8_t seed)
{
    std::vector<std::uint8_t> bytes(size);
    for (std::size_t i = 0; i < size; ++i)
        bytes[i] = static_cast<std::uint8_t>(seed + i * 37);
    return bytes;
}

std::size_t byteSize(DType dtype, const std::vector<std::int64_t>& shape)
{
    std::size_t count = 1;
    for (std::int64_t dim : shape)
        count *= static_cast<std::size_t>(dim);
    return count * zkdv::dtypeSize(dtype);
}

// A small valid blob with metadata and three tensors, for exhaustive mutation loops.
QByteArray smallValidBlob()
{
    static const std::vector<std::uint8_t> a = patternBytes(8, 1);
    static const std::vector<std::uint8_t> b = patternBytes(3, 2);
    SafetensorsBuilder builder;
    builder.setMetadata("k", "v");
    builder.add("a", DType::F32, {2}, a);
    builder.add("b", DType::U8, {3, 1}, b);
    builder.add("e", DType::I16, {0}, ByteSpan());
    return toQByteArray(builder.toBytes());
}

// The invariants every successfully parsed view must satisfy, whatever the input was.
void verifyViewInvariants(const SafetensorsView& view, const QByteArray& blob)
{
    const auto* blobBegin = reinterpret_cast<const std::uint8_t*>(blob.constData());
    const auto* cursor = blobBegin + view.dataOffset();
    for (const zkdv::TensorView& tensor : view.tensors()) {
        QVERIFY(!tensor.name.empty());
        QCOMPARE(tensor.data.data, cursor);
        QCOMPARE(tensor.data.size,
                 static_cast<std::size_t>(tensor.elementCount()) * zkdv::dtypeSize(tensor.dtype));
        cursor += tensor.data.size;
    }
    QCOMPARE(cursor, blobBegin + blob.size());
}

// Calls visit(position, value, mutated) for every blob that differs from `original` in
// exactly one byte, until the test has failed.
template <typename Visit>
void forEachSingleByteMutation(const QByteArray& original, Visit visit)
{
    for (int position = 0; position < original.size(); ++position) {
        for (int value = 0; value < 256; ++value) {
            if (static_cast<unsigned char>(original[position]) == value)
                continue;
            QByteArray mutated = original;
            mutated[position] = static_cast<char>(value);
            visit(position, value, mutated);
            if (QTest::currentTestFailed())
                return;
        }
    }
}

// Everything a parsed view says, or the error a parse reported: two parses of the same
// bytes must describe the same way.
std::string describe(const SafetensorsView& view, const QByteArray& blob)
{
    const auto* base = reinterpret_cast<const std::uint8_t*>(blob.constData());
    std::string out = "data at " + std::to_string(view.dataOffset()) + ";";
    for (const zkdv::TensorView& tensor : view.tensors()) {
        out += " " + tensor.name + ":" + std::string(zkdv::dtypeName(tensor.dtype)) + "[";
        for (std::int64_t dim : tensor.shape)
            out += std::to_string(dim) + ",";
        out += "]@" + std::to_string(tensor.data.data - base) + "+" + std::to_string(tensor.data.size);
    }
    for (const auto& [key, value] : view.metadata())
        out += " " + key + "=" + value;
    return out;
}

template <typename Parse>
std::string outcomeOf(Parse parse)
{
    try {
        return parse();
    } catch (const zkdv::FormatError& error) {
        return "error at " + (error.offset() ? std::to_string(*error.offset()) : std::string("-")) + ": " + error.detail();
    }
}

QByteArray blobOfLayout(const std::string& index, const std::string& wallTime, std::uint8_t seed)
{
    static std::vector<std::vector<std::uint8_t>> storage;
    storage.push_back(patternBytes(12, seed));
    storage.push_back(patternBytes(3, static_cast<std::uint8_t>(seed + 1)));
    SafetensorsBuilder builder;
    builder.setMetadata("index", index);
    builder.setMetadata("wall_time_ns", wallTime);
    builder.add("loss", DType::F32, {3}, storage[storage.size() - 2]);
    builder.add("batch/0", DType::U8, {3}, storage.back());
    return toQByteArray(builder.toBytes());
}

}  // namespace

class TestSafetensors : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void dtypeNamesAndSizes();
    void roundTripsEveryDtype_data();
    void roundTripsEveryDtype();
    void roundTripsManyTensorsInInsertionOrder();
    void roundTripsMetadataWithEscapesAndUtf8();
    void headerIsPaddedAndLaidOutAsSpecified();
    void emptyBuilderMakesAValidBlob();
    void piecesConcatenateToBytes();
    void builderRejectsBadTensors_data();
    void builderRejectsBadTensors();
    void acceptsWhitespaceAnyKeyOrderAndEscapes();
    void sortsByOffsetAndKeepsHeaderOrderForTies();
    void findAndMetadataValueReportAbsence();
    void rejectsHostileHeaders_data();
    void rejectsHostileHeaders();
    void errorOffsetsPointAtTheProblem_data();
    void errorOffsetsPointAtTheProblem();
    void rejectsEveryTruncation();
    void everyByteValueAtEveryPositionParsesOrThrowsFormatError();
    void parsesTwelveTensorHeader();
    void reparseOfOneLayoutSeesEachBlobsMetadataAndData();
    void reparseAgreesWithParseOnEveryMutation_data();
    void reparseAgreesWithParseOnEveryMutation();
};

void TestSafetensors::dtypeNamesAndSizes()
{
    const char* names[] = {"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL"};
    const std::size_t sizes[] = {8, 4, 2, 2, 8, 4, 2, 1, 1, 1};
    for (std::size_t i = 0; i < std::size(kAllDtypes); ++i) {
        QCOMPARE(zkdv::dtypeName(kAllDtypes[i]), std::string_view(names[i]));
        QCOMPARE(zkdv::dtypeFromName(names[i]), std::optional<DType>(kAllDtypes[i]));
        QCOMPARE(zkdv::dtypeSize(kAllDtypes[i]), sizes[i]);
        QCOMPARE(zkdv::isFloatingPoint(kAllDtypes[i]), i < 4);
    }
    QVERIFY(!zkdv::dtypeFromName("f32"));
    QVERIFY(!zkdv::dtypeFromName("Bool"));
    QVERIFY(!zkdv::dtypeFromName(""));
    QVERIFY(!zkdv::dtypeFromName("F32 "));
    QVERIFY(!zkdv::dtypeFromName("U16"));
}

void TestSafetensors::roundTripsEveryDtype_data()
{
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<std::vector<std::int64_t>>("shape");
    const std::vector<std::vector<std::int64_t>> shapes = {{}, {0}, {1}, {7}, {2, 3}, {3, 0, 5}, {1, 1, 1, 1}, {2, 2, 2}};
    for (DType dtype : kAllDtypes) {
        for (const auto& shape : shapes) {
            QString label = QString::fromLatin1(zkdv::dtypeName(dtype).data()) + QLatin1String(" [");
            for (std::size_t i = 0; i < shape.size(); ++i)
                label += (i ? QLatin1String(",") : QLatin1String("")) + QString::number(shape[i]);
            label += QLatin1String("]");
            QTest::newRow(qPrintable(label)) << dtype << shape;
        }
    }
}

void TestSafetensors::roundTripsEveryDtype()
{
    QFETCH(DType, dtype);
    QFETCH(std::vector<std::int64_t>, shape);

    const std::vector<std::uint8_t> data = patternBytes(byteSize(dtype, shape), 11);
    const std::vector<std::uint8_t> tail = patternBytes(4, 99);
    SafetensorsBuilder builder;
    builder.add("tensor", dtype, shape, data);
    // A second tensor after it proves the first one's extent was recorded exactly.
    builder.add("tail", DType::U8, {4}, tail);
    const QByteArray blob = toQByteArray(builder.toBytes());
    QCOMPARE(static_cast<std::uint64_t>(blob.size()), builder.serializedSize());

    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    QVERIFY(view.metadata().empty());
    const zkdv::TensorView* tensor = view.find("tensor");
    QVERIFY(tensor);
    QCOMPARE(tensor->dtype, dtype);
    QCOMPARE(tensor->shape, shape);
    QCOMPARE(static_cast<std::size_t>(tensor->elementCount()) * zkdv::dtypeSize(dtype), data.size());
    QCOMPARE(std::vector<std::uint8_t>(tensor->data.begin(), tensor->data.end()), data);
    QCOMPARE(view.tensors().size(), std::size_t(2));
    QCOMPARE(view.tensors()[1].name, std::string("tail"));
    QCOMPARE(std::vector<std::uint8_t>(view.tensors()[1].data.begin(), view.tensors()[1].data.end()), tail);
    QCOMPARE(view.dataOffset() % 8, std::uint64_t(0));
    verifyViewInvariants(view, blob);
}

void TestSafetensors::roundTripsManyTensorsInInsertionOrder()
{
    // More tensors than the parser compares pairwise, so the sorted duplicate check runs too.
    std::vector<std::vector<std::uint8_t>> storage;
    SafetensorsBuilder builder;
    for (int i = 0; i < 100; ++i) {
        const DType dtype = kAllDtypes[i % std::size(kAllDtypes)];
        const std::vector<std::int64_t> shape = {i % 3, 2};
        storage.push_back(patternBytes(byteSize(dtype, shape), static_cast<std::uint8_t>(i)));
        builder.add("t" + std::to_string(99 - i), dtype, shape, storage.back());
    }
    const QByteArray blob = toQByteArray(builder.toBytes());
    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    QCOMPARE(view.tensors().size(), std::size_t(100));
    for (int i = 0; i < 100; ++i) {
        const zkdv::TensorView& tensor = view.tensors()[static_cast<std::size_t>(i)];
        QCOMPARE(tensor.name, "t" + std::to_string(99 - i));
        QCOMPARE(std::vector<std::uint8_t>(tensor.data.begin(), tensor.data.end()), storage[static_cast<std::size_t>(i)]);
    }
    verifyViewInvariants(view, blob);
}

void TestSafetensors::roundTripsMetadataWithEscapesAndUtf8()
{
    const std::string awkward = std::string("quote \" backslash \\ slash / newline \n tab \t nul ") + '\0' +
                                " ctrl \x01\x1f del \x7f";
    const std::string utf8 = "Grüße, 証明, 🔐";
    const std::vector<std::uint8_t> data = patternBytes(4, 3);

    SafetensorsBuilder builder;
    builder.setMetadata("awkward", awkward);
    builder.setMetadata("utf8 ключ", utf8);
    builder.setMetadata("empty", "");
    builder.setMetadata("", "empty key");
    builder.setMetadata("replaced", "first");
    builder.setMetadata("replaced", "second");
    builder.add("wëird \"name\"\n\x02", DType::F32, {1}, data);

    const std::vector<std::uint8_t> header = builder.header();
    const std::string json(header.begin() + 8, header.end());
    QVERIFY(json.find("\\u0001") != std::string::npos);
    QVERIFY(json.find("\\u001f") != std::string::npos);
    QVERIFY(json.find("\\u0000") != std::string::npos);
    QVERIFY(json.find("\\\"") != std::string::npos);
    for (char c : json)
        QVERIFY(static_cast<unsigned char>(c) >= 0x20);

    const QByteArray blob = toQByteArray(builder.toBytes());
    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    QCOMPARE(view.metadata().size(), std::size_t(5));
    QCOMPARE(view.metadataValue("awkward"), std::string_view(awkward));
    QCOMPARE(view.metadataValue("utf8 ключ"), std::string_view(utf8));
    QCOMPARE(view.metadataValue("empty"), std::string_view());
    QCOMPARE(view.metadataValue(""), std::string_view("empty key"));
    QCOMPARE(view.metadataValue("replaced"), std::string_view("second"));
    QVERIFY(view.find("wëird \"name\"\n\x02"));
}

void TestSafetensors::headerIsPaddedAndLaidOutAsSpecified()
{
    const std::vector<std::uint8_t> a = patternBytes(6, 1);
    const std::vector<std::uint8_t> b = patternBytes(8, 2);
    SafetensorsBuilder builder;
    builder.add("z", DType::I16, {3}, a);
    builder.add("a", DType::F64, {}, b);
    builder.setMetadata("format", "zkdv");

    const std::vector<std::uint8_t> header = builder.header();
    QCOMPARE(header.size() % 8, std::size_t(0));
    std::uint64_t length = 0;
    for (int i = 7; i >= 0; --i)
        length = length << 8 | header[static_cast<std::size_t>(i)];
    QCOMPARE(length, static_cast<std::uint64_t>(header.size() - 8));

    std::string json(header.begin() + 8, header.end());
    const std::size_t closing = json.find_last_not_of(' ');
    QVERIFY(json.size() - closing - 1 < 8);
    json.resize(closing + 1);
    QCOMPARE(json, std::string("{\"__metadata__\":{\"format\":\"zkdv\"},"
                               "\"z\":{\"dtype\":\"I16\",\"shape\":[3],\"data_offsets\":[0,6]},"
                               "\"a\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[6,14]}}"));
}

void TestSafetensors::emptyBuilderMakesAValidBlob()
{
    const SafetensorsBuilder builder;
    const QByteArray blob = toQByteArray(builder.toBytes());
    QCOMPARE(blob.size(), 16);
    QCOMPARE(blob.mid(8), QByteArray("{}      "));
    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    QVERIFY(view.tensors().empty());
    QVERIFY(view.metadata().empty());
    QCOMPARE(view.dataOffset(), std::uint64_t(16));
}

void TestSafetensors::piecesConcatenateToBytes()
{
    const std::vector<std::uint8_t> a = patternBytes(12, 5);
    const std::vector<std::uint8_t> b = patternBytes(2, 6);
    SafetensorsBuilder builder;
    builder.setMetadata("m", "1");
    builder.add("a", DType::I32, {3}, a);
    builder.add("empty", DType::BF16, {0, 4}, ByteSpan());
    builder.add("b", DType::Bool, {2}, b);

    std::vector<std::uint8_t> headerStorage;
    const std::vector<ByteSpan> pieces = builder.pieces(headerStorage);
    QCOMPARE(pieces.size(), std::size_t(4));
    QCOMPARE(headerStorage, builder.header());
    QCOMPARE(pieces[0].data, headerStorage.data());
    std::vector<std::uint8_t> joined;
    for (const ByteSpan& piece : pieces)
        joined.insert(joined.end(), piece.begin(), piece.end());
    QCOMPARE(joined, builder.toBytes());
    QCOMPARE(static_cast<std::uint64_t>(joined.size()), builder.serializedSize());
}

void TestSafetensors::builderRejectsBadTensors_data()
{
    QTest::addColumn<QByteArray>("name");
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<std::vector<std::int64_t>>("shape");
    QTest::addColumn<int>("dataSize");

    QTest::newRow("too few bytes") << QByteArray("t") << DType::F32 << std::vector<std::int64_t>{2} << 7;
    QTest::newRow("too many bytes") << QByteArray("t") << DType::F32 << std::vector<std::int64_t>{2} << 9;
    QTest::newRow("scalar needs one element") << QByteArray("t") << DType::F64 << std::vector<std::int64_t>{} << 0;
    QTest::newRow("negative dim") << QByteArray("t") << DType::U8 << std::vector<std::int64_t>{-1} << 0;
    QTest::newRow("overflowing shape")
        << QByteArray("t") << DType::U8 << std::vector<std::int64_t>{4294967296, 4294967296, 4294967296} << 0;
    QTest::newRow("duplicate name") << QByteArray("taken") << DType::U8 << std::vector<std::int64_t>{1} << 1;
    QTest::newRow("empty name") << QByteArray("") << DType::U8 << std::vector<std::int64_t>{1} << 1;
    QTest::newRow("reserved name") << QByteArray("__metadata__") << DType::U8 << std::vector<std::int64_t>{1} << 1;
    QTest::newRow("invalid UTF-8 name") << QByteArray("bad\xff") << DType::U8 << std::vector<std::int64_t>{1} << 1;
}

void TestSafetensors::builderRejectsBadTensors()
{
    QFETCH(QByteArray, name);
    QFETCH(DType, dtype);
    QFETCH(std::vector<std::int64_t>, shape);
    QFETCH(int, dataSize);

    const std::vector<std::uint8_t> taken = patternBytes(1, 0);
    const std::vector<std::uint8_t> data = patternBytes(static_cast<std::size_t>(dataSize), 0);
    SafetensorsBuilder builder;
    builder.add("taken", DType::U8, {1}, taken);
    bool threwError = false;
    try {
        builder.add(name.toStdString(), dtype, shape, data);
    } catch (const zkdv::FormatError&) {
        QFAIL("add() reported a caller mistake as malformed input");
    } catch (const zkdv::Error&) {
        threwError = true;
    }
    QVERIFY(threwError);
    // The failed add must leave the builder as it was.
    const QByteArray blob = toQByteArray(builder.toBytes());
    QCOMPARE(SafetensorsView::parse(spanOf(blob)).tensors().size(), std::size_t(1));
}

void TestSafetensors::acceptsWhitespaceAnyKeyOrderAndEscapes()
{
    const QByteArray json = " \t\r\n"
                            "{ \"\\u0061\\/b\" : { \"shape\" : [ 2 , 1 ] ,\n\t\"data_offsets\" : [ 0 , 2 ] , "
                            "\"dtype\" : \"I8\" } ,\r\n"
                            "  \"__metadata__\" : { \"smile\" : \"\\ud83d\\ude00 \\u00fc \\b\\f\\n\\r\\t\\\"\\\\\" } ,"
                            "\"\\u8a3c\" : {\"data_offsets\":[2,2],\"dtype\":\"BOOL\",\"shape\":[0]} }  \t\n ";
    // The reference reader refuses a header whose first byte is not '{'; drop the leading
    // whitespace here and check that refusal separately in the hostile table.
    const QByteArray blob = blobWithHeader(json.mid(4), QByteArray("\x05\x06", 2));
    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    const zkdv::TensorView* ab = view.find("a/b");
    QVERIFY(ab);
    QCOMPARE(ab->dtype, DType::I8);
    QCOMPARE(ab->shape, (std::vector<std::int64_t>{2, 1}));
    QCOMPARE(ab->data.size, std::size_t(2));
    QCOMPARE(ab->data.data[1], std::uint8_t(6));
    QVERIFY(view.find("証"));
    QCOMPARE(view.metadataValue("smile"), std::string_view("😀 ü \b\f\n\r\t\"\\"));
    verifyViewInvariants(view, blob);
}

void TestSafetensors::sortsByOffsetAndKeepsHeaderOrderForTies()
{
    // Zero-size tensors share their offset with the tensor that starts there; the reference
    // sorts by (begin, end), so they come first whatever the header order.
    const QByteArray json = "{\"late\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6]},"
                            "\"big\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                            "\"zero2\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]},"
                            "\"zero1\":{\"dtype\":\"F64\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                            "\"end\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[6,6]}}";
    const QByteArray blob = blobWithHeader(json, QByteArray("abcdef"));
    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    std::vector<std::string> names;
    for (const zkdv::TensorView& tensor : view.tensors())
        names.push_back(tensor.name);
    QCOMPARE(names, (std::vector<std::string>{"zero2", "zero1", "big", "late", "end"}));
    QCOMPARE(view.find("late")->data.asString(), std::string_view("ef"));
    verifyViewInvariants(view, blob);
}

void TestSafetensors::findAndMetadataValueReportAbsence()
{
    const std::vector<std::uint8_t> a = patternBytes(1, 0);
    SafetensorsBuilder builder;
    builder.add("a", DType::U8, {1}, a);
    const QByteArray blob = toQByteArray(builder.toBytes());
    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    QVERIFY(view.find("a"));
    QVERIFY(!view.find("b"));
    QVERIFY(!view.find(""));
    QVERIFY(!view.find("__metadata__"));
    QCOMPARE(view.metadataValue("a"), std::string_view());
}

void TestSafetensors::rejectsHostileHeaders_data()
{
    QTest::addColumn<QByteArray>("blob");
    // A fragment of the expected message, so each row fails for the reason it is about.
    QTest::addColumn<QByteArray>("reason");

    const QByteArray f32x1 = "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}";
    const QByteArray four(4, 'x');
    const auto tensor = [](const char* name, const char* dtype, const char* shape, const char* offsets) {
        return QByteArray("\"") + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
               ",\"data_offsets\":" + offsets + "}";
    };
    const auto row = [](const char* label, const QByteArray& blob, const char* reason) {
        QTest::newRow(label) << blob << QByteArray(reason);
    };

    // Length prefix.
    row("empty blob", QByteArray(), "at least 8 bytes");
    row("seven bytes", QByteArray(7, '\0'), "at least 8 bytes");
    row("header length 0", lengthPrefix(0) + "{}", "at least 1");
    row("header length 2^63", lengthPrefix(std::uint64_t(1) << 63) + "{}", "at most 104857600");
    row("header length 2^64-1", lengthPrefix(std::numeric_limits<std::uint64_t>::max()) + "{}", "at most");
    row("header length over the maximum", lengthPrefix(SafetensorsView::kMaxHeaderSize + 1) + "{}",
        "at most 104857600");
    row("header length past the blob", lengthPrefix(100) + QByteArray(60, ' '), "at most 60");
    row("header length one past the blob", lengthPrefix(3) + "{}", "at most 2");

    // Document shape.
    row("top level array", blobWithHeader("[]"), "'{'");
    row("top level string", blobWithHeader("\"x\""), "'{'");
    row("leading whitespace", blobWithHeader(" {}"), "'{' as the first byte");
    row("trailing garbage", blobWithHeader("{}x"), "only whitespace");
    row("second object", blobWithHeader("{}{}"), "only whitespace");
    row("trailing NUL padding", blobWithHeader(QByteArray("{}\0\0", 4)), "only whitespace");
    row("unclosed top level", blobWithHeader("{"), "opening a tensor name");
    row("unterminated string", blobWithHeader("{\"abc"), "closing '\"'");
    row("unterminated escape", blobWithHeader("{\"abc\\"), "escape character");
    row("missing colon", blobWithHeader("{\"a\" " + f32x1 + "}", four), "':'");
    row("missing comma", blobWithHeader("{\"a\":" + f32x1 + " \"b\":" + f32x1 + "}", four + four), "',' or '}'");
    row("trailing comma top level", blobWithHeader("{\"a\":" + f32x1 + ",}", four), "opening a tensor name");
    row("trailing comma in shape", blobWithHeader("{" + tensor("a", "F32", "[1,]", "[0,4]") + "}", four),
        "non-negative integer");
    row("trailing comma in tensor", blobWithHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],}}", four),
        "tensor field name");
    row("trailing comma in metadata", blobWithHeader("{\"__metadata__\":{\"k\":\"v\",}}"), "metadata key");
    row("single quotes", blobWithHeader("{'a':1}"), "opening a tensor name");
    row("tensor is a number", blobWithHeader("{\"a\":1}"), "opening the tensor object");
    row("tensor is null", blobWithHeader("{\"a\":null}"), "opening the tensor object");
    row("empty tensor object", blobWithHeader("{\"a\":{}}"), "\"dtype\"");
    row("missing shape", blobWithHeader("{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", four), "\"shape\"");
    row("missing data_offsets", blobWithHeader("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", four), "\"data_offsets\"");
    row("nested shape", blobWithHeader("{" + tensor("a", "F32", "[[1]]", "[0,4]") + "}", four), "non-negative integer");
    row("shape is object", blobWithHeader("{" + tensor("a", "F32", "{}", "[0,4]") + "}", four), "'['");
    row("deep nesting", blobWithHeader("{\"a\":" + QByteArray(10000, '[') + "}"), "opening the tensor object");
    row("deep metadata", blobWithHeader("{\"__metadata__\":{\"k\":" + QByteArray(10000, '{') + "}}"),
        "string as the metadata value");

    // Numbers.
    row("negative dim", blobWithHeader("{" + tensor("a", "F32", "[-1]", "[0,4]") + "}", four), "non-negative integer");
    row("minus zero dim", blobWithHeader("{" + tensor("a", "F32", "[-0]", "[0,0]") + "}"), "non-negative integer");
    row("fractional dim", blobWithHeader("{" + tensor("a", "F32", "[1.0]", "[0,4]") + "}", four), "without fraction");
    row("exponent dim", blobWithHeader("{" + tensor("a", "F32", "[1e0]", "[0,4]") + "}", four), "without fraction");
    row("leading zero dim", blobWithHeader("{" + tensor("a", "F32", "[01]", "[0,4]") + "}", four), "leading zeros");
    row("NaN dim", blobWithHeader("{" + tensor("a", "F32", "[NaN]", "[0,4]") + "}", four), "non-negative integer");
    row("Infinity dim", blobWithHeader("{" + tensor("a", "F32", "[Infinity]", "[0,4]") + "}", four),
        "non-negative integer");
    row("boolean dim", blobWithHeader("{" + tensor("a", "F32", "[true]", "[0,4]") + "}", four), "non-negative integer");
    row("string dim", blobWithHeader("{" + tensor("a", "F32", "[\"1\"]", "[0,4]") + "}", four), "non-negative integer");
    row("dim past int64", blobWithHeader("{" + tensor("a", "U8", "[9223372036854775808]", "[0,4]") + "}", four),
        "no larger than 9223372036854775807");
    row("offset past uint64", blobWithHeader("{" + tensor("a", "U8", "[4]", "[0,18446744073709551616]") + "}", four),
        "no larger than 18446744073709551615");
    row("negative offset", blobWithHeader("{" + tensor("a", "U8", "[0]", "[-1,-1]") + "}"), "non-negative integer");
    row("fractional offset", blobWithHeader("{" + tensor("a", "U8", "[4]", "[0,4.0]") + "}", four), "without fraction");

    // Tensor semantics.
    row("overflowing shape",
        blobWithHeader("{" + tensor("a", "U8", "[4294967296,4294967296,4294967296]", "[0,0]") + "}"), "overflows");
    row("overflow before a zero dim",
        blobWithHeader("{" + tensor("a", "U8", "[4294967296,4294967296,0]", "[0,0]") + "}"), "overflows");
    row("byte size overflow", blobWithHeader("{" + tensor("a", "F64", "[4611686018427387904]", "[0,0]") + "}"),
        "overflows");
    row("reversed offsets", blobWithHeader("{" + tensor("a", "U8", "[0]", "[4,0]") + "}", four), "begin <= end");
    row("offsets past the buffer", blobWithHeader("{" + tensor("a", "U8", "[8]", "[0,8]") + "}", four),
        "end <= 4");
    row("huge end offset",
        blobWithHeader("{" + tensor("a", "U8", "[4]", "[18446744073709551611,18446744073709551615]") + "}", four),
        "end <= 4");
    row("size mismatch", blobWithHeader("{" + tensor("a", "F32", "[2]", "[0,4]") + "}", four), "expected 8 bytes");
    row("size mismatch for scalar", blobWithHeader("{" + tensor("a", "I16", "[]", "[0,4]") + "}", four),
        "expected 2 bytes");
    row("overlapping tensors",
        blobWithHeader("{" + tensor("a", "U8", "[4]", "[0,4]") + "," + tensor("b", "U8", "[4]", "[2,6]") + "}",
                       four + "yy"),
        "overlapping");
    row("identical offsets",
        blobWithHeader("{" + tensor("a", "U8", "[4]", "[0,4]") + "," + tensor("b", "U8", "[4]", "[0,4]") + "}", four),
        "overlapping");
    row("hole between tensors",
        blobWithHeader("{" + tensor("a", "U8", "[2]", "[0,2]") + "," + tensor("b", "U8", "[1]", "[3,4]") + "}", four),
        "hole of 1 bytes");
    row("hole at the start", blobWithHeader("{" + tensor("a", "U8", "[2]", "[2,4]") + "}", four), "hole of 2 bytes");
    row("trailing unused data", blobWithHeader("{" + tensor("a", "U8", "[2]", "[0,2]") + "}", four),
        "2 unused bytes");
    row("data without tensors", blobWithHeader("{}", four), "4 unused bytes");
    row("data with only metadata", blobWithHeader("{\"__metadata__\":{}}", four), "4 unused bytes");
    row("unknown dtype", blobWithHeader("{" + tensor("a", "F8", "[4]", "[0,4]") + "}", four), "found \"F8\"");
    row("lower case dtype", blobWithHeader("{" + tensor("a", "f32", "[1]", "[0,4]") + "}", four), "found \"f32\"");
    row("unsupported reference dtype", blobWithHeader("{" + tensor("a", "U16", "[2]", "[0,4]") + "}", four),
        "found \"U16\"");
    row("dtype not a string", blobWithHeader("{\"a\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", four),
        "string as the dtype");
    row("unknown field",
        blobWithHeader("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4],\"extra\":1}}", four),
        "found \"extra\"");
    row("three offsets", blobWithHeader("{" + tensor("a", "U8", "[4]", "[0,4,4]") + "}", four), "exactly two");
    row("one offset", blobWithHeader("{" + tensor("a", "U8", "[4]", "[4]") + "}", four), "between the two");
    row("empty tensor name", blobWithHeader("{" + tensor("", "U8", "[4]", "[0,4]") + "}", four), "non-empty");

    // Duplicates.
    row("duplicate tensor",
        blobWithHeader("{" + tensor("a", "U8", "[2]", "[0,2]") + "," + tensor("a", "U8", "[2]", "[2,4]") + "}", four),
        "distinct tensor names");
    row("duplicate tensor spelled with an escape",
        blobWithHeader("{" + tensor("a", "U8", "[2]", "[0,2]") + "," + tensor("\\u0061", "U8", "[2]", "[2,4]") + "}",
                       four),
        "distinct tensor names");
    row("duplicate dtype field",
        blobWithHeader("{\"a\":{\"dtype\":\"U8\",\"dtype\":\"I8\",\"shape\":[4],\"data_offsets\":[0,4]}}", four),
        "\"dtype\" twice");
    row("duplicate escaped field",
        blobWithHeader("{\"a\":{\"dtype\":\"U8\",\"shap\\u0065\":[4],\"shape\":[4],\"data_offsets\":[0,4]}}", four),
        "\"shape\" twice");
    row("duplicate metadata key", blobWithHeader("{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}"), "\"k\" twice");
    row("duplicate metadata object", blobWithHeader("{\"__metadata__\":{},\"__metadata__\":{}}"), "a second");

    {
        // Enough tensors that the duplicate check sorts instead of comparing pairwise.
        QByteArray many = "{";
        for (int i = 0; i < 40; ++i)
            many += tensor(qPrintable(QStringLiteral("n%1").arg(i)), "U8", "[0]", "[0,0]") + ",";
        many += tensor("n17", "U8", "[0]", "[0,0]") + "}";
        row("duplicate among many tensors", blobWithHeader(many), "\"n17\" twice");
    }

    // Metadata values.
    row("metadata number", blobWithHeader("{\"__metadata__\":{\"k\":1}}"), "string as the metadata value");
    row("metadata null", blobWithHeader("{\"__metadata__\":{\"k\":null}}"), "string as the metadata value");
    row("metadata bool", blobWithHeader("{\"__metadata__\":{\"k\":true}}"), "string as the metadata value");
    row("metadata array", blobWithHeader("{\"__metadata__\":{\"k\":[\"v\"]}}"), "string as the metadata value");
    row("metadata object value", blobWithHeader("{\"__metadata__\":{\"k\":{}}}"), "string as the metadata value");
    row("metadata is a string", blobWithHeader("{\"__metadata__\":\"v\"}"), "opening the \"__metadata__\"");
    row("metadata is null", blobWithHeader("{\"__metadata__\":null}"), "opening the \"__metadata__\"");

    // Strings: UTF-8 and escapes.
    row("invalid UTF-8 in a key", blobWithHeader("{\"a\xff\":{}}"), "valid UTF-8");
    row("stray continuation byte", blobWithHeader("{\"\x80\":{}}"), "valid UTF-8");
    row("overlong slash", blobWithHeader("{\"\xc0\xaf\":{}}"), "valid UTF-8");
    row("overlong three bytes", blobWithHeader("{\"\xe0\x80\xaf\":{}}"), "valid UTF-8");
    row("overlong four bytes", blobWithHeader("{\"\xf0\x80\x80\xaf\":{}}"), "valid UTF-8");
    row("encoded surrogate", blobWithHeader("{\"\xed\xa0\x80\":{}}"), "valid UTF-8");
    row("past U+10FFFF", blobWithHeader("{\"\xf4\x90\x80\x80\":{}}"), "valid UTF-8");
    row("F5 lead byte", blobWithHeader("{\"\xf5\x80\x80\x80\":{}}"), "valid UTF-8");
    row("truncated sequence", blobWithHeader("{\"\xe2\x82\":{}}"), "valid UTF-8");
    row("sequence cut by the header end", blobWithHeader("{\"\xe2\x82"), "valid UTF-8");
    row("invalid UTF-8 in metadata value", blobWithHeader("{\"__metadata__\":{\"k\":\"\xfe\"}}"), "valid UTF-8");
    row("invalid UTF-8 in dtype", blobWithHeader("{\"a\":{\"dtype\":\"F3\xb2\"}}"), "valid UTF-8");
    row("invalid UTF-8 outside strings", blobWithHeader("{\xc3\xa9}"), "byte 0xC3");
    row("raw control character", blobWithHeader("{\"a\x01\":{}}"), "control characters must be escaped");
    row("raw newline in string", blobWithHeader("{\"a\n\":{}}"), "control characters must be escaped");
    row("unknown escape", blobWithHeader("{\"a\\x\":{}}"), "one of");
    row("short unicode escape", blobWithHeader("{\"\\u12\":{}}"), "four hexadecimal digits");
    row("bad hex digit", blobWithHeader("{\"\\u12g4\":{}}"), "four hexadecimal digits");
    row("lone high surrogate", blobWithHeader("{\"\\ud800\":{}}"), "low surrogate");
    row("high surrogate then text", blobWithHeader("{\"\\ud800abcdef\":{}}"), "low surrogate");
    row("high surrogate twice", blobWithHeader("{\"\\ud800\\ud800\":{}}"), "low surrogate");
    row("lone low surrogate", blobWithHeader("{\"\\udc00\":{}}"), "high surrogate");
}

void TestSafetensors::rejectsHostileHeaders()
{
    QFETCH(QByteArray, blob);
    QFETCH(QByteArray, reason);

    std::string message;
    std::uint64_t offset = 0;
    const Outcome outcome = tryParse(blob, &message, &offset);
    QVERIFY2(outcome != Outcome::OtherException, "threw something other than FormatError");
    QVERIFY2(outcome == Outcome::FormatError, "parsed a blob that must be refused");
    QVERIFY2(message.find(reason.toStdString()) != std::string::npos, message.c_str());
    QVERIFY2(message.rfind("expected ", 0) == 0, message.c_str());
    QVERIFY2(offset <= static_cast<std::uint64_t>(blob.size()), message.c_str());
}

void TestSafetensors::errorOffsetsPointAtTheProblem_data()
{
    QTest::addColumn<QByteArray>("blob");
    QTest::addColumn<qulonglong>("offset");

    const QByteArray u8x2 = "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}";
    QTest::newRow("header length") << lengthPrefix(1000) + "{}" << qulonglong(0);
    QTest::newRow("first byte") << blobWithHeader("[]") << qulonglong(8);
    QTest::newRow("invalid UTF-8 byte") << blobWithHeader("{\"ab\xff\":{}}") << qulonglong(8 + 4);
    QTest::newRow("unknown dtype value")
        << blobWithHeader("{\"a\":{\"dtype\":\"X\",\"shape\":[],\"data_offsets\":[0,0]}}") << qulonglong(8 + 14);
    QTest::newRow("reversed offsets")
        << blobWithHeader("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[2,0]}}", "xx")
        << qulonglong(8 + 46);
    QTest::newRow("unused data starts after the last tensor")
        << blobWithHeader(u8x2, "xxxx") << qulonglong(8 + u8x2.size() + 2);
    QTest::newRow("trailing garbage") << blobWithHeader("{}  x") << qulonglong(8 + 4);
}

void TestSafetensors::errorOffsetsPointAtTheProblem()
{
    QFETCH(QByteArray, blob);
    QFETCH(qulonglong, offset);

    std::string message;
    std::uint64_t actual = 0;
    QCOMPARE(tryParse(blob, &message, &actual), Outcome::FormatError);
    QVERIFY2(actual == offset, qPrintable(QStringLiteral("%1 (offset %2)").arg(QString::fromStdString(message)).arg(actual)));
}

void TestSafetensors::rejectsEveryTruncation()
{
    const QByteArray blob = smallValidBlob();
    QCOMPARE(tryParse(blob), Outcome::Parsed);
    for (int length = 0; length < blob.size(); ++length) {
        const Outcome outcome = tryParse(blob.left(length));
        QVERIFY2(outcome == Outcome::FormatError, qPrintable(QStringLiteral("prefix of %1 bytes").arg(length)));
    }
}

void TestSafetensors::everyByteValueAtEveryPositionParsesOrThrowsFormatError()
{
    const QByteArray original = smallValidBlob();
    int parsed = 0;
    int refused = 0;
    forEachSingleByteMutation(original, [&](int position, int value, const QByteArray& mutated) {
        try {
            const SafetensorsView view = SafetensorsView::parse(spanOf(mutated));
            verifyViewInvariants(view, mutated);
            ++parsed;
        } catch (const zkdv::FormatError&) {
            ++refused;
        } catch (...) {
            QFAIL(qPrintable(QStringLiteral("byte %1 set to %2 threw something other than FormatError").arg(position).arg(value)));
        }
    });
    QVERIFY(!QTest::currentTestFailed());
    // Every change to a data byte must still parse; most header changes must not.
    QVERIFY(parsed >= 11 * 255);
    QVERIFY(refused > parsed);
}

void TestSafetensors::parsesTwelveTensorHeader()
{
    // The shape of a typical per-transaction record; benchmarks time it, this checks it.
    std::vector<std::vector<std::uint8_t>> storage;
    SafetensorsBuilder builder;
    builder.setMetadata("kind", "tx");
    const char* parts[] = {"amt", "fee", "bal", "nonce"};
    for (int i = 0; i < 12; ++i) {
        const DType dtype = i % 3 == 0 ? DType::I64 : i % 3 == 1 ? DType::F32 : DType::U8;
        const std::vector<std::int64_t> shape = i % 4 == 0 ? std::vector<std::int64_t>{} : std::vector<std::int64_t>{i, 2};
        storage.push_back(patternBytes(byteSize(dtype, shape), static_cast<std::uint8_t>(i)));
        builder.add(parts[i % 4] + std::to_string(i), dtype, shape, storage.back());
    }
    const QByteArray blob = toQByteArray(builder.toBytes());
    const SafetensorsView view = SafetensorsView::parse(spanOf(blob));
    QVERIFY(view.dataOffset() > 500 && view.dataOffset() < 1000);
    QCOMPARE(view.tensors().size(), std::size_t(12));
    QCOMPARE(view.metadataValue("kind"), std::string_view("tx"));
    for (std::size_t i = 0; i < 12; ++i)
        QCOMPARE(std::vector<std::uint8_t>(view.tensors()[i].data.begin(), view.tensors()[i].data.end()), storage[i]);
    verifyViewInvariants(view, blob);
}

void TestSafetensors::reparseOfOneLayoutSeesEachBlobsMetadataAndData()
{
    // Records of one run differ in their metadata (of any length) and data only: reparse()
    // must report each one's own values and point into each one's own bytes.
    const QByteArray first = blobOfLayout("1", "250", 10);
    const QByteArray second = blobOfLayout("1000000", "31", 20);
    const QByteArray third = blobOfLayout("7", "123456789", 30);
    QVERIFY(first.size() != second.size());
    SafetensorsView view;
    for (const QByteArray* blob : {&first, &second, &third, &first}) {
        view.reparse(spanOf(*blob));
        QCOMPARE(describe(view, *blob), describe(SafetensorsView::parse(spanOf(*blob)), *blob));
        verifyViewInvariants(view, *blob);
    }
    QCOMPARE(view.metadataValue("index"), std::string_view("1"));
    QCOMPARE(view.tensors().front().data.data[0], patternBytes(1, 10)[0]);

    // Another layout in between (a snapshot record), then the first one again.
    const QByteArray other = smallValidBlob();
    view.reparse(spanOf(other));
    QCOMPARE(describe(view, other), describe(SafetensorsView::parse(spanOf(other)), other));
    view.reparse(spanOf(second));
    QCOMPARE(describe(view, second), describe(SafetensorsView::parse(spanOf(second)), second));
}

void TestSafetensors::reparseAgreesWithParseOnEveryMutation_data()
{
    QTest::addColumn<QByteArray>("original");
    QTest::newRow("metadata first, as writers put it") << smallValidBlob();
    QTest::newRow("metadata between tensors, spaced")
        << blobWithHeader("{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}, \"__metadata__\" : {\"k\":\"v\", \"x\":\"\"} ,"
                          "\"b\":{\"dtype\":\"I16\",\"shape\":[],\"data_offsets\":[2,4]}}  ",
                          "wxyz");
    QTest::newRow("no metadata") << blobWithHeader("{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[0,3]}}", "abc");
}

void TestSafetensors::reparseAgreesWithParseOnEveryMutation()
{
    // A view that has just parsed `original` reparses each single-byte mutation of it: the
    // result, or the error and where it points, must be what a fresh parse says, and the
    // view must then read the original again as if nothing had happened.
    QFETCH(QByteArray, original);
    const std::string expectedOriginal = describe(SafetensorsView::parse(spanOf(original)), original);
    int parsedMutations = 0;
    forEachSingleByteMutation(original, [&](int position, int value, const QByteArray& mutated) {
        SafetensorsView view;
        view.reparse(spanOf(original));
        const std::string fresh = outcomeOf([&] { return describe(SafetensorsView::parse(spanOf(mutated)), mutated); });
        const std::string reused = outcomeOf([&] {
            view.reparse(spanOf(mutated));
            return describe(view, mutated);
        });
        if (reused != fresh)
            QFAIL(qPrintable(QStringLiteral("byte %1 set to %2: reparse says \"%3\", parse says \"%4\"")
                                 .arg(position)
                                 .arg(value)
                                 .arg(QString::fromStdString(reused), QString::fromStdString(fresh))));
        if (reused.rfind("error", 0) != 0) {
            ++parsedMutations;
            verifyViewInvariants(view, mutated);
        } else {
            QVERIFY(view.tensors().empty() && view.metadata().empty());
        }
        view.reparse(spanOf(original));
        QCOMPARE(describe(view, original), expectedOriginal);
    });
    QVERIFY(!QTest::currentTestFailed());
    QVERIFY(parsedMutations > 0);
}

QTEST_APPLESS_MAIN(TestSafetensors)
#include "test_safetensors.moc"
