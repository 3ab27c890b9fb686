#include "zkdv/program/graph_interpreter.h"

#include <map>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <nlohmann/json.hpp>
#include <torch/csrc/api/include/torch/version.h>

#include "zkdv/graph/operator_allow_list.h"
#include "zkdv/tensor/torch_build.h"
#include "zkdv/tensor/torch_tensors.h"

namespace zkdv {

std::string exportedGraphRuntimeProblem()
{
#if TORCH_VERSION_MAJOR >= 2
    return {};
#else
    return "the tape's program is an exported graph (program kind 'exported-graph'), which needs libtorch 2.x or later to run "
           "(its operators are torch.export's ATen operators of torch 2); this replay runs libtorch " +
           libtorchVersion() + "; replay it with the libtorch release that recorded it";
#endif
}

#if TORCH_VERSION_MAJOR >= 2

namespace {

// Where a node argument comes from at run time.
struct Reference {
    bool input = true;
    std::size_t index = 0;
    std::optional<std::size_t> output;
};

struct ArgumentPlan {
    // RunDevice: a device the graph names, run as the device the program runs on.
    enum class Source { Constant, Tensor, TensorList, OptionalTensorList, ReturnedList, RunDevice };
    Source source = Source::Constant;
    c10::IValue constant;
    std::vector<std::optional<Reference>> references;  // one for Tensor; the items for the lists
};

struct NodePlan {
    c10::OperatorHandle handle;
    std::vector<ArgumentPlan> arguments;
    std::size_t returns = 0;
    bool resolveSizes = false;  // its result's size is known only against its input's (exported_graph.h)
};

// What a reference yields, known from the schemas before anything runs.
enum class Yield { Tensor, TensorList, Other };

bool isTensorType(const c10::TypePtr& type) { return type->kind() == c10::TypeKind::TensorType; }

bool isTensorListType(const c10::TypePtr& type)
{
    auto list = type->cast<c10::ListType>();
    return list && isTensorType(list->getElementType());
}

}  // namespace

struct GraphInterpreter::Impl {
    ExportedGraph graph;
    std::vector<NodePlan> plans;
    std::vector<std::vector<Yield>> yields;  // per node, per output (a Tensor[] return: TensorList)
    std::vector<at::Tensor> inputs;          // parameters and buffers bound; batch slots empty
    bool bound = false;

    [[noreturn]] static void fail(const std::string& where, const std::string& what)
    {
        throw ExportedGraphError("exported graph: " + where + ": " + what);
    }

    Yield yieldOf(const GraphValue& v, const std::string& where) const
    {
        if (v.kind == GraphValue::Kind::Input)
            return Yield::Tensor;
        const std::vector<Yield>& outs = yields[v.index];
        if (!v.output) {
            if (outs.size() != 1)
                fail(where, "node " + std::to_string(v.index) + " has " + std::to_string(outs.size()) + " outputs; the reference names none");
            return outs[0];
        }
        if (outs.size() == 1 && outs[0] == Yield::TensorList)
            return Yield::Tensor;  // an item of the list (checked against its length at run time)
        if (*v.output >= outs.size())
            fail(where, "node " + std::to_string(v.index) + " has " + std::to_string(outs.size()) + " outputs, not " + std::to_string(*v.output + 1));
        return outs[*v.output];
    }

    static Reference referenceOf(const GraphValue& v)
    {
        return Reference{v.kind == GraphValue::Kind::Input, v.index, v.output};
    }

    static bool isReference(const GraphValue& v) { return v.kind == GraphValue::Kind::Input || v.kind == GraphValue::Kind::Node; }

