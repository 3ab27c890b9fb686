// Untrusted bytes reaching the tape reader and the JSON and text helpers under it: JSON
// nested past the depth limit, empty files, FIFOs and other special files, text that is not
// UTF-8. Each is refused with a located error or repaired; none crashes or hangs.

#include <QtTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <future>

#include "file_bytes.h"
#include "tape_rewriter.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/audit_file.h"
#include "zkdv/tape/record_reader.h"
#include "zkdv/tape/safetensors.h"
#include "zkdv/tape/seal_record.h"
#include "zkdv/tape/tape_format.h"
#include "zkdv/tape/tape_scanner.h"
#include "zkdv/util/error.h"
#include "zkdv/util/json_text.h"
#include "zkdv/util/mapped_file.h"
#include "zkdv/util/utf8.h"

using namespace zkdv;
using test::readAll;
using test::writeAll;

namespace {

// Far past the limit: before the limit existed, dumping this many levels overflowed the stack.
constexpr std::size_t kDeep = 200000;

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// Runs `open` on a FIFO nobody writes to. A reader that waits for a writer would block for
// ever, so after a generous while the test opens the writing end itself to release it and
// fails; the expected outcome is an IoError naming the FIFO at once.
QString refusalOfFifo(const std::string& fifo, const std::function<void()>& open)
{
    auto attempt = std::async(std::launch::async, [&]() -> QString {
        try {
            open();
        } catch (const IoError& error) {
            return QString::fromStdString(error.what());
        } catch (const std::exception& error) {
            return QStringLiteral("unexpected exception: ") + QString::fromStdString(error.what());
        }
        return QStringLiteral("accepted");
    });
    if (attempt.wait_for(std::chrono::seconds(60)) == std::future_status::timeout) {
        const int writer = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
        attempt.wait();
        if (writer >= 0)
            ::close(writer);
        return QStringLiteral("hung in open()");
    }
    return attempt.get();
}

}  // namespace

class TestUntrustedInput : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void jsonDepthLimitIsExact();
    void errorsNameAByteOnlyWhenTheyKnowOne();
    void deepJsonInATapeIsCorruptAndLocated_data();
    void deepJsonInATapeIsCorruptAndLocated();
    void emptyTapeIsNotATape();
    void inMemoryScanMatchesTheFileScan();
    void specialFilesAreRefusedBeforeReading();
    void invalidUtf8IsReplaced_data();
    void invalidUtf8IsReplaced();
    void jsonOutputIsAlwaysValidUtf8();

private:
    test::TempDir dir_;
    std::string good_;
};

void TestUntrustedInput::initTestCase()
{
    SyntheticDemoOptions options;
    options.steps = 5;
    options.batchSize = 2;
    good_ = dir_.file("good.zkdv");
    writeSyntheticDemoTape(good_, options);
    QCOMPARE(scanTape(good_).status, TapeStatus::Sealed);
}

void TestUntrustedInput::jsonDepthLimitIsExact()
{
    QCOMPARE(kMaxJsonDepth, std::size_t(64));
    QVERIFY(parseUntrustedJson(nested(kMaxJsonDepth), "test").is_array());
    // Brackets inside strings are text, not nesting.
    QVERIFY(parseUntrustedJson("{\"a\":\"" + nested(1000) + "\\\"[[\"}", "test").is_object());
    try {
        parseUntrustedJson("{\"x\":" + nested(kMaxJsonDepth) + "}", "run metadata");
        QFAIL("65 levels were accepted");
    } catch (const FormatError& error) {
        // The 65th level opens at the 64th bracket of the array, byte 5 + 63.
        QCOMPARE(error.offset().value_or(0), std::uint64_t(5 + 63));
        QVERIFY2(error.detail() == "run metadata nests JSON arrays and objects more than 64 levels deep", error.what());
    }
    try {
        parseUntrustedJson("{\"x\": tru}", "seal record");
        QFAIL("invalid JSON was accepted");
    } catch (const FormatError& error) {
        QVERIFY2(error.detail().rfind("seal record is not valid JSON: ", 0) == 0, error.what());
    }
    // Valid JSON whose number no double holds: a format error like the rest, never another
    // exception escaping a reader (it once escaped nlohmann's parser as out_of_range).
    try {
        parseUntrustedJson(R"({"scale": 1e400})", "metadata \"grad_scaler\"");
        QFAIL("1e400 was accepted");
    } catch (const FormatError& error) {
        QVERIFY2(error.detail().rfind("metadata \"grad_scaler\" holds a number no double can hold", 0) == 0, error.what());
    }
}

