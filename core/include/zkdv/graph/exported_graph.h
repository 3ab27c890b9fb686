#pragma once
// The exported-graph program (docs/tape-format.md section 4.2): a training step captured with
// torch.export, written as plain JSON (no pickle, no native code), read here with bounds and
// checked against the operator allow-list and the model layout before anything runs.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "zkdv/tape/dtype.h"
#include "zkdv/tape/root_record.h"
#include "zkdv/util/byte_span.h"
#include "zkdv/util/error.h"

namespace zkdv {

// A program that is not a well-formed exported graph, calls an operator off the allow-list,
// draws random numbers, writes where it may not, or does not fit the tape's layout; the message names the node, the
// operator or the field.
class ExportedGraphError : public Error {
public:
    using Error::Error;
};

// The one refusal of a step that captured a tensor outside the prepared parameters and
// buffers (state no snapshot holds), for both program kinds: a TorchScript module holding it
// (program/held_state.cpp) and an exported graph declaring it as a "constant" input.
// `names` lists where the tensors were found.
std::string capturedTensorStateRefusal(const std::string& names);

// The value of the program kind in the root record.
inline constexpr const char* kExportedGraphKind = "exported-graph";

// One argument of a node: a constant, or a reference to a graph input or a node's output.
struct GraphValue {
    enum class Kind { None, Bool, Int, Float, String, List, Input, Node, ScalarType, Device, Layout, MemoryFormat };
    Kind kind = Kind::None;
    bool boolean = false;
    std::int64_t integer = 0;              // Int; Layout and MemoryFormat as torch numbers them
    double real = 0;                       // Float
    std::string text;                      // String, Device
    DType dtype = DType::F32;              // ScalarType
    std::vector<GraphValue> items;         // List
    std::size_t index = 0;                 // Input, Node: which one
    std::optional<std::size_t> output;     // Node: which of its outputs (absent: its only value)
};

struct GraphInput {
    enum class Kind { Parameter, Buffer, Batch };
    Kind kind = Kind::Batch;
    std::string name;        // the layout's name (parameters, buffers); "batch/<i>" for the batch
    std::size_t batchIndex = 0;
    DType dtype = DType::F32;
    std::vector<std::int64_t> shape;
};

struct GraphNode {
    std::string op;          // "aten::linear"
    std::string overload;    // "" for the default overload, else e.g. "Tensor"
    std::vector<GraphValue> args;
    std::vector<std::pair<std::string, GraphValue>> kwargs;
    // "aten::linear", "aten::add.Tensor": how the allow-list names it.
    std::string qualifiedName() const { return overload.empty() ? op : op + "." + overload; }
};

// A buffer the step assigns functionally: after the step it holds `value`.
struct BufferUpdate {
    std::string buffer;
    GraphValue value;
};

struct ExportedGraph {
    std::string torchVersion;            // the torch that exported it (informative)
    std::vector<GraphInput> inputs;
    std::vector<GraphNode> nodes;
    GraphValue loss;                     // a scalar tensor
    std::vector<GraphValue> outputs;     // further user outputs (the model's output, for the frontend)
    std::vector<BufferUpdate> bufferUpdates;

    // Reads and checks the program bytes: the one check of an exported graph, at sealing and
    // at replay load. Throws ExportedGraphError naming the node or field at fault for anything
    // malformed, oversized or dangling, for operators off the allow-list, random ones (the
    // seed's message), and in-place writes into a parameter, a batch input or a constant, or
    // into anything that may alias one, before any tensor exists.
    static ExportedGraph parse(ByteSpan bytes);

    // Throws ExportedGraphError unless the graph's parameter and buffer inputs are exactly the
    // layout's, with its shapes and dtypes.
    void checkLayout(const std::vector<TensorSpec>& parameters, const std::vector<TensorSpec>& buffers) const;

    std::size_t batchSize() const;  // how many batch tensors the step takes
};

// Whether `node` sizes its result by an integer argument (view, reshape, expand, repeat, pad,
// constant_pad_nd, one_hot), so that its result's size is known only against its input's shape.
bool declaresSize(const GraphNode& node);

// Throws ExportedGraphError naming `where` when such a call, its -1 sizes resolved against its
// first argument's shape `input`, would make a tensor of more than 2^32 elements, or when
// one_hot's class count is left to the data. The reader resolves calls on graph inputs; the
// interpreter resolves the rest against the tensors it runs (`input` null: only what needs no
// shape is checked).
void checkDeclaredSize(const GraphNode& node, const std::vector<std::int64_t>* input, const std::string& where);

// Bounds of a program a reader accepts (docs/tape-format.md section 4.2).
inline constexpr std::size_t kMaxGraphNodes = 100000;
inline constexpr std::size_t kMaxGraphInputs = 100000;
inline constexpr std::size_t kMaxNodeArguments = 64;
inline constexpr std::size_t kMaxListItems = 4096;
inline constexpr std::size_t kMaxNodeOutputs = 64;
inline constexpr std::uint64_t kMaxDeclaredBytes = std::uint64_t(1) << 34;  // 16 GiB in one tensor

}  // namespace zkdv
