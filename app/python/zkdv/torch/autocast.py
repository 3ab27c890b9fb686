"""The autocast in force, as a value, and entering one again (docs/python.md, "Mixed precision").

A captured step (an export, a trace) is taken with autocast off, so that the program holds the
operators as written; the recorder and the replay run it under each transaction's recorded
autocast. A loss written as code is sealed in proof.backward(), where the loop has usually left
its autocast block: the sealed step's first run enters the forward's autocast again."""

import contextlib
from typing import Optional, Tuple

import torch

DEVICES = ("cpu", "cuda")


def _enabled(device: str) -> bool:
    try:
        return torch.is_autocast_enabled(device)
    except TypeError:  # torch < 2.4
        return torch.is_autocast_cpu_enabled() if device == "cpu" else torch.is_autocast_enabled()


def _dtype(device: str) -> torch.dtype:
    getter = getattr(torch, "get_autocast_dtype", None)
    if getter is not None:
        return getter(device)
    return torch.get_autocast_cpu_dtype() if device == "cpu" else torch.get_autocast_gpu_dtype()


def state() -> Tuple[Tuple[str, torch.dtype], ...]:
    """The autocast in force now: ((device type, dtype), ...) for each device type where it is on."""
    return tuple((device, _dtype(device)) for device in DEVICES if _enabled(device))


def entered(wanted: Tuple[Tuple[str, torch.dtype], ...]) -> contextlib.ExitStack:
    """Exactly `wanted` in force (every other device type's autocast off) until the stack closes."""
    stack = contextlib.ExitStack()
    on = dict(wanted)
    for device in DEVICES:
        dtype: Optional[torch.dtype] = on.get(device)
        if dtype is not None:
            stack.enter_context(torch.autocast(device, dtype=dtype))
        elif _enabled(device):
            stack.enter_context(torch.autocast(device, enabled=False))
    return stack


def off() -> contextlib.ExitStack:
    return entered(())
