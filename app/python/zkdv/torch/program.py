"""The sealed program generated from the user's model and loss module (docs/python.md)."""

import contextlib
import io
import warnings
from typing import Callable, ContextManager, List, Optional

import torch
from torch import Tensor

from zkdv.torch import autocast, buffers


class _Step(torch.nn.Module):
    """What every form of the step holds: the model, the loss module, and the model output of
    the last call in `output`, so that proof.forward() can return it; the loss the tape
    records, and that backward() differentiates, is the one the program computed."""

    output: Optional[Tensor]

    def __init__(self, model: torch.nn.Module, loss: torch.nn.Module) -> None:
        super().__init__()
        self.model = model
        self.loss = loss
        self.output = None


class TrainingStep(_Step):
    """training_step(batch) = loss(model(batch[0]), batch[1]): what the auditor replays."""

    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        output = self.model(batch[0])
        self.output = output
        return self.loss(output, batch[1])


# The same step for a batch (inputs, targets, extra, ...) whose extra tensors are further
# model inputs: randomness drawn outside the step (a dropout mask, noise), for one. TorchScript
# compiles each call's arity, hence one class per count.
class TrainingStepWith1(_Step):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        output = self.model(batch[0], batch[2])
        self.output = output
        return self.loss(output, batch[1])


class TrainingStepWith2(_Step):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        output = self.model(batch[0], batch[2], batch[3])
        self.output = output
        return self.loss(output, batch[1])


class TrainingStepWith3(_Step):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        output = self.model(batch[0], batch[2], batch[3], batch[4])
        self.output = output
        return self.loss(output, batch[1])


class TracedStep(torch.nn.Module):
    """training_step(batch) for a loss written as code (loss_code.py): `step` is the model call
    and the captured code, traced; it returns [loss, *the model output's tensors], kept in
    `output` for proof.forward() to return."""

    output: Optional[List[Tensor]]

    def __init__(self, traced: torch.jit.ScriptModule) -> None:
        super().__init__()
        self.step = traced
        self.output = None

    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        results = self.step(batch)
        self.output = results
        return results[0]


STEPS = (TrainingStep, TrainingStepWith1, TrainingStepWith2, TrainingStepWith3)
MAX_EXTRA_INPUTS = len(STEPS) - 1


def seal(model: torch.nn.Module, loss: torch.nn.Module, extra_inputs: int = 0) -> torch.jit.ScriptModule:
    """Scripts the step, the model taking `extra_inputs` tensors after the inputs. Scripting
    shares the model's parameter and buffer tensors, so the recorder's updates are the user's
    model's updates."""

    try:
        with warnings.catch_warnings():
            # torch 2.x deprecates scripting in favour of torch.export; the tape's program kind
            # is TorchScript on both lanes until the export-based kind exists (docs/python.md).
            warnings.filterwarnings("ignore", message=r".*torch\.jit\.script. is deprecated", category=FutureWarning)
            return torch.jit.script(STEPS[extra_inputs](model, loss))
    except Exception as error:  # TorchScript's own error names the line it cannot compile
        raise RuntimeError(
            "ZKDV could not seal the training step: the model and loss must be TorchScript-"
            "compatible (torch.jit.script) for this frontend; TorchScript said:\n" + str(error)
        ) from error


def seal_traced(step: torch.nn.Module, batch: List[Tensor], expected: List[Tensor],
                forward_autocast: Callable[[], ContextManager] = contextlib.nullcontext) -> torch.jit.ScriptModule:
    """Traces `step` (forward(batch: List[Tensor]) -> [loss, *outputs]) on the first micro-batch
    and scripts the TracedStep around it. The trace records the operators the model and the
    captured code ran for this batch: what the model's Python decided (a branch, a shape) is
    fixed as it was, as in an exported graph, and a tensor made there is a constant, which the
    program check refuses. The model's own tensors are shared, as with scripting. `expected` is
    what the loop's own code computed on that batch ([loss, *output tensors]), under the autocast
    `forward_autocast()` enters (the forward's)."""

    try:
        with buffers.kept(step), autocast.off(), warnings.catch_warnings():
            # The tracer warns of every Python value it fixes; the loss check of every later
            # transaction is what catches one that would differ (docs/python.md).
            warnings.simplefilter("ignore")
            traced = torch.jit.trace(step, (list(batch),), check_trace=False)
            scripted = torch.jit.script(TracedStep(traced))
    except Exception as error:
        raise RuntimeError("ZKDV could not trace the training step with torch.jit.trace: " + str(error)) from error
    _require_same_once_saved(scripted, batch, expected, forward_autocast)
    return scripted


def _require_same_once_saved(scripted: torch.jit.ScriptModule, batch: List[Tensor], expected: List[Tensor],
                             forward_autocast: Callable[[], ContextManager]) -> None:
    """The auditor runs the program as saved and loaded. A trace records a Python number used
    with a tensor (`1e-3 * l2`) as a 0-dim tensor constant that, in memory, promotes like the
    number but, once saved, like a float64 tensor: the saved step would compute another dtype
    than the loop's code and the recorder, and an honest tape would replay diverged. So a saved
    and loaded copy runs the first micro-batch (as the replay runs programs, without the graph
    executor's optimisations, core/program/sealed_program.cpp), and the step is refused unless
    it computes what the loop's code computed, bit for bit. (The program itself is not run
    here: a run before the recorder prepares it would leave it holding its output.)"""

    saved = io.BytesIO()
    torch.jit.save(scripted, saved)
    saved.seek(0)
    loaded = torch.jit.load(saved)
    with torch.no_grad(), torch.jit.optimized_execution(False), forward_autocast():
        there = [loaded.training_step(list(batch))] + list(loaded.output[1:])
    for index, (a, b) in enumerate(zip(expected, there)):
        if a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.detach(), b):
            continue
        what = "the loss" if index == 0 else "output tensor %d" % (index - 1)
        if a.dtype != b.dtype:
            why = ("computes %s %s (a Python number the code multiplies or adds to a 0-dim tensor becomes a float64 constant "
                   "once a trace is saved)" % (_dtype(b), list(b.shape)))
        else:
            why = "computes other values (the trace fixed something the loop's code computes otherwise)"
        raise RuntimeError(
            "ZKDV cannot seal this loss written as code as TorchScript: the loop's code computed %s as %s %s, but the traced "
            "program, as the auditor loads it, %s; seal the step with torch.export (ZKDVConfig(program=\"exported-graph\"), "
            "torch 2.x), or prepare a loss module" % (what, _dtype(a), list(a.shape), why)
        )


def _dtype(tensor: Tensor) -> str:
    return str(tensor.dtype).replace("torch.", "")
