// The one trust-file rule (zkdv/util/trust_file.h) against what a forger on the same machine
// can do to the files an auditor's trust rests on: write into the trainer-keys folder or a key
// in it, point a link at a folder or file they may write, or own it. Every such keyring makes
// `verify --require-trusted` refuse (exit 2) a tape its key would otherwise vouch for, and the
// auditor's trusted-keys file is held to the same rule.

#include <QtTest>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "audit_run.h"
#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/util/auditor_key.h"
#include "zkdv/util/error.h"
#include "zkdv/util/signing_key.h"

using namespace zkdv;
namespace fs = std::filesystem;

namespace {

// What is done to a well-kept keyring before the tape is verified with it.
enum class Attack {
    None,                      // the control: the trainer's key in a folder only its user may write
    FolderWorldWritable,       // trainer-keys 0777: anyone may add a key
    FolderSticky,              // 01777: sticky keeps others from replacing files, not from adding keys
    FolderGroupWritable,       // 0775
    KeyWorldWritable,          // alice.pem 0666
    KeyGroupWritable,          // alice.pem 0664
    FolderLinkedToOpenFolder,  // trainer-keys -> open/ (0777), which holds the key
    KeyLinkedIntoOpenFolder,   // alice.pem -> open/alice.pem, open/ 0777
    KeyLinkedToOpenFile,       // alice.pem -> elsewhere/alice.pem 0666
    ConfigFolderWorldWritable, // the folder trainer-keys lies in is 0777: anyone may replace trainer-keys
    KeyOwnedByAnother,         // alice.pem belongs to another user
    FolderOwnedByAnother,      // trainer-keys belongs to another user
    NamedKey,                  // the control for --trusted-key: a well-kept file named on the command line
    NamedKeyWorldWritable,     // --trusted-key FILE, FILE 0666
    NamedKeyInOpenFolder,      // --trusted-key open/alice.pem, open/ 0777
    NamedKeyLinkedIntoOpenFolder,  // --trusted-key link -> open/alice.pem
};

void makeFolder(const fs::path& folder, mode_t mode)
{
    fs::create_directories(folder);
    QCOMPARE(::chmod(folder.c_str(), mode), 0);
}

void copyKey(const fs::path& from, const fs::path& to, mode_t mode)
{
    fs::copy_file(from, to, fs::copy_options::overwrite_existing);
    QCOMPARE(::chmod(to.c_str(), mode), 0);
}

// Gives `path` to a user id that is not this process's. Only root may: false when this
// process cannot, and the row is skipped (a skip never counts as a pass).
bool giveAway(const fs::path& path)
{
    constexpr uid_t kStranger = 4242;
    return ::geteuid() == 0 && ::lchown(path.c_str(), kStranger, kStranger) == 0;
}

}  // namespace

Q_DECLARE_METATYPE(Attack)

class TestTrustFiles : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void aKeyringOthersMayChangeTrustsNobody_data();
    void aKeyringOthersMayChangeTrustsNobody();
    void theTrustedKeysFileIsHeldToTheSameRule_data();
    void theTrustedKeysFileIsHeldToTheSameRule();

private:
    test::TempDir dir_;
    fs::path tape_, publicKey_;
    int row_ = 0;
};

