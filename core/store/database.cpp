#include "zkdv/store/database.h"

#include <cerrno>
#include <filesystem>
#include <limits>
#include <utility>

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

namespace zkdv {

namespace {

constexpr int kBusyTimeoutMs = 5000;
constexpr std::size_t kSqlExcerptLength = 80;

// Error messages quote the statement; scripts span lines and can be long, so fold
// whitespace and cut it to something that still identifies the statement.
std::string sqlExcerpt(std::string_view sql)
{
    std::string out;
    bool pendingSpace = false;
    for (char c : sql) {
        if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
            pendingSpace = !out.empty();
            continue;
        }
        if (pendingSpace) {
            out += ' ';
            pendingSpace = false;
        }
        if (out.size() >= kSqlExcerptLength) {
            out += "...";
            break;
        }
        out += c;
    }
    return out;
}

std::string quoted(std::string_view sql)
{
    return "\"" + sqlExcerpt(sql) + "\"";
}

// sqlite3_errmsg describes the connection's most recent failure, which is not `code` when
// the caller passes a code from elsewhere (a reset, a bind with no handle).
std::string messageFor(sqlite3* db, int code)
{
    if (db && sqlite3_extended_errcode(db) == code)
        return sqlite3_errmsg(db);
    return sqlite3_errstr(code);
}

// The failures an auditor can do something about, said so: SQLite's own words ("database or
// disk is full", "disk I/O error", "database is locked") name neither the file nor the remedy.
std::string plainReason(const Database& db, int code)
{
    const int primary = code & 0xff;
    const int systemError = db.handle() ? sqlite3_system_errno(db.handle()) : 0;
    if (primary == SQLITE_FULL || (primary == SQLITE_IOERR && (systemError == ENOSPC || systemError == EDQUOT)))
        return "the disk is full (writing " + db.path() + "); free some space and run the command again, nothing was half-written";
    if (primary == SQLITE_BUSY)
        return db.path() + " is being written by another process (or connection) and stayed locked for " + std::to_string(db.busyTimeoutMs()) +
               " ms; run the command again when that one has finished";
    return {};
}

DatabaseError makeError(const Database& db, int code, std::string_view what)
{
    const std::string reason = plainReason(db, code);
    const std::string sqliteSays = messageFor(db.handle(), code);
    return DatabaseError(std::string(what) + ": " + (reason.empty() ? sqliteSays : reason + " (" + sqliteSays + ")"), code);
}

// The statement's SQL for messages; a moved-from Statement has none.
std::string_view sqlOf(sqlite3_stmt* stmt)
{
    const char* sql = stmt ? sqlite3_sql(stmt) : nullptr;
    return sql ? std::string_view(sql) : std::string_view("(no statement)");
}

bool isSuccess(int code)
{
    return code == SQLITE_OK || code == SQLITE_ROW || code == SQLITE_DONE;
}

}  // namespace

bool DatabaseError::interrupted() const
{
    return (code_ & 0xff) == SQLITE_INTERRUPT;
}

bool DatabaseError::busy() const
{
    return (code_ & 0xff) == SQLITE_BUSY;
}

BusyTimeout::BusyTimeout(Database& db, int milliseconds) : db_(db), previous_(db.busyTimeoutMs())
{
    db_.setBusyTimeout(milliseconds);
}

BusyTimeout::~BusyTimeout() { db_.setBusyTimeout(previous_); }

// --- Statement ---------------------------------------------------------------

Statement::Statement(Database& db, sqlite3_stmt* stmt) : db_(&db), stmt_(stmt) {}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr))
{
}

Statement& Statement::operator=(Statement&& other) noexcept
{
    if (this != &other) {
        sqlite3_finalize(stmt_);
        db_ = other.db_;
        stmt_ = std::exchange(other.stmt_, nullptr);
    }
    return *this;
}

Statement::~Statement()
{
    sqlite3_finalize(stmt_);
}

namespace {

void checkBind(Database* db, sqlite3_stmt* stmt, int rc, int index)
{
    if (rc != SQLITE_OK)
        db->check(rc, "cannot bind parameter " + std::to_string(index) + " of "
                          + quoted(sqlOf(stmt)));
}

}  // namespace

Statement& Statement::bind(int index, std::int64_t value)
{
    checkBind(db_, stmt_, sqlite3_bind_int64(stmt_, index, value), index);
    return *this;
}

