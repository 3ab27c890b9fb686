#pragma once
// A thin RAII wrapper over the SQLite C API: a connection, prepared statements, transactions.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "zkdv/util/byte_span.h"
#include "zkdv/util/error.h"

struct sqlite3;
struct sqlite3_stmt;

namespace zkdv {

// An SQLite failure, with the statement or operation and SQLite's own message.
class DatabaseError : public Error {
public:
    DatabaseError(const std::string& message, int code) : Error(message), code_(code) {}
    int code() const { return code_; }  // the SQLite extended result code
    bool interrupted() const;          // SQLITE_INTERRUPT: cancelled through Database::interrupt()
    bool busy() const;                 // SQLITE_BUSY: another connection held the lock past the busy timeout

private:
    int code_;
};

class Database;

// One prepared statement. Bind indexes start at 1, column indexes at 0, as in SQLite.
class Statement {
public:
    Statement(Statement&&) noexcept;
    Statement& operator=(Statement&&) noexcept;
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;
    ~Statement();

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, int value) { return bind(index, static_cast<std::int64_t>(value)); }
    Statement& bind(int index, double value);
    Statement& bind(int index, std::string_view text);  // copied by SQLite (SQLITE_TRANSIENT)
    Statement& bind(int index, const char* text) { return bind(index, std::string_view(text)); }
    Statement& bind(int index, const std::string& text) { return bind(index, std::string_view(text)); }
    Statement& bindBlob(int index, ByteSpan blob);       // copied by SQLite (SQLITE_TRANSIENT)
    Statement& bindNull(int index);
    // Binds `value` or NULL when empty.
    Statement& bind(int index, const std::optional<std::int64_t>& value);
    Statement& bind(int index, const std::optional<double>& value);
    Statement& bind(int index, const std::optional<std::string>& value);

    // Advances; true while a row is available, false when done. Throws DatabaseError.
    bool step();
    // Runs a statement that returns no rows (or ignores them), then resets it.
    void run();
    // Resets for re-execution, keeping bindings unless clearBindings is true.
    void reset(bool clearBindings = false);

    int columnCount() const;
    bool isNull(int column) const;
    std::int64_t int64(int column) const;
    double real(int column) const;
    std::string text(int column) const;
    // Valid until the next step/reset/destruction.
    ByteSpan blob(int column) const;

    sqlite3_stmt* handle() const { return stmt_; }

private:
    friend class Database;
    Statement(Database& db, sqlite3_stmt* stmt);
    Database* db_ = nullptr;
    sqlite3_stmt* stmt_ = nullptr;
};

// One connection. Not thread-safe, except interrupt(), which may be called from any thread.
class Database {
public:
    enum class Mode { ReadOnly, ReadWrite, ReadWriteCreate };

    // Throws DatabaseError naming the path. Enables foreign keys and a busy timeout;
    // a new, empty file is switched to WAL (a persistent property of the file). A read-only
    // open of a file a killed writer left mid-write rolls that write back first (see
    // recoverInterruptedWrite).
    Database(const std::string& path, Mode mode);
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;
    ~Database();

    Statement prepare(std::string_view sql);
    // Executes one or more statements without results.
    void exec(std::string_view sql);
    // First column of the first row of a query, or nullopt when there is no row.
    std::optional<std::int64_t> queryInt64(std::string_view sql);

    std::int64_t lastInsertRowId() const;
    int changes() const;
    // Makes the running statement fail with SQLITE_INTERRUPT (DatabaseError::interrupted()).
    void interrupt();

    int userVersion();
    void setUserVersion(int version);
    // Writes `bytes` at the start of the blob in `column` of the row `rowid` of `table`,
    // which must already hold at least that many bytes (inserted as zeroblob(N)). A bound
    // blob is copied into a new record before it is inserted; this writes straight into the
    // pages, for values of megabytes.
    void writeBlob(const char* table, const char* column, std::int64_t rowid, ByteSpan bytes);
    // How long a statement waits for another connection's lock before it fails with
    // SQLITE_BUSY (DatabaseError::busy()); 5 s unless set (see BusyTimeout).
    void setBusyTimeout(int milliseconds);
    int busyTimeoutMs() const { return busyTimeoutMs_; }
    // Switches the journal mode ("wal", "delete") without waiting for other connections
    // (the change needs the file to itself); true when the file is then in `mode`.
    bool trySetJournalMode(const std::string& mode);

    // A read-only descriptor of the database file, for syncing it from another thread
    // (SyncAhead); -1 when it cannot be opened. It stays open as long as the connection and
    // is closed only after SQLite has closed it: on POSIX, closing any descriptor of a file
    // drops every lock the process holds on it, SQLite's included, and a second process would
    // then take the journal of a transaction still running for hot and roll it back.
    int syncDescriptor();

    const std::string& path() const { return path_; }
    sqlite3* handle() const { return db_; }
    // Throws DatabaseError for `code` unless it is SQLITE_OK/ROW/DONE; `what` says what failed.
    void check(int code, std::string_view what) const;

private:
    void open(Mode mode);
    // Rolls back what a killed writer left (through a connection that may write) or throws
    // saying what to do; `refusal` is the read-only connection's error.
    void recoverInterruptedWrite(const DatabaseError& refusal);

    sqlite3* db_ = nullptr;
    std::string path_;
    int syncDescriptor_ = -1;
    int busyTimeoutMs_ = 0;
};

// How long a writer that cannot go on without the write lock (an ingest starting, a replay
// beginning or finishing a run) waits for another writer to finish: an ingest holds the lock
// for its whole tape. Bounded, so that a writer that never finishes is reported.
constexpr int kWriterWaitMs = 10 * 60 * 1000;

// Another busy timeout for its lifetime, then the previous one again.
class BusyTimeout {
public:
    BusyTimeout(Database& db, int milliseconds);
    BusyTimeout(const BusyTimeout&) = delete;
    BusyTimeout& operator=(const BusyTimeout&) = delete;
    ~BusyTimeout();

private:
    Database& db_;
    int previous_;
};

// The SQLite library's version ("3.40.1").
std::string sqliteVersion();

// BEGIN IMMEDIATE on construction; rolls back on destruction unless commit() was called.
class SqlTransaction {
public:
    explicit SqlTransaction(Database& db);
    SqlTransaction(const SqlTransaction&) = delete;
    SqlTransaction& operator=(const SqlTransaction&) = delete;
    ~SqlTransaction();
    void commit();

private:
    Database& db_;
    bool done_ = false;
};

// Switches foreign key enforcement off for its lifetime, then on again. PRAGMA foreign_keys
// is a no-op inside a transaction, so this goes around one, never inside.
class ForeignKeysOff {
public:
    explicit ForeignKeysOff(Database& db);
    ForeignKeysOff(const ForeignKeysOff&) = delete;
    ForeignKeysOff& operator=(const ForeignKeysOff&) = delete;
    ~ForeignKeysOff();

private:
    Database& db_;
};

}  // namespace zkdv
