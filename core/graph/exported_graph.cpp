#include "zkdv/graph/exported_graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "zkdv/graph/operator_allow_list.h"
#include "zkdv/graph/random_operation.h"
#include "zkdv/tape/shape_text.h"
#include "zkdv/util/json_text.h"

namespace zkdv {

namespace {

using Json = nlohmann::json;

constexpr int kFormatVersion = 1;
constexpr std::uint64_t kMaxListElements = std::uint64_t(1) << 32;  // an int list read as a shape

[[noreturn]] void fail(const std::string& where, const std::string& what)
{
    throw ExportedGraphError("exported graph: " + where + ": " + what);
}

const Json& member(const Json& object, const char* name, const std::string& where)
{
    auto it = object.find(name);
    if (it == object.end())
        fail(where, std::string("missing member \"") + name + "\"");
    return *it;
}

std::int64_t integer(const Json& value, const std::string& where)
{
    if (value.is_number_unsigned() && value.get<std::uint64_t>() <= std::uint64_t(std::numeric_limits<std::int64_t>::max()))
        return value.get<std::int64_t>();
    if (value.is_number_integer() && !value.is_number_unsigned())
        return value.get<std::int64_t>();
    fail(where, "expected an integer, found " + std::string(value.type_name()));
}

std::size_t index(const Json& value, std::size_t bound, const std::string& where)
{
    const std::int64_t i = integer(value, where);
    if (i < 0 || static_cast<std::uint64_t>(i) >= bound)
        fail(where, "index " + std::to_string(i) + " out of range (" + std::to_string(bound) + " available)");
    return static_cast<std::size_t>(i);
}

const std::string& text(const Json& value, const std::string& where, std::size_t maxLength = 256)
{
    if (!value.is_string())
        fail(where, "expected a string, found " + std::string(value.type_name()));
    const std::string& s = value.get_ref<const std::string&>();
    if (s.size() > maxLength)
        fail(where, "string of " + std::to_string(s.size()) + " bytes, more than " + std::to_string(maxLength));
    return s;
}

DType dtype(const Json& value, const std::string& where)
{
    auto found = dtypeFromName(text(value, where));
    if (!found)
        fail(where, "unknown dtype \"" + value.get<std::string>() + "\"");
    return *found;
}

// What a reference may point at while node `nodes` is read: inputs, and nodes before it.
struct Scope {
    std::size_t inputs;
    std::size_t nodes;
};

GraphValue value(const Json& json, const Scope& scope, const std::string& where, int depth = 0)
{
    GraphValue v;
    if (json.is_null())
        return v;
    if (!json.is_object() || json.size() < 1 || json.size() > 2)
        fail(where, "a value is null or an object with one member saying its kind");
    if (depth > 4)
        fail(where, "lists nest more than 4 deep");
    const std::string& kind = json.begin().key();
    const Json& body = json.begin().value();
    if (json.size() == 2 && !(json.contains("node") && json.contains("output")))
        fail(where, "a value has one member, except a node reference with its \"output\"");
    if (json.contains("node")) {
        v.kind = GraphValue::Kind::Node;
        v.index = index(json["node"], scope.nodes, where + ".node");
        if (json.contains("output"))
            v.output = index(json["output"], kMaxNodeOutputs, where + ".output");
    } else if (kind == "input") {
        v.kind = GraphValue::Kind::Input;
        v.index = index(body, scope.inputs, where + ".input");
    } else if (kind == "int") {
        v.kind = GraphValue::Kind::Int;
        v.integer = integer(body, where + ".int");
    } else if (kind == "float") {
        v.kind = GraphValue::Kind::Float;
        if (body.is_number())
            v.real = body.get<double>();
        else if (body == "inf")
            v.real = std::numeric_limits<double>::infinity();
        else if (body == "-inf")
            v.real = -std::numeric_limits<double>::infinity();
        else if (body == "nan")
            v.real = std::numeric_limits<double>::quiet_NaN();
        else
            fail(where + ".float", "expected a number or \"inf\", \"-inf\", \"nan\"");
    } else if (kind == "bool") {
        if (!body.is_boolean())
            fail(where + ".bool", "expected true or false");
        v.kind = GraphValue::Kind::Bool;
        v.boolean = body.get<bool>();
    } else if (kind == "str") {
        v.kind = GraphValue::Kind::String;
        v.text = text(body, where + ".str");
    } else if (kind == "dtype") {
        v.kind = GraphValue::Kind::ScalarType;
        v.dtype = dtype(body, where + ".dtype");
    } else if (kind == "device") {
        v.kind = GraphValue::Kind::Device;
        v.text = text(body, where + ".device", 32);
    } else if (kind == "layout" || kind == "memory_format") {
        v.kind = kind == "layout" ? GraphValue::Kind::Layout : GraphValue::Kind::MemoryFormat;
        v.integer = integer(body, where + "." + kind);
        if (v.integer < 0 || v.integer > 16)
            fail(where + "." + kind, "value " + std::to_string(v.integer) + " out of range");
    } else if (kind == "list") {
        if (!body.is_array())
            fail(where + ".list", "expected an array");
        if (body.size() > kMaxListItems)
            fail(where + ".list", std::to_string(body.size()) + " items, more than " + std::to_string(kMaxListItems));
        v.kind = GraphValue::Kind::List;
        std::uint64_t product = 1;
        bool ints = !body.empty();
        for (std::size_t i = 0; i < body.size(); ++i) {
            v.items.push_back(value(body[i], scope, where + ".list[" + std::to_string(i) + "]", depth + 1));
            const GraphValue& item = v.items.back();
            if (item.kind != GraphValue::Kind::Int) {
                ints = false;
                continue;
            }
            const std::uint64_t magnitude = item.integer < 0 ? 1 : static_cast<std::uint64_t>(item.integer);
            product = magnitude != 0 && product > kMaxListElements / magnitude ? kMaxListElements + 1 : product * magnitude;
        }
        // An int list may be a shape (view, expand, repeat): one whose product passes 2^32
        // elements would declare a tensor no training step holds.
        if (ints && product > kMaxListElements)
            fail(where, "an integer list whose product passes 2^32: it would declare a tensor of that many elements");
    } else {
        fail(where, "unknown value kind \"" + kind + "\"");
    }
    return v;
}

// The constant `value` of an argument, when the program fixes it.
const GraphValue* argument(const GraphNode& node, std::size_t position, const char* name)
{
    if (position < node.args.size())
        return &node.args[position];
    for (const auto& [key, v] : node.kwargs)
        if (key == name)
            return &v;
    return nullptr;
}

// How the program fixes an argument of `node`, for the random-operation rule.
FixedArgumentOf fixedArgumentsOf(const GraphNode& node)
{
    return [&node](std::size_t position, const char* name) {
        FixedArgument fixed;
        const GraphValue* v = argument(node, position, name);
        fixed.given = v != nullptr;
        if (v && v->kind == GraphValue::Kind::Float)
            fixed.number = v->real;
        if (v && v->kind == GraphValue::Kind::Int)
            fixed.number = static_cast<double>(v->integer);
        if (v && v->kind == GraphValue::Kind::Bool)
            fixed.flag = v->boolean;
        return fixed;
    };
}

// The tensor an operator takes first (views and in-place forms return it), by position or by
// the name torch's schemas give it.
const GraphValue* firstArgument(const GraphNode& node)
{
    if (!node.args.empty())
        return &node.args.front();
    for (const auto& [key, v] : node.kwargs)
        if (key == "self" || key == "input")
            return &v;
    return nullptr;
}

// What no operator may write into, and a value may be or view: a parameter, a batch input, or
// a constant (a number the program fixes where a tensor is taken: the interpreter makes it
// once, so a write into it would carry state from one step to the next).
struct Protected {
    enum class Kind { Nothing, Input, Constant };
    Kind kind = Kind::Nothing;
    std::size_t input = 0;
};

// Refuses every in-place write whose target is, or may alias, a protected value: aliases are
// followed through every operator the allow-list says may return an argument or a view of it.
void checkWrites(const ExportedGraph& graph)
{
    std::vector<Protected> aliased(graph.nodes.size());  // per node: what its results may alias
    auto protectedOf = [&](const GraphValue& v, bool topLevel, auto& self) -> Protected {
        switch (v.kind) {
        case GraphValue::Kind::Input:
            if (graph.inputs[v.index].kind == GraphInput::Kind::Buffer)
                return {};
            return {Protected::Kind::Input, v.index};
        case GraphValue::Kind::Node:
            return aliased[v.index];
        case GraphValue::Kind::Int:
        case GraphValue::Kind::Float:
        case GraphValue::Kind::Bool:
            return topLevel ? Protected{Protected::Kind::Constant} : Protected{};
        case GraphValue::Kind::List:
            for (const GraphValue& item : v.items)
                if (Protected p = self(item, false, self); p.kind != Protected::Kind::Nothing)
                    return p;
            return {};
        default:
            return {};
        }
    };
    auto anyArgument = [&](const GraphNode& node) {
        for (const GraphValue& v : node.args)
            if (Protected p = protectedOf(v, true, protectedOf); p.kind != Protected::Kind::Nothing)
                return p;
        for (const auto& [key, v] : node.kwargs)
            if (Protected p = protectedOf(v, true, protectedOf); p.kind != Protected::Kind::Nothing)
                return p;
        return Protected{};
    };
    for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
        const GraphNode& node = graph.nodes[n];
        const std::optional<OperatorEffect> effect = allowedOperatorEffect(node.qualifiedName());
        if (!effect)
            continue;  // a random operator the caller refuses
        const std::string where = "node " + std::to_string(n) + " (" + node.qualifiedName() + ")";
        for (const OperatorEffect::Write& write : effect->writes) {
            const GraphValue* target = argument(node, write.position, write.name);
            if (!target)
                continue;
            const Protected p = protectedOf(*target, true, protectedOf);
            if (p.kind == Protected::Kind::Nothing)
                continue;
            std::string what = p.kind == Protected::Kind::Constant
                                   ? std::string("a constant (a number the program fixes: written, it would carry state from one step to the next)")
                                   : graph.inputs[p.input].name;
            if (target->kind == GraphValue::Kind::Node)
                what += ", through node " + std::to_string(target->index) + " (" + graph.nodes[target->index].qualifiedName() +
                        ") whose result may alias it";
            fail(where + " argument '" + write.name + "'",
                 "writes into " + what + "; a program writes only into buffers and its own values (docs/program-operators.md)");
        }
        if (effect->result == OperatorEffect::Result::MayAliasAnyArgument || (effect->result == OperatorEffect::Result::MayAliasFirst && node.args.empty()))
            aliased[n] = anyArgument(node);
        else if (effect->result == OperatorEffect::Result::MayAliasFirst)
            aliased[n] = protectedOf(node.args.front(), true, protectedOf);
    }
}

std::uint64_t timesSaturating(std::uint64_t a, std::uint64_t b)
{
    return b != 0 && a > kMaxListElements / b ? kMaxListElements + 1 : a * b;
}

}  // namespace