void TestUntrustedInput::errorsNameAByteOnlyWhenTheyKnowOne()
{
    // A seal that is valid JSON but not an object is wrong as a whole: there is no byte to name.
    const std::string notAnObject = "[]";
    try {
        SealRecord::parse(ByteSpan(reinterpret_cast<const std::uint8_t*>(notAnObject.data()), notAnObject.size()));
        QFAIL("a seal that is not an object was accepted");
    } catch (const FormatError& error) {
        QVERIFY2(!error.offset().has_value(), error.what());
        QVERIFY2(std::string(error.what()).find("(at byte") == std::string::npos, error.what());
        QCOMPARE(std::string(error.what()), std::string("seal record: expected a JSON object"));
    }
    // A safetensors blob too short for its length prefix is wrong at byte 0, and says so.
    const std::uint8_t shortBlob[3] = {1, 0, 0};
    try {
        SafetensorsView::parse(ByteSpan(shortBlob, sizeof shortBlob));
        QFAIL("a 3-byte safetensors blob was accepted");
    } catch (const FormatError& error) {
        QVERIFY2(error.offset() == std::optional<std::uint64_t>(0), error.what());
        QVERIFY2(std::string(error.what()).find("(at byte 0)") != std::string::npos, error.what());
    }
}

void TestUntrustedInput::deepJsonInATapeIsCorruptAndLocated_data()
{
    QTest::addColumn<int>("recordType");
    QTest::addColumn<QString>("anchor");        // where in the payload the deep array goes
    QTest::addColumn<QString>("replacement");   // what replaces the anchor; DEEP stands for the array
    QTest::addColumn<int>("depthBefore");       // levels open where the array starts

    const int root = static_cast<int>(tape::RecordType::Root), seal = static_cast<int>(tape::RecordType::Seal);
    QTest::newRow("root metadata") << root << "\"metadata\":{" << "\"metadata\":{\"deep\":DEEP," << 2;
    QTest::newRow("root optimizer options") << root << "\"options\":{" << "\"options\":{\"deep\":DEEP," << 5;
    QTest::newRow("root tensor shape") << root << "\"shape\":[" << "\"shape\":[DEEP," << 5;
    QTest::newRow("seal signature") << seal << "\"signature\":null" << "\"signature\":DEEP" << 1;
}

void TestUntrustedInput::deepJsonInATapeIsCorruptAndLocated()
{
    QFETCH(int, recordType);
    QFETCH(QString, anchor);
    QFETCH(QString, replacement);
    QFETCH(int, depthBefore);

    const std::string deepTape = dir_.file("deep.zkdv");
    std::uint64_t arrayAt = 0;  // offset of the deep array inside the edited payload
    std::uint64_t editedIndex = 0, editedSize = 0;
    test::rewriteTape(good_, deepTape, [&](std::uint64_t index, std::uint32_t type, std::string payload) {
        if (type != static_cast<std::uint32_t>(recordType))
            return payload;
        const std::size_t at = payload.find(anchor.toStdString());
        if (at == std::string::npos)
            throw Error("no " + anchor.toStdString() + " in " + payload);
        std::string text = replacement.toStdString();
        arrayAt = at + text.find("DEEP");
        text.replace(text.find("DEEP"), 4, nested(kDeep));
        payload.replace(at, anchor.size(), text);
        editedIndex = index;
        editedSize = payload.size();
        return payload;
    });
    const std::uint64_t fileSize = readAll(deepTape).size();
    // The root is the first record; the seal the last.
    const std::uint64_t recordOffset = recordType == static_cast<int>(tape::RecordType::Root) ? tape::kFileHeaderSize
                                                                                              : fileSize - tape::frameSize(editedSize);
    const std::uint64_t expectedOffset =
        recordOffset + tape::kFrameHeaderSize + arrayAt + static_cast<std::uint64_t>(kMaxJsonDepth) - static_cast<std::uint64_t>(depthBefore);

    const std::vector<std::uint8_t> bytes = readAll(deepTape);
    for (const TapeSummary& summary : {scanTape(deepTape), scanTapeBytes(ByteSpan(bytes), deepTape)}) {
        QCOMPARE(summary.status, TapeStatus::Corrupt);
        QVERIFY(summary.problem.has_value());
        QCOMPARE(summary.problem->recordIndex, editedIndex);
        QCOMPARE(summary.problem->byteOffset, expectedOffset);
        QVERIFY2(summary.problem->message.find("more than 64 levels deep") != std::string::npos, summary.problem->message.c_str());
        QCOMPARE(bytes[summary.problem->byteOffset], std::uint8_t('['));
    }
}

void TestUntrustedInput::emptyTapeIsNotATape()
{
    const std::string empty = dir_.file("empty.zkdv");
    std::ofstream(empty).close();
    for (const auto& scan : std::vector<std::function<TapeSummary()>>{[&] { return scanTape(empty); },
                                                                      [&] { return scanTapeBytes(ByteSpan(), empty); }}) {
        try {
            scan();
            QFAIL("an empty file was read as a tape");
        } catch (const NotATapeError& error) {
            QVERIFY2(std::string(error.what()).find("found an empty file") != std::string::npos, error.what());
            QVERIFY2(error.offset().has_value(), error.what());
            QCOMPARE(*error.offset(), std::uint64_t(0));
        }
    }
}

