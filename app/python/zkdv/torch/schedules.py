"""A prepared torch.optim.lr_scheduler scheduler as the tape's root describes it (tape format
1.6, section 3.3; docs/schedules.md): the kinds whose step rule the auditor's schedule
contracts reproduce, with their constructor arguments and base rates."""

import math
import weakref
from typing import Any, Optional

import torch

_lr_scheduler = torch.optim.lr_scheduler

# Kind -> the scheduler attributes that hold its constructor arguments, named as the
# constructor names them (torch keeps each under the argument's own name).
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


def _number(scheduler, what, value):
    # Python's True is the int 1 to torch's arithmetic; JSON would make it a boolean.
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    raise RuntimeError(
        "%s's %s is %r; the tape describes a scheduler by finite plain numbers, so prepare one built from them"
        % (type(scheduler).__name__, what, value)
    )


def _value(scheduler, name):
    value = getattr(scheduler, name)
    if name == "milestones":
        # torch keeps a Counter: a milestone listed twice decays twice, written out twice.
        if any(not isinstance(count, int) or count <= 0 for count in value.values()):
            raise RuntimeError("%s's milestones Counter %r holds a count that is not a positive integer" % (type(scheduler).__name__, value))
        return sorted(_number(scheduler, "milestone", milestone) for milestone in value.elements())
    return _number(scheduler, name, value)


def _check_fresh(scheduler, kind):
    # A scheduler made fresh (last_epoch=-1) and stepped with step() alone has taken one step
    # per epoch: its constructor's and one for each after. One made to resume (last_epoch >= 0)
    # or stepped with step(epoch) took its rates from elsewhere (the groups' loaded values,
    # torch's closed form), which the contract, stepping from base, does not reproduce.
    # CosineAnnealingWarmRestarts is the exception: its step() counts no _step_count, and its
    # rates follow from T_cur and T_i alone, checked below.
    if kind != "CosineAnnealingWarmRestarts" and getattr(scheduler, "_step_count", None) != scheduler.last_epoch + 1:
        raise RuntimeError(
            "the prepared %s is at last_epoch %d after %r steps: it was made to resume (last_epoch given to its "
            "constructor) or stepped with step(epoch), and the auditor recomputes only a scheduler made with "
            "last_epoch=-1 and stepped with step()" % (kind, scheduler.last_epoch, getattr(scheduler, "_step_count", None))
        )
    if kind == "CosineAnnealingWarmRestarts":
        _check_warm_restarts(scheduler, scheduler.last_epoch)


def _leaf_kind(scheduler) -> Optional[str]:
    kind = type(scheduler).__name__
    if type(scheduler) is _lr_scheduler.OneCycleLR:
        return kind  # its arguments are read by _one_cycle_arguments
    if type(scheduler) is _lr_scheduler.CyclicLR:
        return kind if _cyclic_mode(scheduler) else None
    if kind not in _ARGUMENTS or type(scheduler) is not getattr(_lr_scheduler, kind, None):
        return None
    return kind


def _one_cycle_arguments(scheduler):
    # OneCycleLR keeps what its constructor derived, not pct_start, div_factor and
    # final_div_factor: the groups' max_lr and min_lr, and each phase's last step.
    groups = scheduler.optimizer.param_groups
    strategy = getattr(scheduler, "_anneal_func_type", None)  # torch 2.x
    if strategy is None:  # torch 1.13 keeps the bound method
        strategy = {"_annealing_cos": "cos", "_annealing_linear": "linear"}.get(getattr(scheduler.anneal_func, "__name__", None))
    if strategy not in ("cos", "linear"):
        raise RuntimeError("the prepared OneCycleLR anneals with %r, neither torch's cos nor linear" % (strategy,))
    return {
        "max_lr": [_number(scheduler, "max_lr", group["max_lr"]) for group in groups],
        "min_lr": [_number(scheduler, "min_lr", group["min_lr"]) for group in groups],
        "total_steps": _number(scheduler, "total_steps", scheduler.total_steps),
        "phase_ends": [_number(scheduler, "end_step", phase["end_step"]) for phase in scheduler._schedule_phases],
        "anneal_strategy": strategy,
        # With cycle_momentum its constructor left each group's max_momentum and base_momentum,
        # between which it anneals momentum (or betas[0]) against the rate.
        "cycle_momentum": {
            "option": _momentum_option(scheduler),
            "max_momentum": [_number(scheduler, "max_momentum", group["max_momentum"]) for group in groups],
            "base_momentum": [_number(scheduler, "base_momentum", group["base_momentum"]) for group in groups],
        } if scheduler.cycle_momentum else False,
    }


