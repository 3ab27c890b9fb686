#include "zkdv/store/transaction_order.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "zkdv/util/little_endian.h"

namespace zkdv {

namespace {

std::uint64_t sortKey(double value)
{
    if (std::isnan(value))
        return 0;  // NULL: before every number, -inf included (its key is 0x000FFFFFFFFFFFFF)
    if (value == 0.0)
        value = 0.0;  // -0.0 compares equal to 0.0 in SQL: same key, so the index decides
    std::uint64_t bits;
    std::memcpy(&bits, &value, sizeof bits);
    constexpr std::uint64_t sign = std::uint64_t(1) << 63;
    return (bits & sign) ? ~bits : (bits | sign);
}

}  // namespace

void TransactionOrder::reserve(std::size_t count) { keyed_.reserve(count); }

void TransactionOrder::add(std::uint64_t index, double value) { keyed_.push_back({sortKey(value), index}); }

void TransactionOrder::sort()
{
    std::sort(keyed_.begin(), keyed_.end(),
              [](const Keyed& a, const Keyed& b) { return a.key < b.key || (a.key == b.key && a.index < b.index); });
}

std::vector<std::int64_t> TransactionOrder::ascending() const
{
    std::vector<std::int64_t> order;
    order.reserve(keyed_.size());
    for (const Keyed& entry : keyed_)
        order.push_back(static_cast<std::int64_t>(entry.index));
    return order;
}

std::optional<std::string> TransactionOrder::encode() const
{
    std::string blob(keyed_.size() * 4, '\0');
    auto* out = reinterpret_cast<std::uint8_t*>(blob.data());
    for (const Keyed& entry : keyed_) {
        if (entry.index > std::numeric_limits<std::uint32_t>::max())
            return std::nullopt;
        writeLittleEndian<std::uint32_t>(out, static_cast<std::uint32_t>(entry.index));
        out += 4;
    }
    return blob;
}

std::optional<std::vector<std::int64_t>> decodeTransactionOrder(ByteSpan blob, std::uint64_t transactionCount)
{
    if (blob.size != transactionCount * 4)
        return std::nullopt;
    std::vector<std::int64_t> order(static_cast<std::size_t>(transactionCount));
    for (std::size_t i = 0; i < order.size(); ++i)
        order[i] = readLittleEndian<std::uint32_t>(blob.data + 4 * i);
    return order;
}

}  // namespace zkdv
