"""Losses written as code (docs/python.md, "Losses written as code"): with no loss module
prepared, the step the auditor replays is the model call as proof.forward() made it followed by
whatever the loop computed from its output until proof.backward(), captured in the first
transaction and sealed with the model.

The capture watches the code run (a TorchFunctionMode: every torch function and tensor method
the loop calls, with its arguments) from the moment proof.forward() returns to proof.backward().
The loss is what backward received; the sealed tail is the calls it depends on, replayed in the
order they ran: exported with torch.export (exported-graph programs) or traced with
torch.jit.trace into the TorchScript program (program.py). Every tensor they read must be the forward's output, the transaction's batch,
or a parameter or buffer of the prepared model: anything else is state the tape does not hold,
refused naming the line that used it. What the capture cannot see (a Python number read from a
tensor, a branch on a value) it bakes in as it was at the first transaction; that is why every
later transaction checks the loop's own loss against the sealed step's, bit for bit, and
refuses a step whose code computed another one (proof.py, backward).
"""

import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch
from torch.utils import _pytree as pytree

try:
    from torch.overrides import TorchFunctionMode
except ImportError:  # torch 1.13 has it; older ones cannot capture code
    TorchFunctionMode = object

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_TORCH = os.path.dirname(os.path.abspath(torch.__file__)) + os.sep

# How a loop scales a loss before its backward (loss / accumulation_steps): the sealed loss is
# the operand, and the tape records the scale beside it, as for a prepared loss module.
_SCALING = frozenset(
    f for f in (torch.Tensor.__truediv__, torch.Tensor.div, torch.div, torch.Tensor.__mul__, torch.Tensor.__rmul__,
                torch.Tensor.mul, torch.mul) if f is not None
)


def user_line(skip: int = 1) -> str:
    """file:line of the innermost caller that is the user's code, not zkdv's or torch's."""

    frame = sys._getframe(skip)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if not name.startswith((_PACKAGE, _TORCH)) and not frame.f_code.co_filename.startswith("<frozen"):
            return "%s:%d" % (frame.f_code.co_filename, frame.f_lineno)
        frame = frame.f_back
    return "an unknown line"


# Where the model's output holds a tensor (the sealed step returns it); the other leaves are
# plain values, returned as they were at the first transaction.
TENSOR = object()
_PLAIN = (type(None), bool, int, float, str)


class Ref:
    """Where a tensor of the step comes from: ("batch", i), ("output", i), ("state", name),
    ("value", (call, leaf)) of an earlier call, or ("unknown", None)."""

    __slots__ = ("kind", "key")

    def __init__(self, kind: str, key: Any) -> None:
        self.kind = kind
        self.key = key

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, Ref) and (self.kind, self.key) == (other.kind, other.key)

    def __hash__(self) -> int:
        return hash((self.kind, self.key))

    def __repr__(self) -> str:
        return "Ref(%s, %r)" % (self.kind, self.key)


class CallForm:
    """A call's (args, kwargs) with each tensor named by its place in the transaction's batch;
    every other argument is a constant of the sealed step."""

    def __init__(self, args: Sequence[Any], kwargs: Dict[str, Any], batch: Sequence[torch.Tensor]) -> None:
        leaves, self.spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
        places = {id(tensor): i for i, tensor in enumerate(batch)}
        self.entries: List[Any] = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                if id(leaf) not in places:
                    raise RuntimeError(
                        "proof.forward(model, ...) takes tensors of the transaction's batch (the very tensors passed as "
                        "batch=...), and other arguments that are constants: a tensor of shape %s is not one of them "
                        "(%s); put it in the batch" % (list(leaf.shape), user_line())
                    )
                self.entries.append(Ref("batch", places[id(leaf)]))
            else:
                self.entries.append(leaf)

    def same_as(self, other: "CallForm") -> bool:
        if self.spec != other.spec or len(self.entries) != len(other.entries):
            return False
        for a, b in zip(self.entries, other.entries):
            if isinstance(a, Ref) or isinstance(b, Ref):
                if a != b:
                    return False
            elif type(a) is not type(b) or not _equal_constants(a, b):
                return False
        return True

    def rebuild(self, batch: Sequence[Any]) -> Tuple[tuple, dict]:
        leaves = [batch[e.key] if isinstance(e, Ref) else e for e in self.entries]
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return args, kwargs