def _cyclic_mode(scheduler) -> Optional[str]:
    """CyclicLR's mode, or None when a scale_fn of the user's replaces it (user code)."""

    custom = getattr(scheduler, "_scale_fn_custom", True) is not None  # torch 1.13 and 2.x keep the user's here
    expected = {"triangular": "cycle", "triangular2": "cycle", "exp_range": "iterations"}.get(scheduler.mode)
    return None if custom or scheduler.scale_mode != expected else scheduler.mode


def _cyclic_arguments(scheduler):
    # CyclicLR keeps what its constructor derived: total_size (step_size_up + step_size_down,
    # floats), step_ratio, the groups' max_lrs, and with cycle_momentum the momenta.
    return {
        "max_lr": [_number(scheduler, "max_lr", rate) for rate in scheduler.max_lrs],
        "total_size": _number(scheduler, "total_size", scheduler.total_size),
        "step_ratio": _number(scheduler, "step_ratio", scheduler.step_ratio),
        "mode": scheduler.mode,
        "gamma": _number(scheduler, "gamma", scheduler.gamma),
        "cycle_momentum": {
            "option": _momentum_option(scheduler),
            "max_momentum": [_number(scheduler, "max_momentum", value) for value in scheduler.max_momentums],
            "base_momentum": [_number(scheduler, "base_momentum", value) for value in scheduler.base_momentums],
        } if scheduler.cycle_momentum else False,
    }


def _momentum_option(scheduler) -> str:
    # torch's use_beta1: the optimizer has betas (Adam and its kin), whose first element cycles.
    return "betas[0]" if getattr(scheduler, "use_beta1", False) else "momentum"


def _cycles_momentum(scheduler) -> bool:
    return isinstance(scheduler, (_lr_scheduler.OneCycleLR, _lr_scheduler.CyclicLR)) and bool(getattr(scheduler, "cycle_momentum", False))


def scheduled_options(scheduler: Any) -> list:
    """The group options `scheduler` moves: lr, and the momentum (momentum, or betas[0]) that
    OneCycleLR and CyclicLR cycle with cycle_momentum, also inside a composite."""

    schedulers = list(getattr(scheduler, "_schedulers", None) or []) or [scheduler]
    cycling = [child for child in schedulers if _cycles_momentum(child)]
    return ["lr"] + ([_momentum_option(cycling[0])] if cycling else [])


def _base(scheduler, kind):
    base = []
    for rate in scheduler.base_lrs:
        if isinstance(rate, (torch.Tensor, bool)) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
            raise RuntimeError("the prepared %s's base learning rate is %r; the tape records rates as finite numbers" % (kind, rate))
        base.append(rate)
    return base


def _child(scheduler, kind):
    if kind == "OneCycleLR":
        return {"kind": kind, "arguments": _one_cycle_arguments(scheduler)}
    if kind == "CyclicLR":
        return {"kind": kind, "arguments": _cyclic_arguments(scheduler)}
    return {"kind": kind, "arguments": {name: _value(scheduler, name) for name in _ARGUMENTS[kind]}}


def _children(composite) -> Optional[list]:
    """The leaf schedulers of a SequentialLR or ChainedScheduler, or None when one is of no kind
    the contracts take, appears twice, or has other base rates than the first (its rates are
    then recorded as they are)."""

    children = list(getattr(composite, "_schedulers", None) or [])
    if not children or len(children) > 16 or len({id(child) for child in children}) != len(children):
        return None
    if any(_leaf_kind(child) is None for child in children):
        return None
    # A composite's schedulers move lr only: one cycling the momentum makes it as recorded.
    if any(_cycles_momentum(child) for child in children):
        return None
    if any(list(child.base_lrs) != list(children[0].base_lrs) for child in children):
        return None
    return children


