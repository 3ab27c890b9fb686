// A real full disk (ENOSPC from the kernel, not SQLite's page limit): `zkdv-audit` runs with
// its case on a small tmpfs mounted in a private user and mount namespace (unshare -rm),
// the ingest of a tape too large for it fails saying the disk is full, and what the case
// held before is intact. Needs unprivileged user namespaces (or root): without them the
// test exits with 77, which ctest reports as skipped, never as passed.
#include <QtTest>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "audit_process.h"
#include "file_bytes.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/database.h"

using namespace zkdv;

using test::readText;

namespace {

constexpr int kSkipped = 77;  // SKIP_RETURN_CODE in tests/store/CMakeLists.txt

bool contains(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

void writeTape(const std::string& path, std::uint64_t steps)
{
    SyntheticDemoOptions options;
    options.steps = steps;
    options.batchSize = 4;
    options.features = 4;
    options.classes = 3;
    options.overwrite = true;
    writeSyntheticDemoTape(path, options);
}

// Runs `script` with bash inside a new user and mount namespace; its exit status, -1 when
// it did not end in time.
int inNamespace(const std::string& script, std::string* output)
{
    test::AuditProcess process("/usr/bin/unshare", {"--user", "--map-root-user", "--mount", "/bin/bash", "-c", script});
    const int status = process.wait(std::chrono::seconds(300));
    *output = process.out() + process.err();
    return status;
}

}  // namespace

class TestFullDisk : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void ingestOnAFullDiskKeepsTheCase();
};

void TestFullDisk::initTestCase()
{
    std::string output;
    if (inNamespace("mount -t tmpfs -o size=1m tmpfs /mnt && touch /mnt/x", &output) != 0) {
        std::fprintf(stderr, "SKIP: cannot mount a tmpfs in a user namespace here (%s); the full-disk test did not run\n", output.c_str());
        std::exit(kSkipped);
    }
}

void TestFullDisk::ingestOnAFullDiskKeepsTheCase()
{
    test::TempDir dir;
    const std::string small = dir.file("small.zkdv"), large = dir.file("large.zkdv");
    writeTape(small, 30);
    writeTape(large, 60000);  // ~20 MB of case rows: more than the disk below holds
    QVERIFY(QDir().mkpath(QString::fromStdString(dir.file("disk"))));
    QVERIFY(QDir().mkpath(QString::fromStdString(dir.file("after"))));
    const std::string audit = test::auditExecutable();
    const std::string disk = dir.file("disk");
    // Each step's exit status and output go to files outside the tmpfs, which vanishes with
    // the namespace; the case is copied out at the end (its -wal too, if any).
    std::ostringstream script;
    script << "set -u; mount -t tmpfs -o size=6m tmpfs '" << disk << "' || exit 90; cd '" << disk << "'\n"
           << "'" << audit << "' ingest '" << small << "' --case case.zkaudit > '" << dir.file("small.out") << "' 2>&1; echo $? > '"
           << dir.file("small.rc") << "'\n"
           << "'" << audit << "' ingest '" << large << "' --case case.zkaudit > '" << dir.file("large.out") << "' 2>&1; echo $? > '"
           << dir.file("large.rc") << "'\n"
           << "df -k . > '" << dir.file("df.out") << "'\n"
           << "'" << audit << "' info case.zkaudit --json > '" << dir.file("info.json") << "' 2> '" << dir.file("info.err") << "'; echo $? > '"
           << dir.file("info.rc") << "'\n"
           << "cp case.zkaudit* '" << dir.file("after") << "/'\n";
    std::string output;
    QCOMPARE(inNamespace(script.str(), &output), 0);

    QCOMPARE(readText(dir.file("small.rc")), std::string("0\n"));
    const std::string largeOut = readText(dir.file("large.out"));
    QVERIFY2(readText(dir.file("large.rc")) == "2\n", (readText(dir.file("large.rc")) + largeOut).c_str());
    QVERIFY2(contains(largeOut, "the disk is full (writing ") && contains(largeOut, "case.zkaudit"), largeOut.c_str());
    QVERIFY2(contains(readText(dir.file("df.out")), "tmpfs"), readText(dir.file("df.out")).c_str());

    // What was stored before the failed ingest is all there, and only that.
    QVERIFY2(readText(dir.file("info.rc")) == "0\n", readText(dir.file("info.err")).c_str());
    const QJsonObject info = QJsonDocument::fromJson(QByteArray::fromStdString(readText(dir.file("info.json")))).object();
    const QJsonArray tapes = info.value("tapes").toArray();
    QCOMPARE(tapes.size(), 1);
    QCOMPARE(tapes.at(0).toObject().value("transactions").toInteger(), qint64(30));
    Database copy(dir.file("after/case.zkaudit"), Database::Mode::ReadWrite);
    Statement check = copy.prepare("PRAGMA integrity_check");
    QVERIFY(check.step());
    QCOMPARE(check.text(0), std::string("ok"));
    QCOMPARE(copy.queryInt64("SELECT count(*) FROM transactions").value_or(-1), std::int64_t(30));
}

QTEST_GUILESS_MAIN(TestFullDisk)
#include "test_full_disk.moc"