Statement& Statement::bind(int index, double value)
{
    checkBind(db_, stmt_, sqlite3_bind_double(stmt_, index, value), index);
    return *this;
}

Statement& Statement::bind(int index, std::string_view text)
{
    // A null pointer would bind SQL NULL; an empty string_view may carry one.
    const char* data = text.data() ? text.data() : "";
    checkBind(db_, stmt_,
              sqlite3_bind_text64(stmt_, index, data, text.size(), SQLITE_TRANSIENT, SQLITE_UTF8), index);
    return *this;
}

Statement& Statement::bindBlob(int index, ByteSpan blob)
{
    // sqlite3_bind_blob with a null pointer binds NULL, not an empty blob.
    int rc = blob.data ? sqlite3_bind_blob64(stmt_, index, blob.data, blob.size, SQLITE_TRANSIENT)
                       : sqlite3_bind_zeroblob(stmt_, index, 0);
    checkBind(db_, stmt_, rc, index);
    return *this;
}

Statement& Statement::bindNull(int index)
{
    checkBind(db_, stmt_, sqlite3_bind_null(stmt_, index), index);
    return *this;
}

Statement& Statement::bind(int index, const std::optional<std::int64_t>& value)
{
    return value ? bind(index, *value) : bindNull(index);
}

Statement& Statement::bind(int index, const std::optional<double>& value)
{
    return value ? bind(index, *value) : bindNull(index);
}

Statement& Statement::bind(int index, const std::optional<std::string>& value)
{
    return value ? bind(index, std::string_view(*value)) : bindNull(index);
}

bool Statement::step()
{
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW)
        return true;
    if (rc == SQLITE_DONE)
        return false;
    // Build the error before resetting so the message is the step's own; the reset lets
    // the statement be run again after the caller handles the error.
    DatabaseError error = makeError(*db_, rc, "cannot run " + quoted(sqlOf(stmt_)));
    sqlite3_reset(stmt_);
    throw error;
}

void Statement::run()
{
    while (step()) {
    }
    reset();
}

void Statement::reset(bool clearBindings)
{
    // The code reset returns repeats the last step's failure, which step() already threw.
    sqlite3_reset(stmt_);
    if (clearBindings)
        sqlite3_clear_bindings(stmt_);
}

int Statement::columnCount() const
{
    return sqlite3_column_count(stmt_);
}

bool Statement::isNull(int column) const
{
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
}

std::int64_t Statement::int64(int column) const
{
    return sqlite3_column_int64(stmt_, column);
}

double Statement::real(int column) const
{
    return sqlite3_column_double(stmt_, column);
}

