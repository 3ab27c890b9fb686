#include "zkdv/tape/state_digest.h"

#include "zkdv/util/little_endian.h"

namespace zkdv {

void StateDigest::add(std::string_view name, DType dtype, const std::vector<std::int64_t>& shape, ByteSpan data)
{
    static const std::uint8_t zero = 0;
    hasher_.update(name);
    hasher_.update(ByteSpan(&zero, 1));
    hasher_.update(dtypeName(dtype));
    hasher_.update(ByteSpan(&zero, 1));
    std::vector<std::uint8_t> dims(4 + 8 * shape.size() + 8);
    writeLittleEndian<std::uint32_t>(dims.data(), static_cast<std::uint32_t>(shape.size()));
    for (std::size_t i = 0; i < shape.size(); ++i)
        writeLittleEndian<std::int64_t>(dims.data() + 4 + 8 * i, shape[i]);
    writeLittleEndian<std::uint64_t>(dims.data() + 4 + 8 * shape.size(), data.size);
    hasher_.update(ByteSpan(dims));
    hasher_.update(data);
}

}  // namespace zkdv
