// A record taken apart field by field (the workstation's bytes pane): frame fields where spec
// 2.2 puts them, the tensor table where the safetensors header puts the data, and damaged or
// cut records dissected as far as they go, with the problem named.

#include <QtTest>

#include <cstring>

#include "file_bytes.h"
#include "record_locations.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/tape/record_dissection.h"
#include "zkdv/tape/record_frame.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/crc32.h"
#include "zkdv/util/little_endian.h"
#include "zkdv/util/mapped_file.h"

using namespace zkdv;
using test::readAll;
using test::writeAll;

namespace {

const DissectedField* child(const DissectedField* parent, const std::string& name)
{
    if (!parent)
        return nullptr;
    for (const DissectedField& f : parent->children)
        if (f.name == name)
            return &f;
    return nullptr;
}

const DissectedField* top(const RecordDissection& dissection, const std::string& name)
{
    for (const DissectedField& f : dissection.fields)
        if (f.name == name)
            return &f;
    return nullptr;
}

bool startsWith(const std::string& text, const std::string& prefix) { return text.rfind(prefix, 0) == 0; }

std::string bytesAt(const std::vector<std::uint8_t>& file, std::uint64_t offset, std::uint64_t length)
{
    return std::string(reinterpret_cast<const char*>(file.data() + offset), static_cast<std::size_t>(length));
}

RecordDissection dissectBytes(const std::vector<std::uint8_t>& bytes, std::uint64_t frameOffset)
{
    const MappedFile file(ByteSpan(bytes), "test bytes");
    return dissectRecord(file, frameOffset);
}

}  // namespace

class TestRecordDissection : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void frameFieldsFollowTheSpec();
    void everyRecordOfATapeDissectsClean();
    void tensorTableMatchesTheSafetensorsHeader();
    void layoutPlacesEveryPartOfAHeader_data();
    void layoutPlacesEveryPartOfAHeader();
    void flippedPayloadByteIsADigestProblem();
    void damagedHeaderCheckIsNamed();
    void cutRecordsStopWhereTheFileEnds();
    void hostileLengthsAreProblemsNotCrashes();
    void innermostFieldHoldsTheByte();
    void readRecordBytesIsBoundedAndFollowsTheFocus();

private:
    const RecordLocation& firstOfType(tape::RecordType type) const;

    test::TempDir dir_;
    std::string tape_;
    std::vector<std::uint8_t> bytes_;
    std::vector<RecordLocation> records_;
};

void TestRecordDissection::initTestCase()
{
    tape_ = dir_.file("dissect.zkdv");
    SyntheticDemoOptions options;
    options.steps = 4;
    options.batchSize = 3;
    options.features = 3;
    options.classes = 2;
    options.snapshotInterval = 2;
    options.updateCheckProbability = 1.0;  // every transaction carries its deltas
    options.stateCheckProbability = 1.0;
    writeSyntheticDemoTape(tape_, options);
    TapeSummary summary;
    records_ = test::recordLocations(tape_, &summary);
    QCOMPARE(summary.status, TapeStatus::Sealed);
    bytes_ = readAll(tape_);
}

const RecordLocation& TestRecordDissection::firstOfType(tape::RecordType type) const
{
    for (const RecordLocation& record : records_)
        if (record.type == static_cast<std::uint32_t>(type))
            return record;
    throw std::runtime_error("no record of that type");
}

