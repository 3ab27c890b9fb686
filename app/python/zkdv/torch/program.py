"""The sealed program generated from the user's model and loss module (docs/python.md)."""

import warnings
from typing import List, Optional

import torch
from torch import Tensor


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
