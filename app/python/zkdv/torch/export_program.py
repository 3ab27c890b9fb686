"""The exported-graph program (docs/tape-format.md section 4.2): the training step captured with
torch.export and written as plain JSON, without pickle and without native code.

The graph is torch.export's training IR: the ATen operators eager code calls (aten::linear,
aten::conv2d, aten::batch_norm, ...), not a decomposition of them, so the C++ interpreter that
replays it through libtorch's dispatcher computes what eager training and the TorchScript
program compute, and autograd differentiates it the same way (docs/program-operators.md).
The C++ reader checks everything this writer assumes; nothing here is trusted by the auditor.
"""

import json
import math
import operator
from typing import Any, Dict, List, Sequence, Tuple

import torch

from zkdv.torch import autocast, buffers

_DTYPES = {
    torch.float64: "F64",
    torch.float32: "F32",
    torch.float16: "F16",
    torch.bfloat16: "BF16",
    torch.int64: "I64",
    torch.int32: "I32",
    torch.int16: "I16",
    torch.int8: "I8",
    torch.uint8: "U8",
    torch.bool: "BOOL",
}
# c10's numbering of the layouts and memory formats a program may name.
_LAYOUTS = {torch.strided: 0}
_MEMORY_FORMATS = {torch.contiguous_format: 0, torch.preserve_format: 1, torch.channels_last: 2, torch.channels_last_3d: 3}