void TestTrustFiles::initTestCase()
{
    QVERIFY2(QFileInfo(QStringLiteral(ZKDV_AUDIT_EXECUTABLE)).isExecutable(), ZKDV_AUDIT_EXECUTABLE);
    // A tape signed by the trainer: the keyring's rule is the same for a tape's seal and for its
    // detached signature, and a detached one needs no libtorch to record.
    const SigningKey key = SigningKey::generate(KeyAlgorithm::EcdsaP256);
    const fs::path privateKey = fs::path(dir_.path()) / "trainer.pem";
    std::ofstream(privateKey) << key.privatePem();
    QCOMPARE(::chmod(privateKey.c_str(), 0600), 0);
    publicKey_ = fs::path(dir_.path()) / "trainer.pem.pub";
    std::ofstream(publicKey_) << key.publicKey().pem();
    tape_ = fs::path(dir_.path()) / "signed.zkdv";
    SyntheticDemoOptions options;
    options.steps = 30;
    options.batchSize = 4;
    options.snapshotInterval = 12;
    options.updateCheckProbability = 0.3;
    options.stateCheckProbability = 0.3;
    writeSyntheticDemoTape(tape_.string(), options);
    const test::AuditRun signedFile = test::runAuditCommand(
        {QStringLiteral("sign"), QString::fromStdString(tape_.string()), QStringLiteral("--key"), QString::fromStdString(privateKey.string())});
    QVERIFY2(!signedFile.crashed && signedFile.exitCode == 0, qPrintable(signedFile.describe()));
}

void TestTrustFiles::aKeyringOthersMayChangeTrustsNobody_data()
{
    QTest::addColumn<Attack>("attack");
    QTest::addColumn<QString>("named");  // what the refusal must name
    QTest::addColumn<QString>("fix");    // and how to fix it
    QTest::newRow("well kept: trusted") << Attack::None << QString() << QString();
    QTest::newRow("world-writable trainer-keys") << Attack::FolderWorldWritable << "trainer-keys" << "chmod go-w";
    QTest::newRow("sticky world-writable trainer-keys") << Attack::FolderSticky << "trainer-keys" << "chmod go-w";
    QTest::newRow("group-writable trainer-keys") << Attack::FolderGroupWritable << "trainer-keys" << "chmod go-w";
    QTest::newRow("0666 key file") << Attack::KeyWorldWritable << "0666" << "chmod go-w";
    QTest::newRow("group-writable key file") << Attack::KeyGroupWritable << "0664" << "chmod go-w";
    QTest::newRow("trainer-keys linked to a world-writable folder") << Attack::FolderLinkedToOpenFolder << "open" << "chmod go-w";
    QTest::newRow("key linked into a world-writable folder") << Attack::KeyLinkedIntoOpenFolder << "open" << "chmod go-w";
    QTest::newRow("key linked to a 0666 file") << Attack::KeyLinkedToOpenFile << "0666" << "chmod go-w";
    QTest::newRow("config folder world-writable") << Attack::ConfigFolderWorldWritable << "config" << "chmod go-w";
    QTest::newRow("key file owned by another user") << Attack::KeyOwnedByAnother << "alice.pem" << "belongs to user id";
    QTest::newRow("trainer-keys owned by another user") << Attack::FolderOwnedByAnother << "trainer-keys" << "belongs to user id";
    QTest::newRow("--trusted-key well kept: trusted") << Attack::NamedKey << QString() << QString();
    QTest::newRow("--trusted-key 0666") << Attack::NamedKeyWorldWritable << "0666" << "chmod go-w";
    QTest::newRow("--trusted-key in a world-writable folder") << Attack::NamedKeyInOpenFolder << "open" << "chmod go-w";
    QTest::newRow("--trusted-key linked into a world-writable folder") << Attack::NamedKeyLinkedIntoOpenFolder << "open" << "chmod go-w";
}