def _equal_constants(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return a is b


class _Call:
    __slots__ = ("func", "spec", "entries", "line")

    def __init__(self, func: Any, spec: Any, entries: List[Any], line: str) -> None:
        self.func = func
        self.spec = spec
        self.entries = entries
        self.line = line


class Tail:
    """The sealed calls from the model's output to the loss, in the order they ran."""

    def __init__(self, calls: List[Tuple[int, _Call]], loss: Ref) -> None:
        self.calls = calls
        self.loss = loss

    def lines(self) -> List[str]:
        seen: List[str] = []
        for _, call in self.calls:
            if call.line not in seen:
                seen.append(call.line)
        return seen


class _Watch(TorchFunctionMode):
    def __init__(self, capture: "Capture") -> None:
        super().__init__()
        self.capture = capture

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        result = func(*args, **kwargs)
        self.capture._record(func, args, kwargs, result)
        return result


class Capture:
    """The loop's code from proof.forward()'s return to proof.backward(), as it runs."""

    def __init__(self, model: torch.nn.Module, batch: Sequence[torch.Tensor], output: Any) -> None:
        if TorchFunctionMode is object:
            raise RuntimeError("this torch has no torch.overrides.TorchFunctionMode: prepare the loss module with the model")
        self._refs: Dict[int, Ref] = {}
        # Every tensor seen stays alive (bound ones in _values), so that no id() is reused meanwhile.
        self._values: Dict[Ref, torch.Tensor] = {}
        self._alive: List[Any] = []
        self._state: Dict[int, str] = {}
        for name, tensor in model.named_parameters():
            self._state.setdefault(id(tensor), name)
        for name, tensor in model.named_buffers():
            self._state.setdefault(id(tensor), name)
        for i, tensor in enumerate(batch):
            self._bind(tensor, Ref("batch", i))
        leaves, self.output_spec = pytree.tree_flatten(output)
        for leaf in leaves:
            if not isinstance(leaf, (torch.Tensor,) + _PLAIN):
                raise RuntimeError(
                    "the prepared model returned a %s (%s), which the sealed step cannot return: it returns tensors and plain "
                    "numbers, and the auditor replays nothing else%s" % (
                        type(leaf).__name__, user_line(),
                        "; training needs no key/value cache: call the model with use_cache=False (or set model.config.use_cache = False)"
                        if "cache" in type(leaf).__name__.lower() else "")
                )
        self.output_constants = [TENSOR if isinstance(leaf, torch.Tensor) else leaf for leaf in leaves]
        self.output_tensors = [leaf for leaf in leaves if isinstance(leaf, torch.Tensor)]
        tensors = 0
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                if id(leaf) not in self._refs:
                    self._bind(leaf, Ref("output", tensors))
                tensors += 1
        if tensors == 0:
            raise RuntimeError("the prepared model returned no tensor (%s): nothing to compute a loss from" % user_line())
        self._calls: List[_Call] = []
        self._watch = _Watch(self)
        self._watching = False

    def start(self) -> None:
        self._watch.__enter__()
        self._watching = True

    def stop(self) -> None:
        if self._watching:
            self._watching = False
            self._watch.__exit__(None, None, None)

    def _bind(self, tensor: torch.Tensor, ref: Ref) -> None:
        self._refs[id(tensor)] = ref
        self._values[ref] = tensor

    def value(self, ref: Ref) -> torch.Tensor:
        """The tensor the loop's code computed for `ref` (a batch tensor, an output, a result)."""
        return self._values[ref]

    def _record(self, func: Any, args: tuple, kwargs: dict, result: Any) -> None:
        leaves, spec = pytree.tree_flatten((tuple(args), dict(kwargs)))
        entries: List[Any] = []
        for leaf in leaves:
            if isinstance(leaf, torch.Tensor):
                ref = self._refs.get(id(leaf))
                if ref is None:
                    name = self._state.get(id(leaf))
                    ref = Ref("state", name) if name is not None else Ref("unknown", tuple(leaf.shape))
                    self._alive.append(leaf)
                entries.append(ref)
            else:
                entries.append(leaf)
        index = len(self._calls)
        self._calls.append(_Call(func, spec, entries, user_line()))
        for j, leaf in enumerate(pytree.tree_flatten(result)[0]):
            if isinstance(leaf, torch.Tensor):
                self._bind(leaf, Ref("value", (index, j)))

    def tail(self, loss: Any) -> Tail:
        """The calls `loss` depends on, after stripping a division or multiplication by a number."""

        if not isinstance(loss, torch.Tensor):
            raise RuntimeError("proof.backward() takes the loss tensor, not %r" % (type(loss).__name__,))
        root = self._refs.get(id(loss))
        if root is None or root.kind in ("unknown", "state"):
            raise RuntimeError(
                "proof.backward() received a loss that was not computed from proof.forward()'s output in this transaction "
                "(%s): the sealed step is the model call and the code from its output to the loss" % user_line()
            )
        if root.kind == "batch":
            raise RuntimeError("proof.backward() received a tensor of the batch, not a loss computed from the model's output")
        root = self._unscaled(root)
        needed = set()
        pending = [root]
        while pending:
            ref = pending.pop()
            if ref.kind != "value":
                continue
            index = ref.key[0]
            if index in needed:
                continue
            needed.add(index)
            call = self._calls[index]
            for entry in call.entries:
                if isinstance(entry, Ref):
                    if entry.kind == "unknown":
                        raise RuntimeError(
                            "the loss code at %s uses a tensor of shape %s that is neither proof.forward()'s output, a tensor of "
                            "the transaction's batch, nor a parameter or buffer of the prepared model: the tape would not hold "
                            "it, so the auditor could not replay the loss; pass it in the batch or register it as a buffer of "
                            "the model" % (call.line, list(entry.key))
                        )
                    pending.append(entry)
        return Tail([(i, self._calls[i]) for i in sorted(needed)], root)

    def _unscaled(self, root: Ref) -> Ref:
        if root.kind != "value":
            return root
        call = self._calls[root.key[0]]
        if call.func not in _SCALING or len(call.entries) != 2:
            return root
        tensors = [e for e in call.entries if isinstance(e, Ref)]
        numbers = [e for e in call.entries if isinstance(e, (int, float)) and not isinstance(e, bool)]
        if len(tensors) == 1 and len(numbers) == 1 and tensors[0].kind in ("value", "output"):
            return tensors[0]
        return root

    def output(self, tensors: Sequence[torch.Tensor]) -> Any:
        return rebuild_output(tensors, self.output_constants, self.output_spec)


def rebuild_output(tensors: Sequence[torch.Tensor], constants: Sequence[Any], spec: Any) -> Any:
    """The model's output, as the model returned it, from the tensors the sealed step computed."""

    it = iter(tensors)
    leaves = [next(it) if constant is TENSOR else constant for constant in constants]
    return pytree.tree_unflatten(leaves, spec)


class LossCodeStep(torch.nn.Module):
    """forward(*batch) = (loss, *the model output's tensors): the model called as proof.forward()
    called it, then the captured code; exported with torch.export like ExportedStep."""

    def __init__(self, model: torch.nn.Module, call: CallForm, tail: Tail) -> None:
        super().__init__()
        self.model = model
        self._call = call
        self._tail = tail

    def forward(self, *batch: torch.Tensor):
        args, kwargs = self._call.rebuild(batch)
        output = self.model(*args, **kwargs)
        outputs = [leaf for leaf in pytree.tree_flatten(output)[0] if isinstance(leaf, torch.Tensor)]
        values: Dict[Any, Any] = {}

        def value(entry: Any) -> Any:
            if not isinstance(entry, Ref):
                return entry
            if entry.kind == "batch":
                return batch[entry.key]
            if entry.kind == "output":
                return outputs[entry.key]
            if entry.kind == "state":
                # Through the module, so that torch.export sees the parameter it lifts, not a constant.
                try:
                    return self.model.get_parameter(entry.key)
                except AttributeError:
                    return self.model.get_buffer(entry.key)
            return values[entry.key]

        for index, call in self._tail.calls:
            args, kwargs = pytree.tree_unflatten([value(e) for e in call.entries], call.spec)
            result = call.func(*args, **kwargs)
            for j, leaf in enumerate(pytree.tree_flatten(result)[0]):
                values[(index, j)] = leaf
        return (value(self._tail.loss), *outputs)


class ListedLossCodeStep(LossCodeStep):
    """forward(batch) = [loss, *outputs]: the form torch.jit.trace records for a TorchScript
    program, whose training_step takes the batch as one List[Tensor] (program.py, TracedStep)."""

    def forward(self, batch: List[torch.Tensor]):  # type: ignore[override]
        return list(super().forward(*batch))