def _check_sequence(scheduler, children, milestones):
    # After e steps of a SequentialLR made fresh, scheduler 0 has run epochs 0 … min(e,
    # m0 - 1); scheduler k took over at milestone m(k-1) with its epoch 0 and has run up to
    # min(e, m(k) - 1) - m(k-1), or, before its milestone, stands where SequentialLR's
    # constructor put it (last_epoch -1).
    e = scheduler.last_epoch
    bounds = [0] + milestones + [None]
    for k, child in enumerate(children):
        start, end = bounds[k], bounds[k + 1]
        want = -1 if e < start else (e if end is None else min(e, end - 1)) - start
        if child.last_epoch != want:
            raise RuntimeError(
                "the prepared SequentialLR is at last_epoch %d, where its scheduler %d (%s) should stand at %d, not %r: "
                "it was made to resume, stepped with step(epoch), or its schedulers were stepped on their own, and the "
                "auditor recomputes only a SequentialLR made with last_epoch=-1 and stepped with step()"
                % (e, k, type(child).__name__, want, child.last_epoch)
            )
        if isinstance(child, _lr_scheduler.CosineAnnealingWarmRestarts):
            _check_warm_restarts(child, max(want, 0))


def _check_warm_restarts(scheduler, steps):
    cur, length = steps, scheduler.T_0
    if scheduler.T_mult == 1:
        cur %= length
    else:
        while cur >= length:
            cur, length = cur - length, length * scheduler.T_mult
    if (scheduler.T_cur, scheduler.T_i) != (cur, length):
        raise RuntimeError(
            "the prepared CosineAnnealingWarmRestarts has T_cur %r and T_i %r where stepping with step() from its "
            "construction gives %d and %d at last_epoch %d: it was stepped with step(epoch) or its state was changed"
            % (scheduler.T_cur, scheduler.T_i, cur, length, steps)
        )


