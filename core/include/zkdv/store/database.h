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
    // a new, empty file is switched to WAL (a persistent property of the file).
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
    // Switches the journal mode ("wal", "delete") without waiting for other connections
    // (the change needs the file to itself); true when the file is then in `mode`.
    bool trySetJournalMode(const std::string& mode);

    const std::string& path() const { return path_; }
    sqlite3* handle() const { return db_; }
    // Throws DatabaseError for `code` unless it is SQLITE_OK/ROW/DONE; `what` says what failed.
    void check(int code, std::string_view what) const;

private:
    sqlite3* db_ = nullptr;
    std::string path_;
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
