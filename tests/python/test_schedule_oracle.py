"""Oracle: every schedule contract (core/schedule/, docs/schedules.md) against real torch,
bit for bit, on this lane's torch: the rates torch's scheduler sets after construction and
after each of 300 steps, and the contract's, each step applied to the one before as the
auditor chains them."""

import json
import struct

import pytest
import torch

from zkdv import _native
from zkdv.torch import schedules

S = torch.optim.lr_scheduler

CASES = {
    "StepLR int": lambda o: S.StepLR(o, step_size=7, gamma=0.3),
    "StepLR every step": lambda o: S.StepLR(o, step_size=1, gamma=0.97),
    "MultiStepLR repeated": lambda o: S.MultiStepLR(o, milestones=[5, 40, 40, 120], gamma=0.7),
    "MultiStepLR at 0": lambda o: S.MultiStepLR(o, milestones=[0, 3], gamma=0.5),
    "ExponentialLR": lambda o: S.ExponentialLR(o, gamma=0.99),
    "ConstantLR": lambda o: S.ConstantLR(o, factor=1.0 / 3.0, total_iters=17),
    "LinearLR warmup": lambda o: S.LinearLR(o, start_factor=0.01, end_factor=1.0, total_iters=50),
    "LinearLR decay": lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=250),
    "PolynomialLR": lambda o: S.PolynomialLR(o, total_iters=200, power=1.7),
    "PolynomialLR int power": lambda o: S.PolynomialLR(o, total_iters=90, power=2),
    "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, T_max=60, eta_min=1e-5),
    "CosineAnnealingLR odd": lambda o: S.CosineAnnealingLR(o, T_max=7),
    "CosineAnnealingLR float T_max": lambda o: S.CosineAnnealingLR(o, T_max=12.5, eta_min=0.001),
    "CosineAnnealingWarmRestarts": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2, eta_min=1e-4),
    "CosineAnnealingWarmRestarts T_mult 1": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=13),
    "CosineAnnealingWarmRestarts T_mult 3": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=3),
}

STEPS = 300


def bits(value):
    return struct.pack("<d", float(value))


def torch_rates(make):
    weights = torch.zeros(3, requires_grad=True)
    bias = torch.zeros(1, requires_grad=True)
    optimizer = torch.optim.SGD([{"params": [weights]}, {"params": [bias], "lr": 0.037}], lr=0.1)
    scheduler = make(optimizer)
    rates = [[group["lr"] for group in optimizer.param_groups]]
    for _ in range(STEPS):
        optimizer.step()
        scheduler.step()
        rates.append([group["lr"] for group in optimizer.param_groups])
    return scheduler, rates


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_contract_gives_torch_s_rates_bit_for_bit(case):
    scheduler, expected = torch_rates(CASES[case])
    description = schedules.describe(scheduler)
    assert description is not None
    # describe() reads the scheduler after its steps; its arguments do not change.
    values = _native.schedule_values(json.dumps(description), 2, torch.__version__, STEPS + 1)
    assert len(values) == STEPS + 1
    for epoch, (want, got) in enumerate(zip(expected, values)):
        assert [bits(v) for v in got[0]] == [bits(v) for v in want], (case, epoch, got[0], want)
    assert len({tuple(r) for r in expected}) > 1, "the case moves no rate: it proves nothing"


def test_describe_leaves_user_code_and_subclasses_to_be_recorded_as_they_are():
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    assert schedules.describe(S.LambdaLR(optimizer, lambda epoch: 0.9 ** epoch)) is None

    class MyStep(S.StepLR):
        pass

    assert schedules.describe(MyStep(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), step_size=2)) is None


@pytest.mark.parametrize(
    "description, expected",
    [
        ({"kind": "NoSuchLR", "arguments": {}, "base": {"lr": [0.1]}}, "no schedule contract for NoSuchLR"),
        ({"kind": "StepLR", "arguments": {"step_size": 2}, "base": {"lr": [0.1]}}, "arguments.gamma is missing"),
        ({"kind": "StepLR", "arguments": {"step_size": 2, "gamma": 0.1, "gama": 1}, "base": {"lr": [0.1]}}, "arguments.gama is not an argument"),
        ({"kind": "StepLR", "arguments": {"step_size": 0, "gamma": 0.1}, "base": {"lr": [0.1]}}, "arguments.step_size must be a positive integer"),
        ({"kind": "StepLR", "arguments": {"step_size": 2.5, "gamma": 0.1}, "base": {"lr": [0.1]}}, "arguments.step_size must be an integer"),
        ({"kind": "LinearLR", "arguments": {"start_factor": 0, "end_factor": 1, "total_iters": 5}, "base": {"lr": [0.1]}},
         "arguments.start_factor must be greater than 0"),
        ({"kind": "ExponentialLR", "arguments": {"gamma": 0.5}, "base": {"lr": [0.1, 0.2]}}, "base.lr holds 2 rates for 1 parameter groups"),
        ({"kind": "ExponentialLR", "arguments": {"gamma": "half"}, "base": {"lr": [0.1]}}, "arguments.gamma must be a finite number"),
    ],
)
def test_a_description_the_contracts_cannot_take_is_refused_naming_the_member(description, expected):
    with pytest.raises(RuntimeError, match=expected):
        _native.schedule_values(json.dumps(description), 1, torch.__version__, 3)
