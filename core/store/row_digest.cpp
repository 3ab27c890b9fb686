#include "row_digest.h"

#include <sqlite3.h>

#include <cstring>
#include <string_view>

#include "zkdv/store/database.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

void putU64(Sha256& hash, std::uint64_t value)
{
    std::uint8_t bytes[8];
    for (int i = 0; i < 8; ++i)
        bytes[i] = static_cast<std::uint8_t>(value >> (8 * i));
    hash.update(ByteSpan(bytes, sizeof bytes));
}

void hashRows(Sha256& hash, Database& db, const char* sql, std::int64_t key, char section)
{
    Statement rows = db.prepare(sql);
    rows.bind(1, key);
    const int columns = rows.columnCount();
    std::uint64_t count = 0;
    hash.update(std::string_view(&section, 1));
    while (rows.step()) {
        ++count;
        for (int c = 0; c < columns; ++c) {
            sqlite3_stmt* stmt = rows.handle();
            const int type = sqlite3_column_type(stmt, c);
            const char tag = static_cast<char>('0' + type);
            hash.update(std::string_view(&tag, 1));
            switch (type) {
            case SQLITE_INTEGER: putU64(hash, static_cast<std::uint64_t>(sqlite3_column_int64(stmt, c))); break;
            case SQLITE_FLOAT: {
                const double value = sqlite3_column_double(stmt, c);
                std::uint64_t bits = 0;
                std::memcpy(&bits, &value, sizeof bits);
                putU64(hash, bits);
                break;
            }
            case SQLITE_TEXT:
            case SQLITE_BLOB: {
                const void* data = type == SQLITE_TEXT ? static_cast<const void*>(sqlite3_column_text(stmt, c)) : sqlite3_column_blob(stmt, c);
                const auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt, c));
                putU64(hash, size);
                hash.update(ByteSpan(data, size));
                break;
            }
            default: break;  // NULL: the tag says it all
            }
        }
    }
    putU64(hash, count);
}

}  // namespace zkdv