    // A constant of the schema's type; throws naming the argument when it is not one.
    c10::IValue constantOf(const GraphValue& v, const c10::TypePtr& type, const std::string& where) const
    {
        using K = GraphValue::Kind;
        if (auto optional = type->cast<c10::OptionalType>()) {
            if (v.kind == K::None)
                return c10::IValue();
            return constantOf(v, optional->getElementType(), where);
        }
        auto expect = [&](bool ok) {
            if (!ok)
                fail(where, "expected " + type->str() + ", found a constant of another kind");
        };
        switch (type->kind()) {
        case c10::TypeKind::IntType:
        case c10::TypeKind::SymIntType:
            expect(v.kind == K::Int);
            return c10::IValue(v.integer);
        case c10::TypeKind::FloatType:
        case c10::TypeKind::SymFloatType:
            expect(v.kind == K::Float || v.kind == K::Int);
            return c10::IValue(v.kind == K::Int ? static_cast<double>(v.integer) : v.real);
        case c10::TypeKind::BoolType:
        case c10::TypeKind::SymBoolType:
            expect(v.kind == K::Bool);
            return c10::IValue(v.boolean);
        case c10::TypeKind::NumberType:  // Scalar
            expect(v.kind == K::Int || v.kind == K::Float || v.kind == K::Bool);
            return v.kind == K::Int ? c10::IValue(v.integer) : v.kind == K::Float ? c10::IValue(v.real) : c10::IValue(v.boolean);
        case c10::TypeKind::StringType:
            expect(v.kind == K::String);
            return c10::IValue(v.text);
        case c10::TypeKind::ScalarTypeType:
            expect(v.kind == K::ScalarType);
            return c10::IValue(scalarTypeOf(v.dtype));
        case c10::TypeKind::LayoutType:
            expect(v.kind == K::Layout);
            return c10::IValue(static_cast<c10::Layout>(v.integer));
        case c10::TypeKind::MemoryFormatType:
            expect(v.kind == K::MemoryFormat);
            return c10::IValue(static_cast<c10::MemoryFormat>(v.integer));
        case c10::TypeKind::DeviceObjType:
            expect(v.kind == K::Device);
            try {
                return c10::IValue(c10::Device(v.text));
            } catch (const std::exception&) {
                fail(where, "\"" + v.text + "\" is not a device");
            }
        case c10::TypeKind::ListType: {
            expect(v.kind == K::List);
            const c10::TypePtr element = type->castRaw<c10::ListType>()->getElementType();
            switch (element->kind()) {
            case c10::TypeKind::IntType:
            case c10::TypeKind::SymIntType: {
                c10::List<std::int64_t> list;
                for (const GraphValue& item : v.items)
                    list.push_back(constantOf(item, element, where).toInt());
                return c10::IValue(list);
            }
            case c10::TypeKind::FloatType: {
                c10::List<double> list;
                for (const GraphValue& item : v.items)
                    list.push_back(constantOf(item, element, where).toDouble());
                return c10::IValue(list);
            }
            case c10::TypeKind::BoolType: {
                c10::List<bool> list;
                for (const GraphValue& item : v.items)
                    list.push_back(constantOf(item, element, where).toBool());
                return c10::IValue(list);
            }
            default:
                break;
            }
            break;
        }
        default:
            break;
        }
        fail(where, "an argument of type " + type->str() + " cannot be given as a constant");
    }

    // The reader's write check (ExportedGraph::parse) knows what each operator writes and
    // aliases from the allow-list's table; this libtorch's schema must not say more, or the
    // table does not describe the operator this replay would run.
    static void checkEffectAgainstSchema(const GraphNode& node, const c10::FunctionSchema& schema, const std::string& where)
    {
        const std::optional<OperatorEffect> effect = allowedOperatorEffect(node.qualifiedName());
        if (!effect)
            fail(where, "not on the allow-list");
        const auto& arguments = schema.arguments();
        for (std::size_t a = 0; a < arguments.size(); ++a) {
            const c10::AliasInfo* info = arguments[a].alias_info();
            if (!info || !info->isWrite())
                continue;
            bool recorded = false;
            for (const OperatorEffect::Write& write : effect->writes)
                recorded = recorded || (write.position == a && arguments[a].name() == write.name);
            if (!recorded)
                fail(where, "this libtorch's schema writes its argument '" + arguments[a].name() +
                                "', which the allow-list's write table does not record; the program is refused");
        }
        if (effect->result != OperatorEffect::Result::New)
            return;
        for (const c10::Argument& r : schema.returns())
            if (r.alias_info())
                fail(where, "this libtorch's schema returns an alias of an argument, which the allow-list's table does not record; "
                            "the program is refused");
    }