std::string Statement::text(int column) const
{
    // Pointer first, then size: the documented order when a conversion may happen.
    const unsigned char* data = sqlite3_column_text(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    if (!data)
        return {};
    return std::string(reinterpret_cast<const char*>(data), static_cast<std::size_t>(size));
}

ByteSpan Statement::blob(int column) const
{
    const void* data = sqlite3_column_blob(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    if (!data || size <= 0)
        return {};
    return ByteSpan(data, static_cast<std::size_t>(size));
}

// --- Database ----------------------------------------------------------------

Database::Database(const std::string& path, Mode mode) : path_(path)
{
    try {
        open(mode);
    } catch (const DatabaseError& error) {
        // A process killed while writing the file leaves its journal (or an unrecovered
        // write-ahead log) behind; a read-only connection may not roll it back and refuses the
        // file. Any connection that may write does so on its first read, restoring the last
        // committed state, which is all a reader asked for.
        if (mode != Mode::ReadOnly || (error.code() & 0xff) != SQLITE_READONLY)
            throw;
        recoverInterruptedWrite(error);
        open(mode);
    }
}

void Database::recoverInterruptedWrite(const DatabaseError& refusal)
{
    const std::string folder = std::filesystem::path(path_).parent_path().string();
    if (::access(path_.c_str(), W_OK) != 0 || ::access(folder.empty() ? "." : folder.c_str(), W_OK) != 0)
        throw DatabaseError("case " + path_ + " was left in the middle of a write by a process that stopped (killed, crashed or "
                                "lost power); that write must be rolled back before the case can be read, which needs write "
                                "access to the case and its folder: run any command that writes it (zkdv-audit ingest or replay, "
                                "or the workstation) as a user allowed to (" + refusal.what() + ")",
                            refusal.code());
    Database writer(path_, Mode::ReadWrite);  // its first read rolls the write back
}

void Database::open(Mode mode)
{
    int flags = SQLITE_OPEN_NOMUTEX;
    switch (mode) {
    case Mode::ReadOnly:
        flags |= SQLITE_OPEN_READONLY;
        break;
    case Mode::ReadWrite:
        flags |= SQLITE_OPEN_READWRITE;
        break;
    case Mode::ReadWriteCreate:
        flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
        break;
    }
#ifdef SQLITE_OPEN_EXRESCODE
    flags |= SQLITE_OPEN_EXRESCODE;
#endif

    auto fail = [this](int rc) {
        DatabaseError error = makeError(*this, rc, "cannot open case " + path_);
        sqlite3_close_v2(db_);
        db_ = nullptr;
        throw error;
    };

    // SQLite's memory statistics take a process-wide mutex on every allocation, which a bulk
    // ingest makes millions of; nothing reads them. Only possible before SQLite initializes.
    static const int memoryStatisticsOff = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    (void)memoryStatisticsOff;

    int rc = sqlite3_open_v2(path_.c_str(), &db_, flags, nullptr);
    if (rc != SQLITE_OK)
        fail(rc);
    sqlite3_extended_result_codes(db_, 1);
    setBusyTimeout(kBusyTimeoutMs);
    // A case is a file people hand to each other: nothing stored in it may run as SQL here.
    // ZKDV creates no triggers or views, so none fire or expand (one in a case could rewrite
    // the verdicts a replay stores); functions in the schema must be harmless ones
    // (trusted_schema off); defensive mode forbids what could corrupt the file on purpose
    // (writable_schema, journal_mode=OFF). CaseSchema refuses a case with such objects anyway.
    const std::pair<int, int> hardening[] = {{SQLITE_DBCONFIG_DEFENSIVE, 1},
                                             {SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0},
                                             {SQLITE_DBCONFIG_ENABLE_TRIGGER, 0},
                                             {SQLITE_DBCONFIG_ENABLE_VIEW, 0}};
    for (const auto& [option, value] : hardening) {
        rc = sqlite3_db_config(db_, option, value, nullptr);
        if (rc != SQLITE_OK)
            fail(rc);
    }

    // SQLite opens lazily; reading the schema here makes a file that is not a database fail
    // now, with the path in the message, instead of at some later query.
    std::string setup = "PRAGMA foreign_keys=ON; SELECT count(*) FROM sqlite_master;";
    if (mode != Mode::ReadOnly)
        setup += "PRAGMA synchronous=NORMAL;";
    rc = sqlite3_exec(db_, setup.c_str(), nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK)
        fail(rc);
    // WAL is a persistent property of the file: set it only on a new, empty file, so that
    // opening somebody else's database read-write does not rewrite its header.
    if (mode != Mode::ReadOnly && queryInt64("PRAGMA page_count").value_or(1) == 0) {
        // 16 KiB pages (SQLite's default is 4 KiB): a bulk ingest writes a quarter as many
        // pages, each a syscall or two, with shallower B-trees; measured in docs/performance.md.
        rc = sqlite3_exec(db_, "PRAGMA page_size=16384; PRAGMA journal_mode=WAL;", nullptr, nullptr, nullptr);
        if (rc != SQLITE_OK)
            fail(rc);
    }
}

Database::~Database()
{
    if (sqlite3_close(db_) == SQLITE_OK) {
        if (syncDescriptor_ >= 0)
            ::close(syncDescriptor_);
        return;
    }
    // A statement outlived us: close_v2 defers the close until it is finalized, and the
    // connection may hold locks until then, so the sync descriptor stays open (for the rest
    // of the process) rather than drop them.
    sqlite3_close_v2(db_);
}

int Database::syncDescriptor()
{
    if (syncDescriptor_ < 0)
        syncDescriptor_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    return syncDescriptor_;
}

Statement Database::prepare(std::string_view sql)
{
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
    if (rc != SQLITE_OK) {
        sqlite3_finalize(stmt);
        check(rc, "cannot prepare " + quoted(sql));
    }
    if (!stmt)  // only whitespace or comments: stepping it would be an SQLite misuse
        throw DatabaseError("cannot prepare " + quoted(sql) + ": no SQL statement", SQLITE_MISUSE);
    return Statement(*this, stmt);
}

void Database::exec(std::string_view sql)
{
    // Statement by statement rather than sqlite3_exec, so a failure names the statement
    // of the script that failed.
    const char* next = sql.data();
    const char* end = sql.data() + sql.size();
    while (next < end) {
        sqlite3_stmt* raw = nullptr;
        const char* tail = nullptr;
        int rc = sqlite3_prepare_v2(db_, next, static_cast<int>(end - next), &raw, &tail);
        if (rc != SQLITE_OK) {
            sqlite3_finalize(raw);
            check(rc, "cannot prepare " + quoted(std::string_view(next, static_cast<std::size_t>(end - next))));
        }
        if (!tail || tail <= next)  // no progress: nothing left SQLite can parse
            tail = end;
        if (raw) {  // null for whitespace or a trailing comment
            Statement statement(*this, raw);
            statement.run();
        }
        next = tail;
    }
}

std::optional<std::int64_t> Database::queryInt64(std::string_view sql)
{
    Statement statement = prepare(sql);
    // A NULL result (max() over no rows) is as absent as no row at all.
    if (!statement.step() || statement.isNull(0))
        return std::nullopt;
    return statement.int64(0);
}

std::int64_t Database::lastInsertRowId() const
{
    return sqlite3_last_insert_rowid(db_);
}

int Database::changes() const
{
    return sqlite3_changes(db_);
}

void Database::interrupt()
{
    sqlite3_interrupt(db_);
}

int Database::userVersion()
{
    return static_cast<int>(queryInt64("PRAGMA user_version").value_or(0));
}

void Database::writeBlob(const char* table, const char* column, std::int64_t rowid, ByteSpan bytes)
{
    sqlite3_blob* blob = nullptr;
    const std::string what = std::string("cannot write ") + table + "." + column + " of row " + std::to_string(rowid);
    check(sqlite3_blob_open(db_, "main", table, column, rowid, 1, &blob), what);
    const int written = bytes.size > static_cast<std::size_t>(std::numeric_limits<int>::max())
                            ? SQLITE_TOOBIG
                            : sqlite3_blob_write(blob, bytes.data, static_cast<int>(bytes.size), 0);
    const int closed = sqlite3_blob_close(blob);
    check(written, what);
    check(closed, what);
}

void Database::setBusyTimeout(int milliseconds)
{
    busyTimeoutMs_ = milliseconds;
    sqlite3_busy_timeout(db_, milliseconds);
}

bool Database::trySetJournalMode(const std::string& mode)
{
    const int waited = busyTimeoutMs_;
    sqlite3_busy_timeout(db_, 0);
    std::string now;
    try {
        Statement pragma = prepare("PRAGMA journal_mode=" + mode);
        if (pragma.step())
            now = pragma.text(0);
    } catch (const DatabaseError&) {  // busy: another connection has the file open
    }
    sqlite3_busy_timeout(db_, waited);
    return now == mode;
}

void Database::setUserVersion(int version)
{
    // PRAGMA takes no bound parameters; the value is an integer we format ourselves.
    exec("PRAGMA user_version=" + std::to_string(version));
}

void Database::check(int code, std::string_view what) const
{
    if (!isSuccess(code))
        throw makeError(*this, code, what);
}

// --- SqlTransaction ----------------------------------------------------------

SqlTransaction::SqlTransaction(Database& db) : db_(db)
{
    // IMMEDIATE takes the write lock now, so a busy database fails here (after the busy
    // timeout) rather than halfway through the work.
    db_.exec("BEGIN IMMEDIATE");
}

SqlTransaction::~SqlTransaction()
{
    // SQLite already rolled back on some errors (interrupt, full disk); a second ROLLBACK
    // would only fail. Destructors must not throw, so the result is ignored.
    if (!done_ && !sqlite3_get_autocommit(db_.handle()))
        sqlite3_exec(db_.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void SqlTransaction::commit()
{
    db_.exec("COMMIT");
    done_ = true;
}

ForeignKeysOff::ForeignKeysOff(Database& db) : db_(db) { db_.exec("PRAGMA foreign_keys=OFF"); }

ForeignKeysOff::~ForeignKeysOff()
{
    try {
        db_.exec("PRAGMA foreign_keys=ON");
    } catch (...) {  // a destructor must not throw; the next statement reports a dead connection
    }
}

std::string sqliteVersion() { return sqlite3_libversion(); }

}  // namespace zkdv
