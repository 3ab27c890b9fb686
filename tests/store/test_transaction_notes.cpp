// Auditor notes and flags on transactions (zkdv/store/transaction_notes.h, case schema
// version 8): stored and read back, shown in the transaction table's rows, removed when
// cleared, refused where they cannot belong; a version-7 case migrates and keeps its rows.

#include <QtTest>

#include "temp_dir.h"
#include "zkdv/demo/synthetic_demo.h"
#include "zkdv/store/case_schema.h"
#include "zkdv/store/case_store.h"
#include "zkdv/store/database.h"
#include "zkdv/store/transaction_notes.h"
#include "zkdv/store/transaction_table.h"

using namespace zkdv;

namespace {

constexpr std::uint64_t kSteps = 24;

std::int64_t countOf(Database& db, const std::string& sql) { return db.queryInt64(sql).value_or(-1); }

}  // namespace

class TestTransactionNotes : public QObject {
    Q_OBJECT

private Q_SLOTS:
    void initTestCase();
    void notesRoundTripAndShowInTheTable();
    void clearingANoteRemovesItsRow();
    void refusesNotesThatCannotBelong();
    void flagNamesRoundTrip();
    void aVersion7CaseMigratesKeepingItsRows();

private:
    // A new case holding the demo tape; returns its path.
    std::string newCase(const std::string& name);

    test::TempDir dir_;
    std::string tape_;
};

void TestTransactionNotes::initTestCase()
{
    SyntheticDemoOptions options;
    options.steps = kSteps;
    tape_ = dir_.file("demo.zkdv");
    writeSyntheticDemoTape(tape_, options);
}

std::string TestTransactionNotes::newCase(const std::string& name)
{
    const std::string path = dir_.file(name);
    CaseStore store(path, CaseStore::Access::ReadWrite);
    store.ingestTape(tape_);
    return path;
}

void TestTransactionNotes::notesRoundTripAndShowInTheTable()
{
    const std::string path = newCase("round-trip.zkaudit");
    {
        CaseStore store(path, CaseStore::Access::ReadWrite);
        const std::int64_t tape = store.tapes().front().id;
        TransactionNotes notes(store.database(), tape);
        QVERIFY(!notes.note(3));
        notes.set(3, TransactionFlag::Suspicious, "lr jumps here,\n\"see step 2\"", "alice");
        notes.set(7, TransactionFlag::None, "looked fine", "bob");
        notes.set(3, TransactionFlag::Confirmed, "lr jumps here: confirmed", "carol");  // replaces
    }
    CaseStore store(path, CaseStore::Access::ReadOnly);
    const std::int64_t tape = store.tapes().front().id;
    TransactionNotes notes(store.database(), tape);
    const std::optional<TransactionNote> three = notes.note(3);
    QVERIFY(three);
    QCOMPARE(three->index, std::uint64_t(3));
    QCOMPARE(three->flag, TransactionFlag::Confirmed);
    QCOMPARE(three->note, std::string("lr jumps here: confirmed"));
    QCOMPARE(three->author, std::string("carol"));
    QCOMPARE(three->updatedAt.size(), std::size_t(20));  // 2026-12-01T21:00:00Z
    QCOMPARE(three->updatedAt.back(), 'Z');
    const std::vector<TransactionNote> all = notes.all();
    QCOMPARE(all.size(), std::size_t(2));
    QCOMPARE(all[0].index, std::uint64_t(3));
    QCOMPARE(all[1].index, std::uint64_t(7));
    QCOMPARE(all[1].flag, TransactionFlag::None);
    QCOMPARE(all[1].note, std::string("looked fine"));

    // The table's rows carry them; rows without a note carry nothing.
    TransactionTable table(store.database(), tape);
    const std::vector<TransactionRow> rows = table.rows(0, kSteps);
    QCOMPARE(rows.size(), std::size_t(kSteps));
    QCOMPARE(rows[3].flag, std::string("confirmed"));
    QCOMPARE(rows[3].note, std::string("lr jumps here: confirmed"));
    QCOMPARE(rows[7].flag, std::string("none"));
    QCOMPARE(rows[7].note, std::string("looked fine"));
    QCOMPARE(rows[4].flag, std::string());
    QCOMPARE(rows[4].note, std::string());
    // Sorted by note: flagged first when descending (confirmed 3, then the unflagged note 7),
    // the transactions without a note after them in index order.
    table.setSort(TransactionTable::Column::Note, false);
    QCOMPARE(table.transactionAt(0), std::uint64_t(3));
    QCOMPARE(table.transactionAt(1), std::uint64_t(7));
    QCOMPARE(table.transactionAt(kSteps - 1), std::uint64_t(0));
    table.setSort(TransactionTable::Column::Note, true);
    QCOMPARE(table.transactionAt(kSteps - 1), std::uint64_t(3));
    QCOMPARE(table.transactionAt(0), std::uint64_t(0));

    // A read-only connection cannot write one.
    QVERIFY_THROWS_EXCEPTION(DatabaseError, notes.set(5, TransactionFlag::Question, "?"));
}

void TestTransactionNotes::clearingANoteRemovesItsRow()
{
    const std::string path = newCase("clear.zkaudit");
    CaseStore store(path, CaseStore::Access::ReadWrite);
    TransactionNotes notes(store.database(), store.tapes().front().id);
    notes.set(2, TransactionFlag::Question, "why?");
    QCOMPARE(countOf(store.database(), "SELECT count(*) FROM transaction_notes"), std::int64_t(1));
    QCOMPARE(notes.note(2)->author, TransactionNotes::defaultAuthor());
    notes.set(2, TransactionFlag::None, "  \n ");
    QVERIFY(!notes.note(2));
    QCOMPARE(countOf(store.database(), "SELECT count(*) FROM transaction_notes"), std::int64_t(0));
}