    ArgumentPlan planArgument(const GraphValue& v, const c10::Argument& argument, const std::string& where) const
    {
        ArgumentPlan plan;
        c10::TypePtr type = argument.real_type();
        const bool optional = type->kind() == c10::TypeKind::OptionalType;
        if (optional)
            type = type->castRaw<c10::OptionalType>()->getElementType();
        if (isTensorType(type)) {
            if (v.kind == GraphValue::Kind::None && optional)
                return plan;
            // A number where the schema takes a tensor (`x.add_(1)` records aten::add_.Tensor
            // with 1): a wrapped-number tensor, as torch's Python binding makes, so that type
            // promotion treats it as the scalar it was.
            if (v.kind == GraphValue::Kind::Int || v.kind == GraphValue::Kind::Float || v.kind == GraphValue::Kind::Bool) {
                at::Tensor number = v.kind == GraphValue::Kind::Int     ? at::scalar_tensor(v.integer, at::kLong)
                                    : v.kind == GraphValue::Kind::Float ? at::scalar_tensor(v.real, at::kDouble)
                                                                        : at::scalar_tensor(v.boolean, at::kBool);
                number.unsafeGetTensorImpl()->set_wrapped_number(true);
                plan.constant = c10::IValue(number);
                return plan;
            }
            if (!isReference(v) || yieldOf(v, where) != Yield::Tensor)
                fail(where, "expected a tensor (a reference to an input or a node's output)");
            plan.source = ArgumentPlan::Source::Tensor;
            plan.references.push_back(referenceOf(v));
            return plan;
        }
        auto list = type->cast<c10::ListType>();
        if (list && (isTensorType(list->getElementType()) || list->getElementType()->kind() == c10::TypeKind::OptionalType)) {
            const bool optionalItems = !isTensorType(list->getElementType());
            if (optionalItems && !isTensorType(list->getElementType()->castRaw<c10::OptionalType>()->getElementType()))
                fail(where, "an argument of type " + type->str() + " is not supported");
            plan.source = optionalItems ? ArgumentPlan::Source::OptionalTensorList : ArgumentPlan::Source::TensorList;
            if (isReference(v) && !optionalItems) {
                if (yieldOf(v, where) != Yield::TensorList)
                    fail(where, "expected a list of tensors");
                plan.source = ArgumentPlan::Source::ReturnedList;  // a whole Tensor[] a node returned
                plan.references.push_back(referenceOf(v));
                return plan;
            }
            if (v.kind != GraphValue::Kind::List)
                fail(where, "expected a list of tensors");
            for (std::size_t i = 0; i < v.items.size(); ++i) {
                const GraphValue& item = v.items[i];
                if (item.kind == GraphValue::Kind::None && optionalItems) {
                    plan.references.emplace_back(std::nullopt);
                    continue;
                }
                if (!isReference(item) || yieldOf(item, where) != Yield::Tensor)
                    fail(where + "[" + std::to_string(i) + "]", "expected a tensor");
                plan.references.push_back(referenceOf(item));
            }
            return plan;
        }
        if (isReference(v))
            fail(where, "a tensor where the schema takes " + argument.type()->str());
        plan.constant = constantOf(v, argument.real_type(), where);
        // A graph never chooses where it runs (docs/program-operators.md): the device it was
        // captured on is the recorder's, and "meta" or another GPU would change what it computes.
        if (type->kind() == c10::TypeKind::DeviceObjType && v.kind == GraphValue::Kind::Device)
            plan.source = ArgumentPlan::Source::RunDevice;
        return plan;
    }

