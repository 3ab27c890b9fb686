#pragma once
// The case file's SQLite schema: its version and the forward migrations that reach it.

#include <cstdint>

#include "zkdv/util/error.h"

namespace zkdv {

// A case at an older schema version opened read-only: it must be opened for writing once so
// upgrade() can migrate it. Nothing was written.
class SchemaUpgradeNeeded : public Error {
public:
    using Error::Error;
};

// A case whose schema objects (tables, indexes, triggers, views) are not exactly those this
// build creates for its schema version: it may carry SQL that would run inside ZKDV (a
// trigger, a view standing in for a table), so it is not opened. Nothing was written.
class UnexpectedCaseSchema : public Error {
public:
    using Error::Error;
};

class Database;

// The case file's schema: its version and the forward migrations that reach it.
// docs/case-schema.md describes every table and the versioning policy.
class CaseSchema {
public:
    // PRAGMA application_id of every ZKDV case: 'ZKDV' in ASCII.
    static constexpr std::int32_t kApplicationId = 0x5A4B4456;

    static int latestVersion();
    // Brings a case to latestVersion() inside one transaction. Throws zkdv::Error with a
    // clear message when the file's PRAGMA user_version is newer than latestVersion(),
    // or when the file is not a ZKDV case (an SQLite file with tables but user_version 0 and
    // no ZKDV application id); upgrade() writes nothing to such files.
    // A case already at latestVersion() needs no write, so read-only connections may call this;
    // on an older case they get SchemaUpgradeNeeded.
    // Before anything is written, the file's schema objects must be exactly what the
    // migrations create at its version (requireExpectedSchema); UnexpectedCaseSchema otherwise.
    static void upgrade(Database& db);
    // The same, stopping at `version` (≤ latestVersion()): a case as the build of that schema
    // version left it, for tests of the migrations and of the schema check.
    static void upgradeTo(Database& db, int version);

    // Throws UnexpectedCaseSchema naming the first object (trigger, view, table, index) of
    // the file's sqlite_master that the migrations up to `version` do not create, create
    // differently, or that is missing. Definitions are compared as SQL tokens: whitespace,
    // comments, identifier quoting and keyword case do not count.
    static void requireExpectedSchema(Database& db, int version);
};

}  // namespace zkdv