void TestTrustFiles::aKeyringOthersMayChangeTrustsNobody()
{
    QFETCH(Attack, attack);
    QFETCH(QString, named);
    QFETCH(QString, fix);
    const fs::path root = fs::path(dir_.path()) / ("row-" + std::to_string(++row_));
    const fs::path config = root / "config", folder = config / "trainer-keys", key = folder / "alice.pem", open = root / "open";
    const bool namedKey = attack == Attack::NamedKey || attack == Attack::NamedKeyWorldWritable || attack == Attack::NamedKeyInOpenFolder ||
                          attack == Attack::NamedKeyLinkedIntoOpenFolder;
    makeFolder(config, 0755);
    makeFolder(open, 0755);
    if (!namedKey) {
        makeFolder(folder, 0755);
        copyKey(publicKey_, key, 0644);
    }
    fs::path keyArgument = root / "alice.pem";  // the file --trusted-key names
    switch (attack) {
    case Attack::None: break;
    case Attack::FolderWorldWritable: QCOMPARE(::chmod(folder.c_str(), 0777), 0); break;
    case Attack::FolderSticky: QCOMPARE(::chmod(folder.c_str(), 01777), 0); break;
    case Attack::FolderGroupWritable: QCOMPARE(::chmod(folder.c_str(), 0775), 0); break;
    case Attack::KeyWorldWritable: QCOMPARE(::chmod(key.c_str(), 0666), 0); break;
    case Attack::KeyGroupWritable: QCOMPARE(::chmod(key.c_str(), 0664), 0); break;
    case Attack::FolderLinkedToOpenFolder:
        copyKey(publicKey_, open / "alice.pem", 0644);
        QCOMPARE(::chmod(open.c_str(), 0777), 0);
        fs::remove_all(folder);
        fs::create_directory_symlink(open, folder);
        break;
    case Attack::KeyLinkedIntoOpenFolder:
        copyKey(publicKey_, open / "alice.pem", 0644);
        QCOMPARE(::chmod(open.c_str(), 0777), 0);
        fs::remove(key);
        fs::create_symlink(open / "alice.pem", key);
        break;
    case Attack::KeyLinkedToOpenFile:
        makeFolder(root / "elsewhere", 0755);
        copyKey(publicKey_, root / "elsewhere" / "alice.pem", 0666);
        fs::remove(key);
        fs::create_symlink(root / "elsewhere" / "alice.pem", key);
        break;
    case Attack::ConfigFolderWorldWritable: QCOMPARE(::chmod(config.c_str(), 0777), 0); break;
    case Attack::KeyOwnedByAnother:
        if (!giveAway(key))
            QSKIP("giving a file to another user needs root");
        break;
    case Attack::FolderOwnedByAnother:
        if (!giveAway(folder))
            QSKIP("giving a folder to another user needs root");
        break;
    case Attack::NamedKey: copyKey(publicKey_, keyArgument, 0644); break;
    case Attack::NamedKeyWorldWritable: copyKey(publicKey_, keyArgument, 0666); break;
    case Attack::NamedKeyInOpenFolder:
        keyArgument = open / "alice.pem";
        copyKey(publicKey_, keyArgument, 0644);
        QCOMPARE(::chmod(open.c_str(), 0777), 0);
        break;
    case Attack::NamedKeyLinkedIntoOpenFolder:
        copyKey(publicKey_, open / "alice.pem", 0644);
        QCOMPARE(::chmod(open.c_str(), 0777), 0);
        fs::create_symlink(open / "alice.pem", keyArgument);
        break;
    }

    QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
    environment.insert(QStringLiteral("ZKDV_CONFIG_HOME"), QString::fromStdString(config.string()));
    QStringList arguments = {QStringLiteral("verify"), QString::fromStdString(tape_.string()), QStringLiteral("--require-trusted"),
                             QStringLiteral("--quiet")};
    if (namedKey)
        arguments << QStringLiteral("--trusted-key") << QString::fromStdString(keyArgument.string());
    const test::AuditRun verified = test::runAuditCommand(arguments, environment);
    QVERIFY2(!verified.crashed, qPrintable(verified.describe()));
    if (named.isEmpty()) {
        QVERIFY2(verified.exitCode == 0, qPrintable(verified.describe()));  // the control: the rule does not refuse a well-kept keyring
        return;
    }
    // Refused, never skipped: not trusted (exit 0), not merely untrusted (exit 1), but unusable.
    QVERIFY2(verified.exitCode == 2, qPrintable(verified.describe()));
    QVERIFY2(verified.err.contains(named) && verified.err.contains(fix), qPrintable(verified.describe()));
}