bool declaresSize(const GraphNode& node)
{
    const std::string_view name = node.op;
    return name == "aten::view" || name == "aten::reshape" || name == "aten::expand" || name == "aten::repeat" || name == "aten::pad" ||
           name == "aten::constant_pad_nd" || name == "aten::one_hot";
}

void checkDeclaredSize(const GraphNode& node, const std::vector<std::int64_t>* input, const std::string& where)
{
    if (node.op == "aten::arange") {
        // Its length is its end, a number the program fixes: bounded here, once.
        const GraphValue* end = argument(node, 0, "end");
        if (!end || (end->kind != GraphValue::Kind::Int && end->kind != GraphValue::Kind::Float))
            fail(where, "arange's end must be a number the program fixes");
        const long double last = end->kind == GraphValue::Kind::Int ? static_cast<long double>(end->integer) : static_cast<long double>(end->real);
        if (!std::isfinite(last) || last > static_cast<long double>(kMaxListElements))
            fail(where, "arange's end declares a tensor of more than 2^32 elements; no training step holds one");
        return;
    }
    if (!declaresSize(node))
        return;
    const GraphValue* second = argument(node, 1, node.op == "aten::repeat"              ? "repeats"
                                                 : node.op == "aten::reshape"           ? "shape"
                                                 : node.op == "aten::one_hot"           ? "num_classes"
                                                 : node.op == "aten::view" || node.op == "aten::expand" ? "size"
                                                                                                         : "pad");
    if (node.op == "aten::one_hot") {
        // num_classes -1 takes the count from the data: the size would depend on a value.
        if (!second || second->kind != GraphValue::Kind::Int || second->integer < 0)
            fail(where, "one_hot's num_classes must be fixed to a non-negative number (-1 would size the result by the data)");
    }
    if (!input)
        return;  // resolved where the input's shape is known: at parse for a graph input, at run time otherwise
    std::vector<std::int64_t> sizes;
    if (second && second->kind == GraphValue::Kind::List) {
        for (const GraphValue& item : second->items) {
            if (item.kind != GraphValue::Kind::Int)
                return;  // not sizes: the schema check refuses it
            sizes.push_back(item.integer);
        }
    } else if (second && second->kind == GraphValue::Kind::Int) {
        sizes.push_back(second->integer);
    } else {
        return;
    }
    std::uint64_t elements = 1;
    for (std::int64_t extent : *input)
        elements = timesSaturating(elements, static_cast<std::uint64_t>(std::max<std::int64_t>(extent, 0)));
    const std::uint64_t inputElements = elements;
    std::uint64_t count = 1;
    if (node.op == "aten::view" || node.op == "aten::reshape") {
        // A -1 takes what the other sizes leave of the input: the result has the input's elements.
        bool inferred = false;
        for (std::int64_t s : sizes) {
            inferred = inferred || s < 0;
            count = timesSaturating(count, static_cast<std::uint64_t>(std::max<std::int64_t>(s, 0)));
        }
        if (inferred)
            count = inputElements;
    } else if (node.op == "aten::expand") {
        // A -1 keeps the input's extent in that dimension (sizes align from the right).
        const std::size_t lead = sizes.size() >= input->size() ? sizes.size() - input->size() : 0;
        for (std::size_t i = 0; i < sizes.size(); ++i) {
            std::int64_t extent = sizes[i];
            if (extent == -1) {
                if (i < lead || sizes.size() < input->size())
                    fail(where, "expand's size -1 in a dimension its input does not have");
                extent = (*input)[i - lead];
            }
            if (extent < 0)
                fail(where, "expand's size " + std::to_string(extent) + " is negative");
            count = timesSaturating(count, static_cast<std::uint64_t>(extent));
        }
    } else if (node.op == "aten::repeat") {
        count = inputElements;
        for (std::int64_t r : sizes) {
            if (r < 0)
                fail(where, "repeat's count " + std::to_string(r) + " is negative");
            count = timesSaturating(count, static_cast<std::uint64_t>(r));
        }
    } else if (node.op == "aten::one_hot") {
        count = timesSaturating(inputElements, static_cast<std::uint64_t>(sizes.front()));
    } else {  // pad, constant_pad_nd: pairs of (before, after) from the last dimension on
        std::vector<std::int64_t> padded = *input;
        for (std::size_t k = 0; 2 * k + 1 < sizes.size() && k < padded.size(); ++k) {
            std::int64_t& extent = padded[padded.size() - 1 - k];
            const long double grown = static_cast<long double>(extent) + sizes[2 * k] + sizes[2 * k + 1];
            extent = grown < 0 ? 0 : grown > static_cast<long double>(kMaxListElements) ? static_cast<std::int64_t>(kMaxListElements) + 1
                                                                                         : static_cast<std::int64_t>(grown);
        }
        for (std::int64_t extent : padded)
            count = timesSaturating(count, static_cast<std::uint64_t>(extent));
    }
    if (count > kMaxListElements)
        fail(where, "its sizes, resolved against its input's shape " + shapeText(*input) +
                        ", declare a tensor of more than 2^32 elements; no training step holds one");
}

