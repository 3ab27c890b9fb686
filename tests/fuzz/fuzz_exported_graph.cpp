// Fuzz target for the exported-graph program reader (docs/tape-format.md section 4.2): any
// bytes may be refused with an ExportedGraphError, nothing else may escape. A graph that reads
// must check against its own signature as a layout. See docs/fuzzing.md.

#include <cstddef>
#include <cstdint>

#include "zkdv/graph/exported_graph.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    try {
        const zkdv::ExportedGraph graph = zkdv::ExportedGraph::parse(zkdv::ByteSpan(data, size));
        std::vector<zkdv::TensorSpec> parameters, buffers;
        for (const zkdv::GraphInput& input : graph.inputs)
            if (input.kind != zkdv::GraphInput::Kind::Batch)
                (input.kind == zkdv::GraphInput::Kind::Parameter ? parameters : buffers).push_back({input.name, input.shape, input.dtype});
        graph.checkLayout(parameters, buffers);  // its own signature always fits
    } catch (const zkdv::ExportedGraphError&) {
    }
    return 0;
}