void TestRecordDissection::frameFieldsFollowTheSpec()
{
    const RecordLocation& root = records_.at(0);
    QCOMPARE(root.offset, std::uint64_t(16));
    const RecordDissection d = dissectBytes(bytes_, root.offset);
    QVERIFY(!d.stop);
    QCOMPARE(d.recordType, std::optional<std::uint32_t>(1));
    QCOMPARE(d.frameLength, root.frameSize);
    const DissectedField* header = top(d, "frame header");
    QVERIFY(header);
    QCOMPARE(header->offset, std::uint64_t(16));
    QCOMPARE(header->length, std::uint64_t(56));
    const std::uint64_t length = readLittleEndian<std::uint64_t>(bytes_.data() + 16 + 8);
    const std::uint64_t padding = tape::paddingFor(length);
    const struct {
        const char* name;
        std::uint64_t at;
        std::uint64_t size;
        std::string value;
    } expected[] = {
        {"type", 0, 4, "1 (root)"},
        {"flags", 4, 4, "0x00000001: critical"},
        {"payload length", 8, 8, std::to_string(length) + " bytes"},
        {"header check", 16, 4, ""},
        {"reserved", 20, 4, "0"},
        {"previous digest", 24, 32, toHex(genesisDigest(tape::kMajorVersion, tape::kMinorVersion))},
    };
    QCOMPARE(header->children.size(), std::size(expected));
    for (std::size_t i = 0; i < std::size(expected); ++i) {
        const DissectedField& f = header->children[i];
        QCOMPARE(QString::fromStdString(f.name), QString::fromLatin1(expected[i].name));
        QCOMPARE(f.offset, 16 + expected[i].at);
        QCOMPARE(f.length, expected[i].size);
        if (!expected[i].value.empty())
            QCOMPARE(QString::fromStdString(f.value), QString::fromStdString(expected[i].value));
        QVERIFY2(!f.problem, f.problem ? f.problem->c_str() : "");
    }
    QVERIFY(header->children[3].value.find("matches") != std::string::npos);

    const DissectedField* payload = top(d, "payload");
    QVERIFY(payload);
    QCOMPARE(payload->offset, std::uint64_t(16 + 56));
    QCOMPARE(payload->length, length);
    QCOMPARE(payload->value, bytesAt(bytes_, 16 + 56, std::min<std::uint64_t>(length, RecordDissectionLimits().maxValueBytes)) +
                                 (length > RecordDissectionLimits().maxValueBytes ? "…" : ""));
    const DissectedField* paddingField = top(d, "padding");
    QVERIFY(paddingField);
    QCOMPARE(paddingField->offset, 16 + 56 + length);
    QCOMPARE(paddingField->length, padding);
    const DissectedField* digest = top(d, "digest");
    QVERIFY(digest);
    QCOMPARE(digest->offset, 16 + 56 + length + padding);
    QCOMPARE(digest->length, std::uint64_t(32));
    QVERIFY2(startsWith(digest->value, toHex(root.digest)) && digest->value.find("matches") != std::string::npos, digest->value.c_str());
    QVERIFY(d.problems().empty());
}

void TestRecordDissection::everyRecordOfATapeDissectsClean()
{
    for (const RecordLocation& record : records_) {
        const RecordDissection d = dissectBytes(bytes_, record.offset);
        const std::string context = "record " + std::to_string(record.index);
        QVERIFY2(!d.stop, context.c_str());
        const std::vector<std::string> problems = d.problems();
        QVERIFY2(problems.empty(), (context + ": " + (problems.empty() ? std::string() : problems.front())).c_str());
        QCOMPARE(d.recordType, std::optional<std::uint32_t>(record.type));
        QCOMPARE(d.frameLength, record.frameSize);
        QVERIFY(d.fieldCount() >= 10);
    }
    // The program's own SHA-256 comes with the digest's pass, for comparing with the root's.
    const RecordLocation& program = firstOfType(tape::RecordType::Program);
    const RecordDissection d = dissectBytes(bytes_, program.offset);
    const DissectedField* sha = child(top(d, "payload"), "SHA-256");
    QVERIFY(sha);
    const std::uint64_t length = readLittleEndian<std::uint64_t>(bytes_.data() + program.offset + 8);
    QVERIFY2(startsWith(sha->value, toHex(Sha256::of(ByteSpan(bytes_.data() + program.offset + 56, length)))), sha->value.c_str());
}