    void resolve()
    {
        const std::string problem = exportedGraphRuntimeProblem();
        if (!problem.empty())
            throw ExportedGraphError(problem);
        for (std::size_t n = 0; n < graph.nodes.size(); ++n) {
            const GraphNode& node = graph.nodes[n];
            const std::string where = "node " + std::to_string(n) + " (" + node.qualifiedName() + ")";
            auto handle = c10::Dispatcher::singleton().findSchema(c10::OperatorName(node.op, node.overload));
            if (!handle)
                fail(where, "this libtorch (" + libtorchVersion() + ") has no such operator");
            const c10::FunctionSchema& schema = handle->schema();
            if (schema.is_vararg() || schema.is_varret())
                fail(where, "operators with variable arguments are not supported");
            const auto& arguments = schema.arguments();
            if (node.args.size() > arguments.size())
                fail(where, std::to_string(node.args.size()) + " arguments given, the schema takes " + std::to_string(arguments.size()));
            std::map<std::string, const GraphValue*> kwargs;
            for (const auto& [name, v] : node.kwargs)
                kwargs[name] = &v;
            NodePlan plan{*handle, {}, schema.returns().size()};
            for (std::size_t a = 0; a < arguments.size(); ++a) {
                const c10::Argument& argument = arguments[a];
                const std::string at = where + " argument '" + argument.name() + "'";
                const GraphValue* v = nullptr;
                if (a < node.args.size()) {
                    v = &node.args[a];
                    if (kwargs.count(argument.name()))
                        fail(at, "given both by position and by name");
                } else if (auto it = kwargs.find(argument.name()); it != kwargs.end()) {
                    v = it->second;
                    kwargs.erase(it);
                }
                if (!v) {
                    if (!argument.default_value())
                        fail(at, "missing, and the schema gives it no default");
                    ArgumentPlan fixed;
                    fixed.constant = *argument.default_value();
                    plan.arguments.push_back(std::move(fixed));
                    continue;
                }
                plan.arguments.push_back(planArgument(*v, argument, at));
            }
            if (!kwargs.empty())
                fail(where, "the schema has no argument '" + kwargs.begin()->first + "'");
            checkEffectAgainstSchema(node, schema, where);
            plan.resolveSizes = declaresSize(node);
            std::vector<Yield> outs;
            for (const c10::Argument& r : schema.returns())
                outs.push_back(isTensorType(r.type()) ? Yield::Tensor : isTensorListType(r.type()) ? Yield::TensorList : Yield::Other);
            if (outs.empty())
                outs.push_back(Yield::Other);
            yields.push_back(std::move(outs));
            plans.push_back(std::move(plan));
        }
        auto tensorResult = [&](const GraphValue& v, const std::string& where) {
            if (yieldOf(v, where) != Yield::Tensor)
                fail(where, "expected a tensor");
        };
        tensorResult(graph.loss, "loss");
        for (std::size_t i = 0; i < graph.outputs.size(); ++i)
            tensorResult(graph.outputs[i], "outputs[" + std::to_string(i) + "]");
        for (std::size_t i = 0; i < graph.bufferUpdates.size(); ++i)
            tensorResult(graph.bufferUpdates[i].value, "buffer_updates[" + std::to_string(i) + "]");
    }

    // The values of one run: per node, its returns.
    using Values = std::vector<std::vector<c10::IValue>>;

    const c10::IValue& fetchValue(const Values& values, const std::vector<at::Tensor>& inputs, const Reference& r, c10::IValue& scratch) const
    {
        if (r.input) {
            scratch = c10::IValue(inputs[r.index]);
            return scratch;
        }
        const std::vector<c10::IValue>& outs = values[r.index];
        if (!r.output)
            return outs.at(0);
        if (outs.size() == 1 && outs[0].isTensorList()) {
            const c10::List<at::Tensor> list = outs[0].toTensorList();
            if (*r.output >= list.size())
                throw Error("exported graph: node " + std::to_string(r.index) + " returned " + std::to_string(list.size()) +
                            " tensors, the graph reads item " + std::to_string(*r.output));
            scratch = c10::IValue(list.get(*r.output));
            return scratch;
        }
        return outs.at(*r.output);
    }

