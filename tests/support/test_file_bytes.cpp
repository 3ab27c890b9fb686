// The tests' whole-file helpers: what they write is what they read back, and a file they
// cannot read or write completely (a full disk included) throws, naming it and why.

#include <QtTest>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "caught.h"
#include "file_bytes.h"
#include "temp_dir.h"

using namespace zkdv::test;

namespace {

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

}  // namespace

class TestFileBytes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void writtenBytesReadBack();
    void unreadableFileThrows();
    void failedWriteThrows();

private:
    TempDir dir_;
};

void TestFileBytes::writtenBytesReadBack()
{
    const std::string path = dir_.file("bytes");
    const std::vector<std::uint8_t> bytes = {0, 1, 2, 0xff, 0, 7};
    writeAll(path, bytes);
    QVERIFY(readAll(path) == bytes);
    writeAll(path, bytes, 3);  // replaces, cut
    QVERIFY(readAll(path) == std::vector<std::uint8_t>({0, 1, 2}));
    writeText(path, "text\n");
    QCOMPARE(readText(path), std::string("text\n"));
    // Larger than one read.
    const std::vector<std::uint8_t> large(200000, 0x5a);
    writeAll(path, large);
    QVERIFY(readAll(path) == large);
    writeAll(path, {});
    QVERIFY(readAll(path).empty());
}

void TestFileBytes::unreadableFileThrows()
{
    const std::string missing = dir_.file("missing");
    auto error = caught<std::runtime_error>([&] { readAll(missing); });
    QVERIFY(error);
    QVERIFY2(contains(error->what(), "cannot open " + missing + ": " + std::strerror(ENOENT)), error->what());
    // A directory opens but cannot be read.
    error = caught<std::runtime_error>([&] { readText(dir_.path()); });
    QVERIFY(error);
    QVERIFY2(contains(error->what(), "cannot read " + dir_.path() + ": " + std::strerror(EISDIR)), error->what());
}

void TestFileBytes::failedWriteThrows()
{
    // /dev/full accepts the open and refuses every byte with ENOSPC, as a full disk does.
    QVERIFY2(QFileInfo::exists(QStringLiteral("/dev/full")), "this test needs /dev/full (Linux)");
    auto error = caught<std::runtime_error>([&] { writeAll("/dev/full", std::vector<std::uint8_t>(10, 1)); });
    QVERIFY2(error, "a write to a full disk went unnoticed");
    QCOMPARE(std::string(error->what()), std::string("cannot write /dev/full: ") + std::strerror(ENOSPC));
    error = caught<std::runtime_error>([&] { writeText("/dev/full", "x"); });
    QVERIFY2(error, "a write to a full disk went unnoticed");

    const std::string nowhere = dir_.file("no-such-dir/file");
    error = caught<std::runtime_error>([&] { writeAll(nowhere, {1}); });
    QVERIFY(error);
    QCOMPARE(std::string(error->what()), "cannot create " + nowhere + ": " + std::strerror(ENOENT));

    error = caught<std::runtime_error>([&] { writeAll(dir_.file("short"), {1, 2}, 3); });
    QVERIFY(error);
    QVERIFY2(contains(error->what(), "cannot write 3 bytes"), error->what());
}

QTEST_GUILESS_MAIN(TestFileBytes)
#include "test_file_bytes.moc"