void TestRecordDissection::tensorTableMatchesTheSafetensorsHeader()
{
    for (tape::RecordType type : {tape::RecordType::Transaction, tape::RecordType::Snapshot}) {
        const RecordLocation& record = firstOfType(type);
        const std::uint64_t payloadAt = record.offset + 56;
        const std::uint64_t length = readLittleEndian<std::uint64_t>(bytes_.data() + record.offset + 8);
        const ByteSpan blob(bytes_.data() + payloadAt, length);
        const SafetensorsView view = SafetensorsView::parse(blob);

        const RecordDissection d = dissectBytes(bytes_, record.offset);
        const DissectedField* payload = top(d, "payload");
        const DissectedField* headerLength = child(payload, "header length");
        QVERIFY(headerLength);
        QCOMPARE(headerLength->offset, payloadAt);
        QCOMPARE(headerLength->value, std::to_string(view.dataOffset() - 8) + " bytes");
        const DissectedField* table = child(payload, "tensor table");
        QVERIFY(table);
        QCOMPARE(table->children.size(), view.tensors().size());
        for (std::size_t i = 0; i < view.tensors().size(); ++i) {
            const TensorView& tensor = view.tensors()[i];
            const DissectedField& entry = table->children[i];
            QCOMPARE(entry.name, tensor.name);
            QCOMPARE(entry.offset, payloadAt + static_cast<std::uint64_t>(tensor.data.data - blob.data));
            QCOMPARE(entry.length, std::uint64_t(tensor.data.size));
            QVERIFY2(startsWith(entry.value, std::string(dtypeName(tensor.dtype)) + " "), entry.value.c_str());
            // Each part of the entry's header text is where the field says.
            const DissectedField* text = child(&entry, "header entry");
            QVERIFY(startsWith(bytesAt(bytes_, text->offset, text->length), "\"" + tensor.name + "\":{"));
            QVERIFY(bytesAt(bytes_, text->offset, text->length).back() == '}');
            const DissectedField* dtype = child(&entry, "dtype");
            QCOMPARE(bytesAt(bytes_, dtype->offset, dtype->length), "\"" + std::string(dtypeName(tensor.dtype)) + "\"");
            const DissectedField* shape = child(&entry, "shape");
            const std::string shapeText = bytesAt(bytes_, shape->offset, shape->length);
            QVERIFY2(shapeText.front() == '[' && shapeText.back() == ']', shapeText.c_str());
            const DissectedField* offsets = child(&entry, "data_offsets");
            const std::uint64_t begin = entry.offset - payloadAt - view.dataOffset();
            QCOMPARE(bytesAt(bytes_, offsets->offset, offsets->length),
                     "[" + std::to_string(begin) + "," + std::to_string(begin + entry.length) + "]");
        }
        const DissectedField* metadata = child(child(payload, "header"), "__metadata__");
        QVERIFY(metadata);
        QCOMPARE(metadata->children.size(), view.metadata().size());
        for (const DissectedField& entry : metadata->children) {
            QCOMPARE(entry.value, std::string(view.metadataValue(entry.name)));
            QVERIFY(startsWith(bytesAt(bytes_, entry.offset, entry.length), "\"" + entry.name + "\":\""));
        }
        const DissectedField* buffer = child(payload, "data buffer");
        QCOMPARE(buffer->offset, payloadAt + view.dataOffset());
        QCOMPARE(buffer->length, length - view.dataOffset());
        if (type == tape::RecordType::Transaction)
            QVERIFY2(startsWith(payload->value, "transaction 0,"), payload->value.c_str());
        else
            QVERIFY2(startsWith(payload->value, "snapshot before transaction 0,"), payload->value.c_str());
    }
}

void TestRecordDissection::layoutPlacesEveryPartOfAHeader_data()
{
    QTest::addColumn<QString>("json");
    QTest::newRow("compact, as writers write") << R"({"__metadata__":{"k":"v"},"t":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
    QTest::newRow("spaced, fields reordered")
        << R"({ "t" : { "shape" : [ 2 ] , "data_offsets" : [0, 8], "dtype" : "F32" } , "__metadata__" : { "k" : "v" } })";
    QTest::newRow("escaped names") << R"({"\u0074":{"dtyp\u0065":"F32","shape":[2],"data_offsets":[0,8]},"__metadata__":{"\u006b":"v"}})";
}