class ExportedStep(torch.nn.Module):
    """forward(inputs, targets, *extra) = (loss(model(inputs, *extra), targets), model output)."""

    def __init__(self, model: torch.nn.Module, loss: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.loss = loss

    def forward(self, *batch: torch.Tensor):
        output = self.model(batch[0], *batch[2:])
        return self.loss(output, batch[1]), output


def available() -> bool:
    return hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2


def export_module(step: torch.nn.Module, batch: Sequence[torch.Tensor]) -> Tuple[bytes, list, list]:
    """The program's bytes and the (name, tensor) pairs of the parameters and buffers it trains,
    in the graph's order, for a step module whose forward(*batch) returns (loss, *outputs): the
    model's own tensors, so the recorder's updates are the model's."""

    if not available():
        raise RuntimeError(
            "the exported-graph program kind needs torch 2.x with torch.export (this is torch %s); seal the step as "
            "TorchScript (ZKDVConfig(program=\"torchscript\")) on this torch" % torch.__version__
        )
    # torch.export runs the step once to trace it: keep BatchNorm's running statistics (and
    # anything else the step updates) as they were, so the recorded first step starts there.
    try:
        # Without autocast (autocast.py): the graph holds the operators as written (spec 5.5).
        with buffers.kept(step), autocast.off():
            exported = torch.export.export(step, tuple(batch), strict=False)
    except Exception as error:
        raise RuntimeError("ZKDV could not export the training step with torch.export: " + str(error)) from error
    tensors = dict(step.named_parameters(remove_duplicate=False))
    tensors.update(step.named_buffers(remove_duplicate=False))
    # A tied tensor (GPT-2's lm_head.weight is its token embedding) is one input of the graph,
    # under the name named_parameters() gives it, as it is one tensor the optimizer steps: two
    # inputs would be two tensors in the replay, each with half the gradient.
    first = {}
    for name, tensor in list(step.named_parameters()) + list(step.named_buffers()):
        first.setdefault(id(tensor), name)
    canonical = {name: first.get(id(tensor), name) for name, tensor in tensors.items()}
    program, parameter_names, buffer_names = _write(exported, canonical)
    return program, [(name, tensors[name]) for name in parameter_names], [(name, tensors[name]) for name in buffer_names]


def _write(exported: "torch.export.ExportedProgram", canonical: Dict[str, str]) -> Tuple[bytes, List[str], List[str]]:
    from torch.export.graph_signature import InputKind, OutputKind

    signature = exported.graph_signature
    graph = exported.graph
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    if len(placeholders) != len(signature.input_specs):
        raise RuntimeError("ZKDV cannot read this exported program: its placeholders do not match its signature")
    refs: Dict[Any, Dict[str, Any]] = {}
    inputs: List[Dict[str, Any]] = []
    parameters: List[str] = []
    buffers: List[str] = []
    batch_index = 0
    named: Dict[str, Dict[str, Any]] = {}  # a parameter's or buffer's input, by its canonical name
    for node, spec in zip(placeholders, signature.input_specs):
        if spec.kind == InputKind.CONSTANT_TENSOR:
            # A tensor the step captured outside the prepared state: declared by name, and
            # refused by the core's reader (the one check, with the TorchScript path's words).
            refs[node] = {"input": len(inputs)}
            inputs.append({"kind": "constant", "name": str(spec.target)})
            continue
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER) and canonical.get(spec.target, spec.target) in named:
            refs[node] = named[canonical[spec.target]]
            continue
        value = node.meta.get("val")
        if not isinstance(value, torch.Tensor) or value.dtype not in _DTYPES:
            raise RuntimeError("ZKDV cannot seal input %s of the exported step: not a tensor of a dtype a tape carries" % node.name)
        entry: Dict[str, Any] = {"dtype": _DTYPES[value.dtype], "shape": [int(d) for d in value.shape]}
        if spec.kind == InputKind.PARAMETER:
            name = canonical.get(spec.target, spec.target)
            entry.update(kind="parameter", name=name)
            parameters.append(name)
        elif spec.kind == InputKind.BUFFER:
            name = canonical.get(spec.target, spec.target)
            entry.update(kind="buffer", name=name)
            buffers.append(name)
        elif spec.kind == InputKind.USER_INPUT:
            entry.update(kind="batch", index=batch_index)
            batch_index += 1
        else:
            raise RuntimeError("ZKDV cannot seal an exported step that takes a %s input (%s)" % (spec.kind.name, node.name))
        refs[node] = {"input": len(inputs)}
        if spec.kind in (InputKind.PARAMETER, InputKind.BUFFER):
            named[entry["name"]] = refs[node]
        inputs.append(entry)

    nodes: List[Dict[str, Any]] = []
    output_node = None
    for node in graph.nodes:
        if node.op == "placeholder":
            continue
        if node.op == "output":
            output_node = node
            continue
        if node.op != "call_function":
            raise RuntimeError("ZKDV cannot seal an exported step holding a %s node (%s): only ATen operator calls" % (node.op, node.name))
        if node.target is operator.getitem:
            source, item = node.args
            if source not in refs or "node" not in refs[source] or not isinstance(item, int):
                raise RuntimeError("ZKDV cannot seal the exported step: %s takes an item of something not an operator's result" % node.name)
            refs[node] = {"node": refs[source]["node"], "output": item}
            continue
        schema = getattr(node.target, "_schema", None)
        if not isinstance(node.target, torch._ops.OpOverload) or schema is None:
            raise RuntimeError("ZKDV cannot seal the exported step: %s calls %r, not an ATen operator" % (node.name, node.target))
        entry = {"op": schema.name, "overload": schema.overload_name}
        if node.args:
            entry["args"] = [_value(a, refs) for a in node.args]
        if node.kwargs:
            entry["kwargs"] = {k: _value(v, refs) for k, v in node.kwargs.items()}
        refs[node] = {"node": len(nodes)}
        nodes.append(entry)

    results = list(output_node.args[0])
    loss = None
    outputs: List[Any] = []
    updates: List[Dict[str, Any]] = []
    for value, spec in zip(results, signature.output_specs):
        if spec.kind == OutputKind.USER_OUTPUT:
            if loss is None:
                loss = _value(value, refs)
            else:
                outputs.append(_value(value, refs))
        elif spec.kind == OutputKind.BUFFER_MUTATION:
            updates.append({"buffer": canonical.get(spec.target, spec.target), "value": _value(value, refs)})
        else:
            raise RuntimeError("ZKDV cannot seal an exported step with a %s output: it would write into its batch" % spec.kind.name)
    document = {
        "format": "zkdv-exported-graph",
        "version": 1,
        "torch": torch.__version__.split("+")[0],
        "inputs": inputs,
        "nodes": nodes,
        "loss": loss,
        "outputs": outputs,
        "buffer_updates": updates,
    }
    return json.dumps(document, separators=(",", ":"), allow_nan=False).encode(), parameters, buffers


def _value(value: Any, refs: Dict[Any, Dict[str, Any]]) -> Any:
    if isinstance(value, torch.fx.Node):
        if value not in refs:
            raise RuntimeError("ZKDV cannot seal the exported step: %s is used before it is computed" % value.name)
        return refs[value]
    if value is None:
        return None
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, float):
        if math.isnan(value):
            return {"float": "nan"}
        if math.isinf(value):
            return {"float": "inf" if value > 0 else "-inf"}
        return {"float": value}  # repr round-trips a double exactly
    if isinstance(value, str):
        return {"str": value}
    if isinstance(value, (list, tuple)):
        return {"list": [_value(v, refs) for v in value]}
    if isinstance(value, torch.dtype) and value in _DTYPES:
        return {"dtype": _DTYPES[value]}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.layout) and value in _LAYOUTS:
        return {"layout": _LAYOUTS[value]}
    if isinstance(value, torch.memory_format) and value in _MEMORY_FORMATS:
        return {"memory_format": _MEMORY_FORMATS[value]}
    raise RuntimeError("ZKDV cannot seal the exported step: an operator argument %r is not a constant a program can carry" % (value,))


# What a proof holds as its sealed program when the step is an exported graph (the graph
# itself lives in the recorder).
EXPORTED = object()