void TestTransactionNotes::refusesNotesThatCannotBelong()
{
    const std::string path = newCase("refusals.zkaudit");
    CaseStore store(path, CaseStore::Access::ReadWrite);
    const std::int64_t tape = store.tapes().front().id;
    TransactionNotes notes(store.database(), tape);
    try {
        notes.set(kSteps, TransactionFlag::Question, "beyond the tape");
        QFAIL("stored a note on a transaction the tape does not have");
    } catch (const Error& error) {
        QVERIFY2(QString::fromUtf8(error.what()).contains(QStringLiteral("has no transaction %1").arg(kSteps)), error.what());
    }
    QVERIFY_THROWS_EXCEPTION(Error, TransactionNotes(store.database(), tape + 1).set(0, TransactionFlag::Question, "no such tape"));
    QVERIFY_THROWS_EXCEPTION(Error, notes.set(0, TransactionFlag::Question, std::string(TransactionNotes::kMaxNoteBytes + 1, 'x')));
    // The schema refuses a flag this build does not know, whoever writes it.
    QVERIFY_THROWS_EXCEPTION(DatabaseError, store.database().exec("INSERT INTO transaction_notes(tape_id, idx, flag, note, author, updated_at)"
                                                                  " VALUES (" + std::to_string(tape) + ", 1, 'maybe', '', 'x', 'now')"));
    QCOMPARE(countOf(store.database(), "SELECT count(*) FROM transaction_notes"), std::int64_t(0));
}

void TestTransactionNotes::flagNamesRoundTrip()
{
    QCOMPARE(transactionFlags().size(), std::size_t(4));
    for (TransactionFlag flag : transactionFlags())
        QCOMPARE(transactionFlagFromName(transactionFlagName(flag)), std::optional<TransactionFlag>(flag));
    QCOMPARE(std::string(transactionFlagName(TransactionFlag::Suspicious)), std::string("suspicious"));
    QVERIFY(!transactionFlagFromName("Suspicious"));
    QVERIFY(!transactionFlagFromName(""));
}

void TestTransactionNotes::aVersion7CaseMigratesKeepingItsRows()
{
    // A case as version 7 left it: the migrations are append-only, so that is today's case
    // without what migrations 8 and later add.
    const std::string path = newCase("v7.zkaudit");
    {
        Database db(path, Database::Mode::ReadWrite);
        db.exec("DROP TABLE tape_seals; ALTER TABLE transaction_notes DROP COLUMN public_key;"
                " ALTER TABLE transaction_notes DROP COLUMN signature");                                    // 18
        db.exec("ALTER TABLE replay_runs DROP COLUMN planned_audit_id; DROP TABLE planned_audits");         // 17
        db.exec("DROP TABLE merged_shards");                                                                // 16
        db.exec("ALTER TABLE replay_runs DROP COLUMN shard_index; ALTER TABLE replay_runs DROP COLUMN shard_count");  // 16
        db.exec("DROP TABLE provenance_checks");                                                            // 15
        for (const char* column : {"signer_key_id", "signer_algorithm", "signer_public_key"})
            db.exec(std::string("ALTER TABLE tapes DROP COLUMN ") + column);                               // 14
        db.exec("ALTER TABLE replay_runs DROP COLUMN program_check");                                       // 13
        db.exec("DROP INDEX tapes_by_identity");                                                            // 12
        for (const char* column : {"first_state_digest", "final_state_digest", "last_schedule_epoch", "last_grad_scaler", "transactions_before"})
            db.exec(std::string("ALTER TABLE tapes DROP COLUMN ") + column);                               // 12
        db.exec("ALTER TABLE transactions DROP COLUMN scheduled");                                          // 11
        db.exec("ALTER TABLE replay_runs DROP COLUMN seed_source");                                         // 10
        db.exec("ALTER TABLE run_seals DROP COLUMN found; ALTER TABLE run_seals DROP COLUMN payload_version");  // 9
        db.exec("ALTER TABLE verdicts DROP COLUMN cause");                                                  // 9
        db.exec("DROP TABLE transaction_notes");                                                            // 8
        db.setUserVersion(7);
        CaseSchema::requireExpectedSchema(db, 7);  // exactly what version 7 creates
    }
    // Opened for reading, a writable case is migrated once (CaseStore's one open policy) and
    // says from which version.
    {
        CaseStore reader(path, CaseStore::Access::ReadOnly);
        QCOMPARE(reader.migratedFromVersion().value_or(0), 7);
    }
    {
        CaseStore store(path, CaseStore::Access::ReadWrite);
        QCOMPARE(store.database().userVersion(), CaseSchema::latestVersion());
        QCOMPARE(store.tapes().size(), std::size_t(1));
        QCOMPARE(countOf(store.database(), "SELECT count(*) FROM transactions"), std::int64_t(kSteps));
        QCOMPARE(countOf(store.database(), "SELECT count(*) FROM transaction_notes"), std::int64_t(0));
        TransactionNotes(store.database(), store.tapes().front().id).set(5, TransactionFlag::Suspicious, "after the migration");
    }
    CaseStore again(path, CaseStore::Access::ReadOnly);
    QCOMPARE(TransactionNotes(again.database(), again.tapes().front().id).note(5)->note, std::string("after the migration"));
}

QTEST_GUILESS_MAIN(TestTransactionNotes)

#include "test_transaction_notes.moc"