void TestRecordDissection::layoutPlacesEveryPartOfAHeader()
{
    QFETCH(QString, json);
    std::string header = json.toStdString();
    header.resize((header.size() + 7) / 8 * 8, ' ');
    std::vector<std::uint8_t> blob(8);
    writeLittleEndian<std::uint64_t>(blob.data(), header.size());
    blob.insert(blob.end(), header.begin(), header.end());
    const std::size_t headOnly = blob.size();
    blob.resize(blob.size() + 8, 0x7f);  // the data, which the layout never reads
    const auto text = [&](const SafetensorsLayout::Extent& e) { return bytesAt(blob, e.begin, e.end - e.begin); };

    // From the head alone, validated against the whole blob's size.
    const SafetensorsLayout layout = SafetensorsLayout::parse(ByteSpan(blob.data(), headOnly), blob.size());
    QCOMPARE(layout.tensors.size(), std::size_t(1));
    const SafetensorsLayout::Tensor& t = layout.tensors[0];
    QCOMPARE(t.name, std::string("t"));
    QCOMPARE(t.data.begin, std::uint64_t(headOnly));
    QCOMPARE(t.data.end, std::uint64_t(headOnly + 8));
    QCOMPARE(text(t.dtypeText), std::string("\"F32\""));
    QCOMPARE(QString::fromStdString(text(t.shapeText)).remove(' '), QStringLiteral("[2]"));
    QCOMPARE(QString::fromStdString(text(t.offsetsText)).remove(' '), QStringLiteral("[0,8]"));
    QVERIFY(text(t.entry).front() == '"' && text(t.entry).back() == '}');
    QCOMPARE(layout.metadata.size(), std::size_t(1));
    QCOMPARE(layout.metadata[0].key, std::string("k"));
    QCOMPARE(layout.metadata[0].value, std::string("v"));
    QVERIFY(text(layout.metadata[0].text).front() == '"' && text(layout.metadata[0].text).back() == '"');
    QVERIFY(layout.metadataObject);
    QCOMPARE(QString::fromStdString(text(*layout.metadataObject)).trimmed().front(), QLatin1Char('{'));

    // The same rules as a whole blob's parse: a buffer it does not fill is refused.
    QVERIFY_THROWS_EXCEPTION(FormatError, SafetensorsLayout::parse(ByteSpan(blob.data(), headOnly), blob.size() + 8));
    QVERIFY_THROWS_EXCEPTION(FormatError, SafetensorsLayout::parse(ByteSpan(blob.data(), headOnly - 1), blob.size()));
}

void TestRecordDissection::flippedPayloadByteIsADigestProblem()
{
    const RecordLocation& record = firstOfType(tape::RecordType::Transaction);
    std::vector<std::uint8_t> damaged = bytes_;
    const std::uint64_t flipped = record.offset + record.frameSize - 32 - 9;  // in the last tensor's data
    damaged[flipped] ^= 0x40;
    const RecordDissection d = dissectBytes(damaged, record.offset);
    QVERIFY(!d.stop);
    const DissectedField* digest = top(d, "digest");
    QVERIFY(digest && digest->problem);
    QVERIFY2(digest->problem->find("found " + toHex(record.digest)) != std::string::npos, digest->problem->c_str());
    QCOMPARE(d.problems().size(), std::size_t(1));
    QVERIFY(startsWith(d.problems().front(), "digest: expected "));
    // The structure is still read: the flip changed a value, not the layout.
    QVERIFY(child(top(d, "payload"), "tensor table"));
}

