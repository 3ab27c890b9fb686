#pragma once
// The digest of rows as SQLite stores them, the one encoding every seal of the case signs
// (run seals, zkdv/store/run_seal.h; tape seals, zkdv/store/tape_seal.h): each value is a
// type byte and then the value (integers and the bits of a real as 8 little-endian bytes,
// text and blobs with their length first), each query's rows behind a section letter and
// followed by their count, so that two different sets of rows never hash alike.

#include <cstdint>

namespace zkdv {

class Database;
class Sha256;

void putU64(Sha256& hash, std::uint64_t value);

// Hashes every row `sql` returns with `key` bound to ?1, behind the section letter `section`.
void hashRows(Sha256& hash, Database& db, const char* sql, std::int64_t key, char section);

}  // namespace zkdv