std::string capturedTensorStateRefusal(const std::string& names)
{
    return "attested Torch code captured unprepared tensor state (" + names +
           "); register it as a parameter or buffer of the sealed program, or pass it in the batch";
}

ExportedGraph ExportedGraph::parse(ByteSpan bytes)
{
    Json json;
    try {
        json = parseUntrustedJson(std::string_view(reinterpret_cast<const char*>(bytes.data), bytes.size), "exported graph");
    } catch (const FormatError& error) {
        throw ExportedGraphError(std::string("the program is not an exported graph: ") + error.what());
    }
    if (!json.is_object())
        fail("document", "expected a JSON object");
    if (text(member(json, "format", "document"), "format") != "zkdv-exported-graph")
        fail("format", "expected \"zkdv-exported-graph\"");
    const std::int64_t version = integer(member(json, "version", "document"), "version");
    if (version != kFormatVersion)
        fail("version", "version " + std::to_string(version) + " is not one this reader knows (1)");
    ExportedGraph graph;
    if (json.contains("torch"))
        graph.torchVersion = text(json["torch"], "torch", 64);

    const Json& inputs = member(json, "inputs", "document");
    if (!inputs.is_array() || inputs.size() > kMaxGraphInputs)
        fail("inputs", "expected an array of at most " + std::to_string(kMaxGraphInputs) + " inputs");
    std::set<std::string> names;
    std::string captured;  // the "constant" inputs: refused together, once every input is read
    std::size_t batch = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::string where = "inputs[" + std::to_string(i) + "]";
        const Json& in = inputs[i];
        if (!in.is_object())
            fail(where, "expected an object");
        GraphInput input;
        const std::string& kind = text(member(in, "kind", where), where + ".kind");
        if (kind == "constant") {
            // A tensor the export lifted out of the step (torch.export's CONSTANT_TENSOR): the
            // writer declares it so that this reader, the one check, refuses it by name.
            captured += (captured.empty() ? "" : ", ") + text(member(in, "name", where), where + ".name", 1024);
            continue;
        }
        if (kind == "parameter" || kind == "buffer") {
            input.kind = kind == "parameter" ? GraphInput::Kind::Parameter : GraphInput::Kind::Buffer;
            input.name = text(member(in, "name", where), where + ".name", 1024);
            if (input.name.empty())
                fail(where + ".name", "empty name");
        } else if (kind == "batch") {
            input.kind = GraphInput::Kind::Batch;
            input.batchIndex = index(member(in, "index", where), kMaxGraphInputs, where + ".index");
            if (input.batchIndex != batch)
                fail(where + ".index", "batch inputs are numbered 0, 1, … in order; expected " + std::to_string(batch));
            ++batch;
            input.name = "batch/" + std::to_string(input.batchIndex);
        } else {
            fail(where + ".kind", "expected \"parameter\", \"buffer\", \"batch\" or \"constant\", found \"" + kind + "\"");
        }
        if (!names.insert(input.name).second)
            fail(where + ".name", "\"" + input.name + "\" is declared twice");
        input.dtype = dtype(member(in, "dtype", where), where + ".dtype");
        const Json& shape = member(in, "shape", where);
        if (!shape.is_array() || shape.size() > 16)
            fail(where + ".shape", "expected an array of at most 16 dimensions");
        TensorSpec spec{input.name, {}, input.dtype};
        std::uint64_t elements = 1;
        for (std::size_t d = 0; d < shape.size(); ++d) {
            const std::int64_t extent = integer(shape[d], where + ".shape[" + std::to_string(d) + "]");
            if (extent < 0)
                fail(where + ".shape", "negative extent");
            input.shape.push_back(extent);
            elements = extent != 0 && elements > kMaxDeclaredBytes / static_cast<std::uint64_t>(extent) ? kMaxDeclaredBytes + 1
                                                                                                      : elements * static_cast<std::uint64_t>(extent);
        }
        if (elements > kMaxDeclaredBytes / dtypeSize(input.dtype))
            fail(where + ".shape", "declares a tensor of more than " + std::to_string(kMaxDeclaredBytes >> 30) + " GiB");
        graph.inputs.push_back(std::move(input));
    }
    if (!captured.empty())
        throw ExportedGraphError(capturedTensorStateRefusal(captured));

    const Json& nodes = member(json, "nodes", "document");
    if (!nodes.is_array() || nodes.size() > kMaxGraphNodes)
        fail("nodes", "expected an array of at most " + std::to_string(kMaxGraphNodes) + " nodes");
    std::set<std::string> random;
    for (std::size_t n = 0; n < nodes.size(); ++n) {
        const Json& in = nodes[n];
        std::string where = "node " + std::to_string(n);
        if (!in.is_object())
            fail(where, "expected an object");
        GraphNode node;
        node.op = text(member(in, "op", where), where + ".op", 128);
        if (in.contains("overload"))
            node.overload = text(in["overload"], where + ".overload", 64);
        if (node.overload == "default")
            node.overload.clear();
        where += " (" + node.qualifiedName() + ")";
        const Scope scope{graph.inputs.size(), n};
        if (in.contains("args")) {
            const Json& args = in["args"];
            if (!args.is_array() || args.size() > kMaxNodeArguments)
                fail(where + ".args", "expected an array of at most " + std::to_string(kMaxNodeArguments) + " arguments");
            for (std::size_t a = 0; a < args.size(); ++a)
                node.args.push_back(value(args[a], scope, where + ".args[" + std::to_string(a) + "]"));
        }
        if (in.contains("kwargs")) {
            const Json& kwargs = in["kwargs"];
            if (!kwargs.is_object() || kwargs.size() > kMaxNodeArguments)
                fail(where + ".kwargs", "expected an object of at most " + std::to_string(kMaxNodeArguments) + " arguments");
            for (const auto& [key, v] : kwargs.items()) {
                if (key.empty() || key.size() > 64)
                    fail(where + ".kwargs", "an argument name of " + std::to_string(key.size()) + " bytes");
                node.kwargs.emplace_back(key, value(v, scope, where + ".kwargs." + key));
            }
        }
        const std::string qualified = node.qualifiedName();
        if (drawsRandomNumbers({qualified}) && !drawsNothing(qualified, fixedArgumentsOf(node)))
            random.insert(node.op);
        else if (!isAllowedOperator(qualified))
            fail(where, "operator " + qualified +
                            " is not on the allow-list of ATen compute operators (docs/program-operators.md); the program is refused before anything runs");
        const GraphValue* first = firstArgument(node);
        if (first && first->kind == GraphValue::Kind::Input)
            checkDeclaredSize(node, &graph.inputs[first->index].shape, where);
        else
            checkDeclaredSize(node, nullptr, where);
        graph.nodes.push_back(std::move(node));
    }
    if (!random.empty())
        throw ExportedGraphError(randomOperationsRefusal(random));
    checkWrites(graph);

    const Scope all{graph.inputs.size(), graph.nodes.size()};
    graph.loss = value(member(json, "loss", "document"), all, "loss");
    if (graph.loss.kind != GraphValue::Kind::Node && graph.loss.kind != GraphValue::Kind::Input)
        fail("loss", "expected a reference to a node's output");
    if (json.contains("outputs")) {
        const Json& outputs = json["outputs"];
        if (!outputs.is_array() || outputs.size() > kMaxNodeOutputs)
            fail("outputs", "expected an array of at most " + std::to_string(kMaxNodeOutputs) + " references");
        for (std::size_t i = 0; i < outputs.size(); ++i)
            graph.outputs.push_back(value(outputs[i], all, "outputs[" + std::to_string(i) + "]"));
    }
    if (json.contains("buffer_updates")) {
        const Json& updates = json["buffer_updates"];
        if (!updates.is_array() || updates.size() > kMaxGraphInputs)
            fail("buffer_updates", "expected an array");
        for (std::size_t i = 0; i < updates.size(); ++i) {
            const std::string where = "buffer_updates[" + std::to_string(i) + "]";
            if (!updates[i].is_object())
                fail(where, "expected an object");
            BufferUpdate update;
            update.buffer = text(member(updates[i], "buffer", where), where + ".buffer", 1024);
            bool known = false;
            for (const GraphInput& input : graph.inputs)
                known = known || (input.kind == GraphInput::Kind::Buffer && input.name == update.buffer);
            if (!known)
                fail(where + ".buffer", "\"" + update.buffer + "\" is not a buffer input of the graph");
            update.value = value(member(updates[i], "value", where), all, where + ".value");
            graph.bufferUpdates.push_back(std::move(update));
        }
    }
    return graph;
}