void TestRecordDissection::damagedHeaderCheckIsNamed()
{
    const RecordLocation& record = firstOfType(tape::RecordType::Transaction);
    std::vector<std::uint8_t> damaged = bytes_;
    damaged[record.offset + 17] ^= 0x01;
    damaged[record.offset + 21] = 0x05;  // the reserved field too
    const RecordDissection d = dissectBytes(damaged, record.offset);
    const DissectedField* check = child(top(d, "frame header"), "header check");
    QVERIFY(check && check->problem);
    const std::uint32_t crc = crc32(ByteSpan(bytes_.data() + record.offset, 16));
    char expected[11];
    std::snprintf(expected, sizeof expected, "0x%08x", crc);
    QVERIFY2(startsWith(*check->problem, std::string("expected ") + expected), check->problem->c_str());
    const DissectedField* reserved = child(top(d, "frame header"), "reserved");
    QVERIFY(reserved && reserved->problem);
    QCOMPARE(*reserved->problem, std::string("expected 0, found 0x00000500"));
    // The digest covers the whole header, so it shows the damage too.
    QVERIFY(top(d, "digest")->problem);
    const std::string& payload = top(d, "payload")->value;
    QVERIFY2(payload.find("the failed header check does not vouch for") != std::string::npos, payload.c_str());
}

void TestRecordDissection::cutRecordsStopWhereTheFileEnds()
{
    const RecordLocation& record = firstOfType(tape::RecordType::Transaction);
    // Inside the payload: the header and what of the payload is there are read.
    std::vector<std::uint8_t> cut(bytes_.begin(), bytes_.begin() + static_cast<std::ptrdiff_t>(record.offset + 200));
    RecordDissection d = dissectBytes(cut, record.offset);
    QVERIFY(d.stop);
    QCOMPARE(d.stop->offset, std::uint64_t(cut.size()));
    QVERIFY2(startsWith(d.stop->reason, "the file ends inside the record: its frame needs " + std::to_string(record.frameSize)),
             d.stop->reason.c_str());
    QCOMPARE(d.frameLength, std::uint64_t(200));
    QCOMPARE(top(d, "payload")->length, std::uint64_t(200 - 56));
    const std::string& payload = top(d, "payload")->value;
    QVERIFY2(payload.find("(144 of ") != std::string::npos, payload.c_str());
    QVERIFY(!top(d, "digest") && !top(d, "padding"));

    // Inside the frame header: the whole fields before the cut, and no more.
    cut.resize(record.offset + 30);
    d = dissectBytes(cut, record.offset);
    QVERIFY(d.stop);
    QCOMPARE(d.stop->reason, std::string("the file ends inside the 56-byte frame header (30 bytes present)"));
    QVERIFY(!d.recordType);
    const DissectedField* header = top(d, "frame header");
    QCOMPARE(header->length, std::uint64_t(30));
    QCOMPARE(header->children.size(), std::size_t(5));  // type, flags, length, check, reserved
    QVERIFY(!top(d, "payload"));

    // At and past the end of the file.
    d = dissectBytes(bytes_, bytes_.size());
    QVERIFY(d.stop && d.fields.empty());
    d = dissectBytes(bytes_, ~std::uint64_t(0));
    QVERIFY(d.stop && d.fields.empty());
}