void TestTrustFiles::theTrustedKeysFileIsHeldToTheSameRule_data()
{
    QTest::addColumn<Attack>("attack");
    QTest::addColumn<QString>("fix");
    QTest::newRow("well kept: read") << Attack::None << QString();
    QTest::newRow("0666 trusted-keys") << Attack::KeyWorldWritable << "chmod go-w";
    QTest::newRow("group-writable trusted-keys") << Attack::KeyGroupWritable << "chmod go-w";
    QTest::newRow("config folder world-writable") << Attack::ConfigFolderWorldWritable << "chmod go-w";
    QTest::newRow("config folder linked to a world-writable folder") << Attack::FolderLinkedToOpenFolder << "chmod go-w";
    QTest::newRow("trusted-keys linked into a world-writable folder") << Attack::KeyLinkedIntoOpenFolder << "chmod go-w";
    QTest::newRow("trusted-keys linked to a 0666 file") << Attack::KeyLinkedToOpenFile << "chmod go-w";
    QTest::newRow("trusted-keys owned by another user") << Attack::KeyOwnedByAnother << "belongs to user id";
}

void TestTrustFiles::theTrustedKeysFileIsHeldToTheSameRule()
{
    QFETCH(Attack, attack);
    QFETCH(QString, fix);
    const fs::path root = fs::path(dir_.path()) / ("trusted-" + std::to_string(++row_));
    const fs::path config = root / "config", list = config / "trusted-keys", open = root / "open";
    makeFolder(config, 0755);
    makeFolder(open, 0755);
    const std::string line = std::string(64, 'a') + " someone\n";
    std::ofstream(list) << line;
    QCOMPARE(::chmod(list.c_str(), 0644), 0);
    fs::path read = list;  // the path the auditor's settings name
    switch (attack) {
    case Attack::KeyWorldWritable: QCOMPARE(::chmod(list.c_str(), 0666), 0); break;
    case Attack::KeyGroupWritable: QCOMPARE(::chmod(list.c_str(), 0664), 0); break;
    case Attack::ConfigFolderWorldWritable: QCOMPARE(::chmod(config.c_str(), 0777), 0); break;
    case Attack::FolderLinkedToOpenFolder:
        std::ofstream(open / "trusted-keys") << line;
        QCOMPARE(::chmod(open.c_str(), 0777), 0);
        fs::create_directory_symlink(open, root / "linked-config");
        read = root / "linked-config" / "trusted-keys";
        break;
    case Attack::KeyLinkedIntoOpenFolder:
        std::ofstream(open / "trusted-keys") << line;
        QCOMPARE(::chmod(open.c_str(), 0777), 0);
        fs::remove(list);
        fs::create_symlink(open / "trusted-keys", list);
        break;
    case Attack::KeyLinkedToOpenFile:
        std::ofstream(open / "trusted-keys") << line;
        QCOMPARE(::chmod((open / "trusted-keys").c_str(), 0666), 0);
        fs::remove(list);
        fs::create_symlink(open / "trusted-keys", list);
        break;
    case Attack::KeyOwnedByAnother:
        if (!giveAway(list))
            QSKIP("giving a file to another user needs root");
        break;
    default: break;
    }
    try {
        const std::vector<TrustedKey> keys = readTrustedKeys(read);
        QVERIFY2(fix.isEmpty(), "a trusted-keys file others may change was read");
        QCOMPARE(keys.size(), std::size_t(1));
    } catch (const Error& error) {
        QVERIFY2(!fix.isEmpty(), error.what());
        QVERIFY2(QString::fromUtf8(error.what()).contains(fix) && QString::fromUtf8(error.what()).contains(QStringLiteral("trusted-keys")), error.what());
    }
}

QTEST_GUILESS_MAIN(TestTrustFiles)
#include "test_trust_files.moc"
