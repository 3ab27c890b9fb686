#include "zkdv/graph/exported_graph.h"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "zkdv/graph/operator_allow_list.h"
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

bool isZero(const GraphValue* v)
{
    return v && ((v->kind == GraphValue::Kind::Float && v->real == 0.0) || (v->kind == GraphValue::Kind::Int && v->integer == 0));
}

bool isFalse(const GraphValue* v) { return v && v->kind == GraphValue::Kind::Bool && !v->boolean; }

// A dropout with p fixed at 0 or train fixed false, and an attention whose dropout_p is
// absent (0 by default) or fixed at 0, return without touching the generator.
bool drawsNothing(const GraphNode& node)
{
    if (node.op == "aten::dropout" || node.op == "aten::feature_dropout")
        return isZero(argument(node, 1, "p")) || isFalse(argument(node, 2, "train"));
    if (node.op == "aten::scaled_dot_product_attention") {
        const GraphValue* p = argument(node, 4, "dropout_p");
        return !p || isZero(p);
    }
    return false;
}

}  // namespace

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
    std::size_t batch = 0;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const std::string where = "inputs[" + std::to_string(i) + "]";
        const Json& in = inputs[i];
        if (!in.is_object())
            fail(where, "expected an object");
        GraphInput input;
        const std::string& kind = text(member(in, "kind", where), where + ".kind");
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
            fail(where + ".kind", "expected \"parameter\", \"buffer\" or \"batch\", found \"" + kind + "\"");
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
        if (isRandomOperator(qualified) && !drawsNothing(node))
            random.insert(node.op);
        else if (!isAllowedOperator(qualified))
            fail(where, "operator " + qualified +
                            " is not on the allow-list of ATen compute operators (docs/program-operators.md); the program is refused before anything runs");
        graph.nodes.push_back(std::move(node));
    }
    if (!random.empty()) {
        std::string list;
        for (const std::string& op : random)
            list += (list.empty() ? "" : ", ") + op;
        throw ExportedGraphError("attested Torch code contains random operations (" + list +
                                 "); generate randomness outside the transition and include it in the prepared transaction batch");
    }

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
