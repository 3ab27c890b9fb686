"""A prepared torch.optim.lr_scheduler scheduler as the tape's root describes it (tape format
1.6, section 3.3; docs/schedules.md): the kinds whose step rule the auditor's schedule
contracts reproduce, with their constructor arguments and base rates."""

from typing import Any, Optional

import torch

_lr_scheduler = torch.optim.lr_scheduler

# Kind -> the scheduler attributes that hold its constructor arguments, by argument name.
_ARGUMENTS = {
    "StepLR": ("step_size", "gamma"),
    "MultiStepLR": ("milestones", "gamma"),
    "ExponentialLR": ("gamma",),
    "ConstantLR": ("factor", "total_iters"),
    "LinearLR": ("start_factor", "end_factor", "total_iters"),
    "PolynomialLR": ("total_iters", "power"),
    "CosineAnnealingLR": ("T_max", "eta_min"),
    "CosineAnnealingWarmRestarts": ("T_0", "T_mult", "eta_min"),
}


def _value(scheduler, name):
    value = getattr(scheduler, name)
    if name == "milestones":
        # torch keeps a Counter; a milestone listed twice decays twice.
        return sorted(value.elements())
    if isinstance(value, torch.Tensor) or not isinstance(value, (int, float)):
        raise RuntimeError(
            "%s's %s is %r; the tape describes a scheduler by numbers, so prepare one built from plain numbers"
            % (type(scheduler).__name__, name, value)
        )
    return value


def describe(scheduler: Any) -> Optional[dict]:
    """The root's description of `scheduler`, or None when it is of no kind the auditor can
    recompute (LambdaLR, ReduceLROnPlateau, a subclass, …): its rates are then recorded as they
    are."""

    kind = type(scheduler).__name__
    if kind not in _ARGUMENTS or type(scheduler) is not getattr(_lr_scheduler, kind, None):
        return None
    if epoch(scheduler) < 0:
        raise RuntimeError("the prepared %s has not taken its first step (last_epoch %d)" % (kind, scheduler.last_epoch))
    base = []
    for rate in scheduler.base_lrs:
        if isinstance(rate, torch.Tensor) or not isinstance(rate, (int, float)):
            raise RuntimeError("the prepared %s's base learning rate is %r; the tape records rates as numbers" % (kind, rate))
        base.append(rate)
    return {"kind": kind, "arguments": {name: _value(scheduler, name) for name in _ARGUMENTS[kind]}, "base": {"lr": base}}


def epoch(scheduler: Any) -> int:
    """The scheduler's step count since construction (torch's last_epoch)."""

    value = scheduler.last_epoch
    if not isinstance(value, int):
        raise RuntimeError("the prepared %s's epoch is %r, not a step count: step it with scheduler.step()" % (type(scheduler).__name__, value))
    return value