    at::Tensor fetchTensor(const Values& values, const std::vector<at::Tensor>& inputs, const Reference& r) const
    {
        c10::IValue scratch;
        return fetchValue(values, inputs, r, scratch).toTensor();
    }

    at::Tensor tensorOf(const Values& values, const std::vector<at::Tensor>& inputs, const GraphValue& v) const
    {
        return fetchTensor(values, inputs, referenceOf(v));
    }
};

GraphInterpreter::GraphInterpreter(ExportedGraph graph) : impl_(std::make_unique<Impl>())
{
    impl_->graph = std::move(graph);
    impl_->inputs.resize(impl_->graph.inputs.size());
    impl_->resolve();
}

void GraphInterpreter::bind(const std::vector<TensorSpec>& parameterSpecs, const std::vector<at::Tensor>& parameters,
                            const std::vector<TensorSpec>& bufferSpecs, const std::vector<at::Tensor>& buffers)
{
    impl_->graph.checkLayout(parameterSpecs, bufferSpecs);
    std::map<std::string, at::Tensor> byName;
    for (std::size_t i = 0; i < parameterSpecs.size(); ++i)
        byName["p:" + parameterSpecs[i].name] = parameters.at(i);
    for (std::size_t i = 0; i < bufferSpecs.size(); ++i)
        byName["b:" + bufferSpecs[i].name] = buffers.at(i);
    for (std::size_t i = 0; i < impl_->graph.inputs.size(); ++i) {
        const GraphInput& input = impl_->graph.inputs[i];
        if (input.kind == GraphInput::Kind::Batch)
            continue;
        const at::Tensor& tensor = byName.at((input.kind == GraphInput::Kind::Parameter ? "p:" : "b:") + input.name);
        if (tensor.sizes().vec() != input.shape || dtypeOf(tensor.scalar_type()) != input.dtype)
            throw ExportedGraphError("exported graph: the tensor bound to '" + input.name + "' differs from the signature in shape or dtype");
        impl_->inputs[i] = tensor;
    }
    impl_->bound = true;
}

std::vector<at::Tensor> GraphInterpreter::run(const std::vector<at::Tensor>& batch) const
{
    const Impl& d = *impl_;
    if (!d.bound)
        throw Error("exported graph: run before its tensors were bound");
    std::vector<at::Tensor> inputs = d.inputs;
    std::size_t expected = 0;
    for (std::size_t i = 0; i < d.graph.inputs.size(); ++i) {
        const GraphInput& input = d.graph.inputs[i];
        if (input.kind != GraphInput::Kind::Batch)
            continue;
        ++expected;
        if (input.batchIndex >= batch.size())
            throw Error("the transaction's batch holds " + std::to_string(batch.size()) + " tensors, the exported graph takes " +
                        std::to_string(d.graph.batchSize()));
        const at::Tensor& tensor = batch[input.batchIndex];
        if (tensor.sizes().vec() != input.shape || dtypeOf(tensor.scalar_type()) != input.dtype)
            throw Error(input.name + " is " + std::string(dtypeName(dtypeOf(tensor.scalar_type()))) + " " + nlohmann::json(tensor.sizes().vec()).dump() +
                        "; the exported graph was captured for " + std::string(dtypeName(input.dtype)) + " " + nlohmann::json(input.shape).dump() +
                        " (every transaction's batch has the shapes of the first)");
        inputs[i] = tensor;
    }
    if (expected != batch.size())
        throw Error("the transaction's batch holds " + std::to_string(batch.size()) + " tensors, the exported graph takes " + std::to_string(expected));

    c10::Device device(c10::kCPU);
    for (const at::Tensor& input : inputs)
        if (input.defined()) {
            device = input.device();
            break;
        }
    Impl::Values values(d.plans.size());
    torch::jit::Stack stack;
    for (std::size_t n = 0; n < d.plans.size(); ++n) {
        const NodePlan& plan = d.plans[n];
        stack.clear();
        stack.reserve(plan.arguments.size());
        for (const ArgumentPlan& argument : plan.arguments) {
            switch (argument.source) {
            case ArgumentPlan::Source::Constant:
                stack.push_back(argument.constant);
                break;
            case ArgumentPlan::Source::RunDevice:
                stack.emplace_back(device);
                break;
            case ArgumentPlan::Source::ReturnedList: {
                c10::IValue scratch;
                stack.push_back(d.fetchValue(values, inputs, *argument.references[0], scratch));
                break;
            }
            case ArgumentPlan::Source::Tensor:
                stack.emplace_back(d.fetchTensor(values, inputs, *argument.references[0]));
                break;
            case ArgumentPlan::Source::TensorList: {
                c10::List<at::Tensor> list;
                list.reserve(argument.references.size());
                for (const auto& r : argument.references)
                    list.push_back(d.fetchTensor(values, inputs, *r));
                stack.emplace_back(std::move(list));
                break;
            }
            case ArgumentPlan::Source::OptionalTensorList: {
                c10::List<std::optional<at::Tensor>> list;
                for (const auto& r : argument.references)
                    list.push_back(r ? std::optional<at::Tensor>(d.fetchTensor(values, inputs, *r)) : std::nullopt);
                stack.emplace_back(std::move(list));
                break;
            }
            }
        }
        if (plan.resolveSizes && !stack.empty() && stack.front().isTensor()) {
            const std::vector<std::int64_t> input = stack.front().toTensor().sizes().vec();
            checkDeclaredSize(d.graph.nodes[n], &input, "node " + std::to_string(n) + " (" + d.graph.nodes[n].qualifiedName() + ")");
        }
        plan.handle.callBoxed(stack);
        values[n].assign(std::make_move_iterator(stack.begin()), std::make_move_iterator(stack.end()));
        if (values[n].empty())
            values[n].emplace_back();
    }

    std::vector<at::Tensor> results;
    results.push_back(d.tensorOf(values, inputs, d.graph.loss));
    if (results.front().dim() != 0)
        throw Error("the exported graph's loss has shape " + nlohmann::json(results.front().sizes().vec()).dump() + ", not a scalar");
    for (const GraphValue& output : d.graph.outputs)
        results.push_back(d.tensorOf(values, inputs, output));
    if (!d.graph.bufferUpdates.empty()) {
        at::NoGradGuard noGrad;
        for (const BufferUpdate& update : d.graph.bufferUpdates)
            for (std::size_t i = 0; i < d.graph.inputs.size(); ++i)
                if (d.graph.inputs[i].kind == GraphInput::Kind::Buffer && d.graph.inputs[i].name == update.buffer)
                    d.inputs[i].detach().copy_(d.tensorOf(values, inputs, update.value));
    }
    return results;
}

#else  // libtorch 1.x: the kind is read and verified, never run

struct GraphInterpreter::Impl {
    ExportedGraph graph;
};

GraphInterpreter::GraphInterpreter(ExportedGraph graph) : impl_(std::make_unique<Impl>())
{
    impl_->graph = std::move(graph);
    throw ExportedGraphError(exportedGraphRuntimeProblem());
}

void GraphInterpreter::bind(const std::vector<TensorSpec>&, const std::vector<at::Tensor>&, const std::vector<TensorSpec>&,
                            const std::vector<at::Tensor>&)
{
}

std::vector<at::Tensor> GraphInterpreter::run(const std::vector<at::Tensor>&) const { return {}; }

#endif

GraphInterpreter::~GraphInterpreter() = default;
GraphInterpreter::GraphInterpreter(GraphInterpreter&&) noexcept = default;

const ExportedGraph& GraphInterpreter::graph() const { return impl_->graph; }

}  // namespace zkdv
