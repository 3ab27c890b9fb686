"""A module's buffers kept as they were around a run that is not a training step: the trace or
export of the step runs it once, and the first transaction's eager forward of a loss written
as code runs it before the step is sealed (BatchNorm's running statistics move in both)."""

import contextlib
from typing import Dict, Iterator

import torch


def saved(module: torch.nn.Module) -> Dict[str, torch.Tensor]:
    return {name: buffer.detach().clone() for name, buffer in module.named_buffers()}


def restore(module: torch.nn.Module, values: Dict[str, torch.Tensor]) -> None:
    with torch.no_grad():
        for name, buffer in module.named_buffers():
            if name in values:
                buffer.copy_(values[name])


@contextlib.contextmanager
def kept(module: torch.nn.Module) -> Iterator[None]:
    values = saved(module)
    try:
        yield
    finally:
        restore(module, values)
