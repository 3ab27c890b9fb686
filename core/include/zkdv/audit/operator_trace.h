#pragma once
// One transaction's operators as a replay worker ran them, each with its outputs: what
// `zkdv-audit explain` compares between two differently configured replays of the same
// transaction (docs/replay.md, "Explain (where a divergence starts)"). Audit-side: no torch.

#include <cstdint>
#include <string>
#include <vector>

#include "zkdv/tape/dtype.h"
#include "zkdv/util/sha256.h"

namespace zkdv {

// One output of a traced operator (a tensor, or a number as a tensor of shape []).
struct TracedOutput {
    enum class Kind : std::uint8_t {
        Values,   // `bytes` holds the values (contiguous little-endian), `digest` their SHA-256
        Digest,   // past the value cap: only `digest`
        Opaque,   // not comparable (uninitialised memory, a layout or dtype a tape cannot hold)
    };
    Kind kind = Kind::Opaque;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
    std::vector<std::uint8_t> bytes;
    Digest digest{};
};

// One operator call: a dispatched ATen operator, an autograd node of the backward, or a
// stage value the replay itself takes between the step's parts (the loss, each parameter's
// gradient and update).
struct TracedOperator {
    std::string name;        // "aten::convolution_backward", "ConvolutionBackward0", "gradient conv1.weight"
    std::string phase;       // "forward", "backward", "optimizer", "stage"
    std::uint32_t depth = 0; // 0: called by the step itself; d: inside the operator of depth d - 1 before it
    std::uint64_t finished = 0;  // the order in which the calls returned (execution order)
    std::vector<TracedOutput> outputs;
};

// At most this many bytes of output values travel back with one traced transaction (the
// protocol's frames are bounded); later outputs come back as digests only.
constexpr std::uint64_t kMaxTracedValueBytes = 96u << 20;
// At most this many operator calls are traced; the rest of the step is not.
constexpr std::size_t kMaxTracedOperators = 200000;

}  // namespace zkdv
