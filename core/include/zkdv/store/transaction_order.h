#pragma once
// The ascending order of a tape's transactions by loss, learning rate or update norm, as a
// case stores it (table transaction_orders, docs/case-schema.md): NULL first, then by
// value, ties by transaction index — SQLite's `ORDER BY column, idx`. Ingest gathers the
// values while the rows stream in and stores each order once; the workstation's table
// reads it back instead of sorting a million rows.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "zkdv/util/byte_span.h"
#include "zkdv/util/huge_page_allocator.h"

namespace zkdv {

// The columns a case keeps a stored order of, by their names in the transactions table.
inline constexpr const char* kOrderedTransactionColumns[] = {"loss", "lr", "update_norm"};

// One column's values, gathered in any order, then sorted. NaN stands for NULL (SQLite
// stores a NaN bound as a double as NULL).
class TransactionOrder {
public:
    void reserve(std::size_t count);
    void add(std::uint64_t index, double value);
    std::size_t size() const { return keyed_.size(); }

    // Sorts what was added; the order is then ascending().
    void sort();
    std::vector<std::int64_t> ascending() const;
    // Little-endian uint32 transaction indexes; nullopt when an index does not fit in 32
    // bits (such a tape keeps no stored order).
    std::optional<HugePageVector<std::uint8_t>> encode() const;

private:
    // The value mapped to an unsigned key whose integer order is the SQL order (NULL below
    // everything, -0.0 equal to 0.0), then the index: sorting compares two integers.
    struct Keyed {
        std::uint64_t key;
        std::uint64_t index;
    };
    HugePageVector<Keyed> keyed_;
};

// The order a stored blob holds, or nullopt when the blob cannot be one of
// `transactionCount` entries.
std::optional<std::vector<std::int64_t>> decodeTransactionOrder(ByteSpan blob, std::uint64_t transactionCount);

}  // namespace zkdv