void ExportedGraph::checkLayout(const std::vector<TensorSpec>& parameters, const std::vector<TensorSpec>& buffers) const
{
    auto check = [&](const std::vector<TensorSpec>& specs, GraphInput::Kind kind, const char* what) {
        std::map<std::string, const GraphInput*> declared;
        for (const GraphInput& input : inputs)
            if (input.kind == kind)
                declared.emplace(input.name, &input);
        for (const TensorSpec& spec : specs) {
            auto it = declared.find(spec.name);
            if (it == declared.end())
                throw ExportedGraphError(std::string("exported graph: the signature has no ") + what + " input '" + spec.name +
                                         "' of the tape's model layout");
            if (it->second->shape != spec.shape || it->second->dtype != spec.dtype)
                throw ExportedGraphError(std::string("exported graph: the signature's ") + what + " '" + spec.name + "' is " +
                                         std::string(dtypeName(it->second->dtype)) + " " + Json(it->second->shape).dump() + ", the layout's " +
                                         std::string(dtypeName(spec.dtype)) + " " + Json(spec.shape).dump());
            declared.erase(it);
        }
        if (!declared.empty())
            throw ExportedGraphError(std::string("exported graph: the signature takes a ") + what + " the tape's layout does not list: '" +
                                     declared.begin()->first + "'");
    };
    check(parameters, GraphInput::Kind::Parameter, "parameter");
    check(buffers, GraphInput::Kind::Buffer, "buffer");
}

std::size_t ExportedGraph::batchSize() const
{
    std::size_t n = 0;
    for (const GraphInput& input : inputs)
        n += input.kind == GraphInput::Kind::Batch;
    return n;
}

}  // namespace zkdv