void TestRecordDissection::hostileLengthsAreProblemsNotCrashes()
{
    const RecordLocation& record = firstOfType(tape::RecordType::Transaction);
    const std::uint64_t payloadAt = record.offset + 56;
    for (std::uint64_t headerLength : {std::uint64_t(0), std::uint64_t(1) << 63, std::uint64_t(SafetensorsView::kMaxHeaderSize) + 1,
                                       record.frameSize}) {
        std::vector<std::uint8_t> damaged = bytes_;
        writeLittleEndian<std::uint64_t>(damaged.data() + payloadAt, headerLength);
        const RecordDissection d = dissectBytes(damaged, record.offset);
        const DissectedField* lengthField = child(top(d, "payload"), "header length");
        QVERIFY(lengthField && lengthField->problem);
        QVERIFY2(startsWith(*lengthField->problem, "expected a header length of "), lengthField->problem->c_str());
        QVERIFY(!child(top(d, "payload"), "tensor table"));
        QVERIFY(top(d, "digest")->problem);
    }

    // A payload length no file holds, with a header check that vouches for it.
    std::vector<std::uint8_t> damaged = bytes_;
    writeLittleEndian<std::uint64_t>(damaged.data() + record.offset + 8, ~std::uint64_t(0) - 3);
    writeLittleEndian<std::uint32_t>(damaged.data() + record.offset + 16, crc32(ByteSpan(damaged.data() + record.offset, 16)));
    const RecordDissection d = dissectBytes(damaged, record.offset);
    QVERIFY(d.stop);
    QVERIFY2(d.stop->reason.find("more than 2^64") != std::string::npos, d.stop->reason.c_str());
    QCOMPARE(d.frameLength, std::uint64_t(bytes_.size() - record.offset));

    // A JSON payload that does not parse names its byte.
    const RecordLocation& seal = records_.back();
    damaged = bytes_;
    damaged[seal.offset + 56] = '[';
    const RecordDissection sealDissection = dissectBytes(damaged, seal.offset);
    const DissectedField* payload = top(sealDissection, "payload");
    QVERIFY(payload->problem);
    QVERIFY(child(payload, "byte at fault"));
}

void TestRecordDissection::innermostFieldHoldsTheByte()
{
    const RecordLocation& record = firstOfType(tape::RecordType::Transaction);
    const RecordDissection d = dissectBytes(bytes_, record.offset);
    QCOMPARE(d.innermostAt(record.offset + 17)->name, std::string("header check"));
    QCOMPARE(d.innermostAt(record.offset + record.frameSize - 1)->name, std::string("digest"));
    const DissectedField& lastTensor = child(top(d, "payload"), "tensor table")->children.back();
    QCOMPARE(d.innermostAt(lastTensor.offset)->name, lastTensor.name);
    QCOMPARE(d.innermostAt(child(&lastTensor, "dtype")->offset)->name, std::string("dtype"));
    QVERIFY(!d.innermostAt(record.offset + record.frameSize));
}

void TestRecordDissection::readRecordBytesIsBoundedAndFollowsTheFocus()
{
    const RecordLocation& record = firstOfType(tape::RecordType::Snapshot);
    RecordBytes shown = readRecordBytes(tape_, record.offset, 64);
    QCOMPARE(shown.bytes.size(), std::size_t(64));
    QCOMPARE(shown.bytesOffset, record.offset);
    QVERIFY(shown.partial());
    QVERIFY(std::memcmp(shown.bytes.data(), bytes_.data() + record.offset, 64) == 0);
    QVERIFY(top(shown.dissection, "digest") && !top(shown.dissection, "digest")->problem);  // hashed from the file

    // A focus past the first bytes moves the window onto it.
    for (std::uint64_t focus : {record.offset + record.frameSize - 1, record.offset + record.frameSize - 40, record.offset + 100}) {
        shown = readRecordBytes(tape_, record.offset, 64, focus);
        QVERIFY(shown.bytesOffset <= focus && focus < shown.bytesOffset + shown.bytes.size());
        QVERIFY(shown.bytesOffset + shown.bytes.size() <= record.offset + record.frameSize);
        QVERIFY(std::memcmp(shown.bytes.data(), bytes_.data() + shown.bytesOffset, shown.bytes.size()) == 0);
    }

    shown = readRecordBytes(tape_, record.offset, std::size_t(1) << 30);
    QCOMPARE(shown.bytes.size(), std::size_t(record.frameSize));
    QVERIFY(!shown.partial());

    QVERIFY_THROWS_EXCEPTION(IoError, readRecordBytes(dir_.file("moved.zkdv"), 16, 64));
}

QTEST_GUILESS_MAIN(TestRecordDissection)
#include "test_record_dissection.moc"