void TestUntrustedInput::inMemoryScanMatchesTheFileScan()
{
    const std::vector<std::uint8_t> bytes = readAll(good_);
    for (std::size_t cut : {bytes.size(), bytes.size() - 1, bytes.size() / 2, std::size_t(20)}) {
        const std::string file = dir_.file("cut.zkdv");
        writeAll(file, bytes, cut);
        ScanOptions options;
        options.computeFileSha256 = true;
        const TapeSummary fromFile = scanTape(file, nullptr, options);
        const TapeSummary fromMemory = scanTapeBytes(ByteSpan(bytes.data(), cut), file, nullptr, options);
        QCOMPARE(fromMemory.status, fromFile.status);
        QCOMPARE(fromMemory.validBytes, fromFile.validBytes);
        QCOMPARE(fromMemory.recordCount, fromFile.recordCount);
        QCOMPARE(fromMemory.chainHead, fromFile.chainHead);
        QCOMPARE(fromMemory.fileSha256, fromFile.fileSha256);
        QCOMPARE(fromMemory.problem.has_value(), fromFile.problem.has_value());
        if (fromFile.problem)
            QCOMPARE(fromMemory.problem->describe(), fromFile.problem->describe());
    }
}

void TestUntrustedInput::specialFilesAreRefusedBeforeReading()
{
    const std::string fifo = dir_.file("tape.fifo");
    QCOMPARE(::mkfifo(fifo.c_str(), 0600), 0);
    const std::vector<std::pair<const char*, std::function<void()>>> readers = {
        {"scanTape", [&] { scanTape(fifo); }},
        {"RecordReader", [&] { RecordReader reader(fifo); }},
        {"sniffAuditFile", [&] { sniffAuditFile(fifo); }},
    };
    for (const auto& [name, open] : readers) {
        const QString outcome = refusalOfFifo(fifo, open);
        QVERIFY2(outcome.contains(QStringLiteral("is a FIFO, not a regular file")) && outcome.contains(QString::fromStdString(fifo)),
                 qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(name), outcome)));
    }
    try {
        MappedFile device("/dev/null");
        QFAIL("/dev/null was mapped as a file");
    } catch (const IoError& error) {
        QVERIFY2(std::string(error.what()).find("is a character device") != std::string::npos, error.what());
    }
}

void TestUntrustedInput::invalidUtf8IsReplaced_data()
{
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QByteArray>("expected");
    const QByteArray r("\xEF\xBF\xBD");
    QTest::newRow("valid text") << QByteArray("caf\xC3\xA9 \xF0\x9F\x98\x80") << QByteArray("caf\xC3\xA9 \xF0\x9F\x98\x80");
    QTest::newRow("lone 0xFF") << QByteArray("a\xFF" "b") << QByteArray("a") + r + "b";
    QTest::newRow("cut sequence at the end") << QByteArray("zip \xC3") << QByteArray("zip ") + r;
    QTest::newRow("three-byte sequence broken off") << QByteArray("\xE2\x82x") << r + "x";
    QTest::newRow("four-byte sequence broken off") << QByteArray("\xF0\x9F\x98") << r;
    QTest::newRow("overlong slash") << QByteArray("\xC0\xAF") << r + r;
    QTest::newRow("UTF-16 surrogate") << QByteArray("\xED\xA0\x80") << r + r + r;
    QTest::newRow("past U+10FFFF") << QByteArray("\xF4\x90\x80\x80") << r + r + r + r;
}

void TestUntrustedInput::invalidUtf8IsReplaced()
{
    QFETCH(QByteArray, input);
    QFETCH(QByteArray, expected);
    const std::string repaired = toValidUtf8(std::string_view(input.constData(), static_cast<std::size_t>(input.size())));
    QCOMPARE(QByteArray::fromStdString(repaired), expected);
    QVERIFY(isValidUtf8(repaired));
    // JSON output repairs text the same way.
    const std::string json = toJsonText(nlohmann::json(std::string(input.constData(), static_cast<std::size_t>(input.size()))));
    QCOMPARE(QByteArray::fromStdString(parseUntrustedJson(json, "output").get<std::string>()), expected);
}

void TestUntrustedInput::jsonOutputIsAlwaysValidUtf8()
{
    const std::string detail = "PytorchStreamReader failed reading zip archive: \xFF\xFE name";
    QVERIFY_THROWS_EXCEPTION(nlohmann::json::type_error, (void)nlohmann::json{{"detail", detail}}.dump());
    const std::string text = toJsonText(nlohmann::json{{"detail", detail}}, 2);
    QVERIFY(isValidUtf8(text));
    QCOMPARE(parseUntrustedJson(text, "output")["detail"].get<std::string>(), toValidUtf8(detail));
    QCOMPARE(toJsonText(nlohmann::ordered_json{{"b", 1}, {"a", "x"}}), std::string("{\"b\":1,\"a\":\"x\"}"));
}

QTEST_GUILESS_MAIN(TestUntrustedInput)
#include "test_untrusted_input.moc"