def _plain(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _plateau(scheduler) -> Optional[dict]:
    """ReduceLROnPlateau's description (tape format 1.9): its arguments, every group's rate now
    as the base, and its state (best, num_bad_epochs, cooldown_counter), from which the auditor
    steps it with the metrics each transaction records; None when any of them is not the plain
    number the contract takes (its rates are then recorded as they are)."""

    groups = scheduler.optimizer.param_groups
    counters = (scheduler.patience, scheduler.cooldown, scheduler.num_bad_epochs, scheduler.cooldown_counter)
    if any(isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2 ** 53 for value in counters):
        return None
    numbers = (scheduler.factor, scheduler.threshold, scheduler.eps)
    min_lrs = list(scheduler.min_lrs)
    rates = [group["lr"] for group in groups]
    if not all(_plain(value) for value in list(numbers) + min_lrs + rates) or len(min_lrs) != len(groups):
        return None
    if scheduler.mode not in ("min", "max") or scheduler.threshold_mode not in ("rel", "abs") or not scheduler.factor < 1.0:
        return None
    best = scheduler.best
    if best == scheduler.mode_worse:
        best = None  # torch's mode_worse, an infinity JSON cannot write
    elif not _plain(best):
        return None
    return {
        "kind": "ReduceLROnPlateau",
        "arguments": {
            "mode": scheduler.mode, "factor": scheduler.factor, "patience": scheduler.patience, "threshold": scheduler.threshold,
            "threshold_mode": scheduler.threshold_mode, "cooldown": scheduler.cooldown, "min_lr": min_lrs, "eps": scheduler.eps,
        },
        "base": {"lr": rates},
        "state": {"best": best, "num_bad_epochs": scheduler.num_bad_epochs, "cooldown_counter": scheduler.cooldown_counter},
    }


def reads_metric(scheduler: Any) -> bool:
    """Whether `scheduler`'s steps read a metric (ReduceLROnPlateau), which each transaction then records."""

    return type(scheduler) is _lr_scheduler.ReduceLROnPlateau


def plateau_state(scheduler: Any) -> list:
    """ReduceLROnPlateau's own state as a transaction's schedule/state records it."""

    return [float(scheduler.best), float(scheduler.num_bad_epochs), float(scheduler.cooldown_counter)]


# A prepared ReduceLROnPlateau -> the metrics of its steps since the last optimizer step.
_WATCHED_METRICS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class _WatchedReduceLROnPlateau(_lr_scheduler.ReduceLROnPlateau):
    """A prepared ReduceLROnPlateau: torch's steps, each one's metric kept (as torch's step
    reads it, float(metrics)) for the next transaction to record. A class, not an attribute
    of the scheduler, so that its state_dict() holds nothing of zkdv's."""

    def step(self, metrics, epoch=None):  # type: ignore[override]
        if epoch is not None:
            raise RuntimeError(
                "the prepared ReduceLROnPlateau was stepped with step(metrics, epoch): the tape records a scheduler stepped "
                "forward by step(metrics), one epoch at a time"
            )
        metric = float(metrics)
        super().step(metrics)
        watched = _WATCHED_METRICS.get(self)
        if watched is not None:
            watched.append(metric)


def watch_metrics(scheduler: Any) -> list:
    """Makes the ReduceLROnPlateau `scheduler` keep the metric of each of its steps in the list
    returned, which the caller empties as transactions record them."""

    metrics: list = []
    _WATCHED_METRICS[scheduler] = metrics
    scheduler.__class__ = _WatchedReduceLROnPlateau
    return metrics


def describe(scheduler: Any) -> Optional[dict]:
    """The root's description of `scheduler`, or None when it is of no kind the auditor can
    recompute (LambdaLR, a subclass, a composite holding one, …): its rates are then recorded
    as they are. Raises RuntimeError for a scheduler of a supported kind in a state the
    description cannot hold."""

    if reads_metric(scheduler):
        return _plateau(scheduler)

    composite = type(scheduler) in (_lr_scheduler.SequentialLR, _lr_scheduler.ChainedScheduler)
    if composite:
        children = _children(scheduler)
        if children is None:
            return None
        kind = type(scheduler).__name__
        arguments = {"schedulers": [_child(child, _leaf_kind(child)) for child in children]}
        if kind == "SequentialLR":
            milestones = list(scheduler._milestones)
            if (len(milestones) + 1 != len(children) or any(isinstance(m, bool) or not isinstance(m, int) or m < 1 for m in milestones)
                    or any(b <= a for a, b in zip(milestones, milestones[1:]))):
                return None
            epoch(scheduler)
            _check_sequence(scheduler, children, milestones)
            arguments["milestones"] = milestones
        else:
            epoch(scheduler)
            for child in children:
                _check_fresh(child, _leaf_kind(child))
        return {"kind": kind, "arguments": arguments, "base": {"lr": _base(children[0], kind)}}

    kind = _leaf_kind(scheduler)
    if kind is None:
        return None
    epoch(scheduler)
    _check_fresh(scheduler, kind)
    return dict(_child(scheduler, kind), base={"lr": _base(scheduler, kind)})


def epoch(scheduler: Any) -> int:
    """The scheduler's step count since construction (torch's last_epoch; for a
    ChainedScheduler, which keeps none, its schedulers' common one)."""

    if type(scheduler) is _lr_scheduler.ChainedScheduler:
        epochs = {getattr(child, "last_epoch", None) for child in getattr(scheduler, "_schedulers", [])}
        if len(epochs) != 1:
            raise RuntimeError(
                "the prepared ChainedScheduler's schedulers stand at different epochs %r: they were stepped on their own, "
                "and the tape records one epoch per step" % sorted(epochs, key=repr)
            )
        value = epochs.pop()
    else:
        value = scheduler.last_epoch
    if isinstance(value, bool) or not isinstance(value, int):
        raise RuntimeError("the prepared %s's epoch is %r, not a step count: step it with scheduler.step()" % (type(scheduler).__name__, value))
    if value < 0:
        raise RuntimeError(
            "the prepared %s has not taken its first step (last_epoch %d): its constructor takes step 0" % (type(scheduler).__name__, value)
        )
    return value
