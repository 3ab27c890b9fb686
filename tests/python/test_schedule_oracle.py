"""Oracle: every schedule contract (core/schedule/, docs/schedules.md) against real torch,
bit for bit, on this lane's torch: the rates torch's scheduler sets after construction and
after each of 300 steps, and the contract's, each step applied to the one before as the
auditor chains them. Int and float arguments both, since torch's arithmetic follows the
difference (an int step_size takes an integer modulo, a float one a float modulo)."""

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
    "StepLR float step_size": lambda o: S.StepLR(o, step_size=2.5, gamma=0.9),
    "StepLR negative step_size": lambda o: S.StepLR(o, step_size=-3, gamma=0.95),
    "StepLR int gamma": lambda o: S.StepLR(o, step_size=40, gamma=2),
    "MultiStepLR repeated": lambda o: S.MultiStepLR(o, milestones=[5, 40, 40, 120], gamma=0.7),
    "MultiStepLR thrice": lambda o: S.MultiStepLR(o, milestones=[9, 9, 9, 200], gamma=0.3),
    "MultiStepLR at 0": lambda o: S.MultiStepLR(o, milestones=[0, 3], gamma=0.5),
    "MultiStepLR float milestones": lambda o: S.MultiStepLR(o, milestones=[4.0, 7.5, 4, 250], gamma=0.6),
    "MultiStepLR int gamma": lambda o: S.MultiStepLR(o, milestones=[10, 10, 10, 77], gamma=3),
    "ExponentialLR": lambda o: S.ExponentialLR(o, gamma=0.99),
    "ExponentialLR growing": lambda o: S.ExponentialLR(o, gamma=1.01),
    "ConstantLR": lambda o: S.ConstantLR(o, factor=1.0 / 3.0, total_iters=17),
    "ConstantLR float total_iters": lambda o: S.ConstantLR(o, factor=0.7, total_iters=8.0),
    "ConstantLR never restored": lambda o: S.ConstantLR(o, factor=0.25, total_iters=8.5),
    "LinearLR warmup": lambda o: S.LinearLR(o, start_factor=0.01, end_factor=1.0, total_iters=50),
    "LinearLR decay": lambda o: S.LinearLR(o, start_factor=1.0, end_factor=0.1, total_iters=250),
    "LinearLR int arguments": lambda o: S.LinearLR(o, start_factor=1, end_factor=0, total_iters=120),
    "LinearLR float total_iters": lambda o: S.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=33.5),
    "LinearLR default": lambda o: S.LinearLR(o),
    "PolynomialLR": lambda o: S.PolynomialLR(o, total_iters=200, power=1.7),
    "PolynomialLR int power": lambda o: S.PolynomialLR(o, total_iters=90, power=2),
    "PolynomialLR float total_iters": lambda o: S.PolynomialLR(o, total_iters=120.5, power=0.5),
    "PolynomialLR default": lambda o: S.PolynomialLR(o, total_iters=150),
    "CosineAnnealingLR": lambda o: S.CosineAnnealingLR(o, T_max=60, eta_min=1e-5),
    "CosineAnnealingLR odd": lambda o: S.CosineAnnealingLR(o, T_max=7),
    "CosineAnnealingLR half cycles": lambda o: S.CosineAnnealingLR(o, T_max=5, eta_min=0.002),
    "CosineAnnealingLR float T_max": lambda o: S.CosineAnnealingLR(o, T_max=12.5, eta_min=0.001),
    "CosineAnnealingLR integral float T_max": lambda o: S.CosineAnnealingLR(o, T_max=20.0, eta_min=0),
    "CosineAnnealingWarmRestarts": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=10, T_mult=2, eta_min=1e-4),
    "CosineAnnealingWarmRestarts T_mult 1": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=13),
    "CosineAnnealingWarmRestarts T_mult 3": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=3),
    "CosineAnnealingWarmRestarts T_0 1": lambda o: S.CosineAnnealingWarmRestarts(o, T_0=1, T_mult=2, eta_min=0.01),
    # OneCycleLR with cycle_momentum=False: per-step closed form from initial_lr, max_lr, min_lr.
    "OneCycleLR cos": lambda o: S.OneCycleLR(o, max_lr=[0.3, 0.05], total_steps=STEPS, cycle_momentum=False),
    "OneCycleLR linear three phases": lambda o: S.OneCycleLR(
        o, max_lr=0.2, total_steps=STEPS + 7, pct_start=0.37, anneal_strategy="linear", three_phase=True, cycle_momentum=False),
    "OneCycleLR epochs": lambda o: S.OneCycleLR(
        o, max_lr=[0.11, 0.7], epochs=10, steps_per_epoch=31, div_factor=7.5, final_div_factor=333.0, pct_start=0.1, cycle_momentum=False),
    # CyclicLR: per-step closed form from the base rate, max_lr and the cycle's slope.
    "CyclicLR triangular": lambda o: S.CyclicLR(o, base_lr=[0.01, 0.002], max_lr=[0.1, 0.05], step_size_up=7, cycle_momentum=False),
    "CyclicLR triangular2 uneven": lambda o: S.CyclicLR(
        o, base_lr=0.003, max_lr=0.2, step_size_up=5, step_size_down=13, mode="triangular2", cycle_momentum=False),
    "CyclicLR exp_range": lambda o: S.CyclicLR(o, base_lr=0.001, max_lr=0.09, step_size_up=11.5, mode="exp_range", gamma=0.993,
                                               cycle_momentum=False),
    "SequentialLR one cycle then constant": lambda o: S.SequentialLR(
        o, [S.OneCycleLR(o, max_lr=0.5, total_steps=150, cycle_momentum=False), S.ConstantLR(o, factor=0.5, total_iters=40)],
        milestones=[120]),
    # Composites: SequentialLR restarts the scheduler taking over at a milestone with torch's
    # closed form (which need not round back to the base: eta_min + (base - eta_min));
    # ChainedScheduler steps each in turn from the rate the one before set.
    "SequentialLR warmup cosine": lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.01, total_iters=20), S.CosineAnnealingLR(o, T_max=280, eta_min=1e-5)], milestones=[20]),
    "SequentialLR constant exponential": lambda o: S.SequentialLR(
        o, [S.ConstantLR(o, factor=0.1, total_iters=20), S.ExponentialLR(o, gamma=0.97)], milestones=[20]),
    "SequentialLR three with warm restarts": lambda o: S.SequentialLR(
        o, [S.LinearLR(o, start_factor=0.1, total_iters=10), S.CosineAnnealingWarmRestarts(o, T_0=15, T_mult=2),
            S.StepLR(o, step_size=7, gamma=0.5)], milestones=[10, 100]),
    "SequentialLR restart off the base": lambda o: S.SequentialLR(
        o, [S.ExponentialLR(o, gamma=0.9), S.CosineAnnealingLR(o, T_max=50, eta_min=0.0123)], milestones=[37]),
    "SequentialLR polynomial multistep": lambda o: S.SequentialLR(
        o, [S.PolynomialLR(o, total_iters=30, power=2), S.MultiStepLR(o, milestones=[5, 60, 60], gamma=0.5)], milestones=[40]),
    "SequentialLR warm restarts first": lambda o: S.SequentialLR(
        o, [S.CosineAnnealingWarmRestarts(o, T_0=7, eta_min=0.001), S.LinearLR(o, start_factor=0.5, end_factor=0.01, total_iters=90)],
        milestones=[50]),
    "SequentialLR one": lambda o: S.SequentialLR(o, [S.StepLR(o, step_size=9, gamma=0.8)], milestones=[]),
    "ChainedScheduler": lambda o: S.ChainedScheduler([S.ConstantLR(o, factor=0.5, total_iters=10), S.ExponentialLR(o, gamma=0.98)]),
    "ChainedScheduler warmup cosine": lambda o: S.ChainedScheduler(
        [S.LinearLR(o, start_factor=0.05, total_iters=25), S.CosineAnnealingLR(o, T_max=300, eta_min=0.0001)]),
    "ChainedScheduler three": lambda o: S.ChainedScheduler(
        [S.StepLR(o, step_size=11, gamma=0.9), S.CosineAnnealingWarmRestarts(o, T_0=40), S.MultiStepLR(o, milestones=[100, 200], gamma=0.3)]),
}

STEPS = 300


def bits(value):
    return struct.pack("<d", float(value))


def optimizer_of_two_groups():
    weights = torch.zeros(3, requires_grad=True)
    bias = torch.zeros(1, requires_grad=True)
    return torch.optim.SGD([{"params": [weights]}, {"params": [bias], "lr": 0.037}], lr=0.1)


def torch_rates(make):
    optimizer = optimizer_of_two_groups()
    scheduler = make(optimizer)
    rates = [[group["lr"] for group in optimizer.param_groups]]
    for _ in range(STEPS):
        optimizer.step()
        scheduler.step()
        rates.append([group["lr"] for group in optimizer.param_groups])
    return scheduler, rates


def contract_rates(scheduler, epochs):
    description = schedules.describe(scheduler)
    return _native.schedule_values(json.dumps(description), len(description["base"]["lr"]), torch.__version__, epochs)


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_contract_gives_torch_s_rates_bit_for_bit(case):
    scheduler, expected = torch_rates(CASES[case])
    description = schedules.describe(scheduler)
    assert description is not None and description["kind"] == type(scheduler).__name__
    # describe() reads the scheduler after its steps; its arguments do not change.
    values = contract_rates(scheduler, STEPS + 1)
    assert len(values) == STEPS + 1
    for epoch, (want, got) in enumerate(zip(expected, values)):
        assert len(got) == 1, "lr is the one option"
        assert [bits(v) for v in got[0]] == [bits(v) for v in want], (case, epoch, [v.hex() for v in got[0]], [float(v).hex() for v in want])
    assert len({tuple(description["base"]["lr"])} | {tuple(r) for r in expected}) > 1, "the case moves no rate: it proves nothing"
    assert schedules.epoch(scheduler) == STEPS


def sgd_momentum():
    return torch.optim.SGD([{"params": [torch.zeros(3, requires_grad=True)]}, {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.037}],
                           lr=0.1, momentum=0.9)


def adam_two_groups():
    return torch.optim.AdamW([{"params": [torch.zeros(3, requires_grad=True)]}, {"params": [torch.zeros(1, requires_grad=True)], "lr": 0.037}],
                             lr=0.1, betas=(0.85, 0.98))


# OneCycleLR's default cycle_momentum: the momentum (SGD) or betas[0] (Adam and its kin) moves
# against the rate, each step from the group's max_momentum and base_momentum.
MOMENTUM_CASES = {
    "OneCycleLR SGD momentum": (sgd_momentum, lambda o: S.OneCycleLR(o, max_lr=[0.3, 0.05], total_steps=STEPS)),
    "OneCycleLR AdamW betas three phases linear": (adam_two_groups, lambda o: S.OneCycleLR(
        o, max_lr=0.2, total_steps=STEPS + 7, pct_start=0.37, anneal_strategy="linear", three_phase=True, base_momentum=0.8,
        max_momentum=0.97)),
    "OneCycleLR AdamW betas per group": (adam_two_groups, lambda o: S.OneCycleLR(
        o, max_lr=[0.11, 0.7], epochs=10, steps_per_epoch=31, div_factor=7.5, pct_start=0.1, base_momentum=[0.5, 0.7],
        max_momentum=[0.9, 0.99])),
    # CyclicLR's default: SGD's momentum, from max_momentum down as the rate climbs.
    "CyclicLR SGD momentum triangular2": (sgd_momentum, lambda o: S.CyclicLR(o, base_lr=0.01, max_lr=0.1, step_size_up=6, mode="triangular2")),
    "CyclicLR SGD momentum exp_range": (sgd_momentum, lambda o: S.CyclicLR(
        o, base_lr=[0.01, 0.004], max_lr=[0.1, 0.07], step_size_up=8, step_size_down=3, mode="exp_range", gamma=0.995,
        base_momentum=0.7, max_momentum=[0.95, 0.9])),
}


@pytest.mark.parametrize("case", sorted(MOMENTUM_CASES))
def test_a_cycled_momentum_is_torch_s_bit_for_bit(case):
    make_optimizer, make = MOMENTUM_CASES[case]
    optimizer = make_optimizer()
    scheduler = make(optimizer)
    options = schedules.scheduled_options(scheduler)
    momentum = options[1]
    assert options == ["lr", "betas[0]" if isinstance(optimizer, torch.optim.AdamW) else "momentum"]

    def read(groups):
        return [[g["lr"] for g in groups], [g["momentum"] if momentum == "momentum" else g["betas"][0] for g in groups]]

    expected = [read(optimizer.param_groups)]
    for _ in range(getattr(scheduler, "total_steps", STEPS + 1) - 1):
        optimizer.step()
        scheduler.step()
        expected.append(read(optimizer.param_groups))
    description = schedules.describe(scheduler)
    assert description["arguments"]["cycle_momentum"]["option"] == momentum
    values = _native.schedule_values(json.dumps(description), 2, torch.__version__, len(expected))
    for epoch, (want, got) in enumerate(zip(expected, values)):
        assert len(got) == 2, "lr and the momentum"
        for option, (w, g) in enumerate(zip(want, got)):
            assert [bits(v) for v in g] == [bits(v) for v in w], (case, epoch, options[option], g, w)
    assert len({tuple(row[1]) for row in expected}) > 2, "the momentum does not move: the case proves nothing"
    # The other beta stays as it was.
    if momentum == "betas[0]":
        assert {g["betas"][1] for g in optimizer.param_groups} == {0.98}


def test_describe_keeps_the_int_or_float_of_each_argument_and_the_repeated_milestones():
    optimizer = optimizer_of_two_groups()
    assert schedules.describe(S.MultiStepLR(optimizer, milestones=[40, 5, 40.0, 7.5], gamma=1)) == {
        "kind": "MultiStepLR",
        "arguments": {"milestones": [5, 7.5, 40, 40], "gamma": 1},
        "base": {"lr": [0.1, 0.037]},
    }
    description = schedules.describe(S.StepLR(optimizer_of_two_groups(), step_size=2.5, gamma=True))
    assert description["arguments"] == {"step_size": 2.5, "gamma": 1}
    assert isinstance(description["arguments"]["gamma"], int) and not isinstance(description["arguments"]["gamma"], bool)


def test_describe_leaves_user_code_and_subclasses_to_be_recorded_as_they_are():
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    assert schedules.describe(S.LambdaLR(optimizer, lambda epoch: 0.9 ** epoch)) is None
    assert schedules.describe(S.MultiplicativeLR(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), lambda epoch: 0.9)) is None

    class MyStep(S.StepLR):
        pass

    assert schedules.describe(MyStep(torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1), step_size=2)) is None


def test_describe_refuses_a_scheduler_the_contract_would_not_reproduce():
    optimizer = optimizer_of_two_groups()
    S.StepLR(optimizer, step_size=3)  # leaves initial_lr in the groups, as a checkpoint would
    resumed = S.StepLR(optimizer, step_size=3, last_epoch=4)
    with pytest.raises(RuntimeError, match="made to resume"):
        schedules.describe(resumed)

    # CosineAnnealingWarmRestarts keeps T_cur and T_i, which step(epoch) sets: a whole epoch
    # puts them where counting steps would (its rates are then the contract's), a fraction not.
    warm = S.CosineAnnealingWarmRestarts(optimizer_of_two_groups(), T_0=5, T_mult=2)
    warm.step(12)
    assert schedules.describe(warm) is not None
    warm.step(12.5)
    with pytest.raises(RuntimeError, match="T_cur 7.5 and T_i 10 where stepping with step\\(\\) from its construction gives 7 and 10"):
        schedules.describe(warm)

    unstepped = S.ExponentialLR(optimizer_of_two_groups(), gamma=0.5)
    unstepped.last_epoch = -1
    with pytest.raises(RuntimeError, match="has not taken its first step"):
        schedules.epoch(unstepped)


def _linear_start_zero_is_taken():
    try:
        S.LinearLR(optimizer_of_two_groups(), start_factor=0.0, total_iters=0)
        return True
    except ValueError:
        return False


def test_linear_lr_start_factor_zero_is_taken_exactly_where_this_torch_takes_it():
    description = {"kind": "LinearLR", "arguments": {"start_factor": 0.0, "end_factor": 1.0, "total_iters": 0}, "base": {"lr": [0.1, 0.037]}}
    if _linear_start_zero_is_taken():  # torch 1.13
        scheduler, expected = torch_rates(lambda o: S.LinearLR(o, start_factor=0.0, end_factor=1.0, total_iters=0))
        values = contract_rates(scheduler, STEPS + 1)
        assert [[bits(v) for v in got[0]] for got in values] == [[bits(v) for v in want] for want in expected]
        # With total_iters > 0 torch's step 1 divides by zero: no value passes for it.
        bad = dict(description, arguments=dict(description["arguments"], total_iters=5))
        with pytest.raises(RuntimeError, match="LinearLR at epoch 1: torch's step divides by zero"):
            _native.schedule_values(json.dumps(bad), 2, torch.__version__, 3)
    else:
        with pytest.raises(RuntimeError, match="arguments.start_factor must be greater than 0"):
            _native.schedule_values(json.dumps(description), 2, torch.__version__, 3)


def test_a_step_torch_cannot_take_has_no_value():
    description = {"kind": "ConstantLR", "arguments": {"factor": 0.0, "total_iters": 4}, "base": {"lr": [0.1]}}
    assert len(_native.schedule_values(json.dumps(description), 1, torch.__version__, 4)) == 4
    with pytest.raises(RuntimeError, match="ConstantLR at epoch 4: torch's step divides by zero"):
        _native.schedule_values(json.dumps(description), 1, torch.__version__, 5)


@pytest.mark.parametrize(
    "description, expected",
    [
        ({"kind": "NoSuchLR", "arguments": {}, "base": {"lr": [0.1]}}, "kind NoSuchLR: no schedule contract for it .*StepLR"),
        ({"kind": 3, "arguments": {}, "base": {"lr": [0.1]}}, "kind must be a string"),
        ({"kind": "StepLR", "arguments": {"step_size": 2, "gamma": 0.1}, "base": {"lr": [0.1]}, "epoch": 0}, "member epoch is none of"),
        ({"kind": "StepLR", "arguments": {"step_size": 2}, "base": {"lr": [0.1]}}, "arguments.gamma is missing"),
        ({"kind": "StepLR", "arguments": {"step_size": 2, "gamma": 0.1, "gama": 1}, "base": {"lr": [0.1]}}, "arguments.gama is not an argument"),
        ({"kind": "StepLR", "arguments": {"step_size": 0, "gamma": 0.1}, "base": {"lr": [0.1]}}, "arguments.step_size must be a non-zero number"),
        ({"kind": "StepLR", "arguments": {"step_size": True, "gamma": 0.1}, "base": {"lr": [0.1]}}, "arguments.step_size must be a finite number"),
        ({"kind": "StepLR", "arguments": {"step_size": 2 ** 60, "gamma": 0.1}, "base": {"lr": [0.1]}}, "arguments.step_size must be .*2\\*\\*53"),
        ({"kind": "MultiStepLR", "arguments": {"milestones": 3, "gamma": 0.1}, "base": {"lr": [0.1]}}, "arguments.milestones must be an array"),
        ({"kind": "MultiStepLR", "arguments": {"milestones": [3, "4"], "gamma": 0.1}, "base": {"lr": [0.1]}}, "arguments.milestones must be an array"),
        ({"kind": "ConstantLR", "arguments": {"factor": 1.5, "total_iters": 5}, "base": {"lr": [0.1]}}, "arguments.factor must be between 0 and 1"),
        ({"kind": "LinearLR", "arguments": {"start_factor": 0.5, "end_factor": -0.1, "total_iters": 5}, "base": {"lr": [0.1]}},
         "arguments.end_factor must be between 0 and 1"),
        ({"kind": "LinearLR", "arguments": {"start_factor": 1.1, "end_factor": 1, "total_iters": 5}, "base": {"lr": [0.1]}}, "arguments.start_factor must be"),
        ({"kind": "CosineAnnealingLR", "arguments": {"T_max": 0, "eta_min": 0}, "base": {"lr": [0.1]}}, "arguments.T_max must be a non-zero number"),
        ({"kind": "CosineAnnealingWarmRestarts", "arguments": {"T_0": 10.0, "T_mult": 1, "eta_min": 0}, "base": {"lr": [0.1]}}, "arguments.T_0 must be an integer"),
        ({"kind": "CosineAnnealingWarmRestarts", "arguments": {"T_0": 10, "T_mult": 0, "eta_min": 0}, "base": {"lr": [0.1]}}, "arguments.T_mult must be an integer of at least 1"),
        ({"kind": "ExponentialLR", "arguments": {"gamma": 0.5}, "base": {"lr": [0.1, 0.2]}}, "base.lr holds 2 rates for 1 parameter groups"),
        ({"kind": "ExponentialLR", "arguments": {"gamma": 0.5}, "base": {"lr": ["0.1"]}}, "base.lr\\[0\\] is \"0.1\", not a finite number"),
        ({"kind": "ExponentialLR", "arguments": {"gamma": 0.5}, "base": {"lr": [0.1], "momentum": [0.9]}}, "base.momentum is not an option"),
        ({"kind": "ExponentialLR", "arguments": {"gamma": 0.5}}, "needs base.lr"),
        ({"kind": "ExponentialLR", "arguments": {"gamma": "half"}, "base": {"lr": [0.1]}}, "arguments.gamma must be a finite number"),
    ],
)
def test_a_description_the_contracts_cannot_take_is_refused_naming_the_member(description, expected):
    with pytest.raises(RuntimeError, match=expected):
        _native.schedule_values(json.dumps(description), 1, torch.__version__, 3)


def test_a_non_finite_base_is_refused():
    # json.dumps writes NaN, which no JSON reader takes: the description is refused either way.
    with pytest.raises(RuntimeError):
        _native.schedule_values('{"kind": "ExponentialLR", "arguments": {"gamma": 0.5}, "base": {"lr": [1e999]}}', 1, torch.__version__, 3)


# ReduceLROnPlateau reads a metric at every step: each case is the scheduler and the metrics
# it is stepped with (plateaus, improvements within and beyond the threshold, an inf, a NaN),
# and the contract, stepped with the same metrics from the description written before the
# first step, must give torch's rates and torch's state (best, num_bad_epochs,
# cooldown_counter) after every step.
def _plateau_metrics(count, seed):
    generator = torch.Generator().manual_seed(seed)
    values, level = [], 1.0
    for i in range(count):
        r = torch.rand((), generator=generator).item()
        if r < 0.3:
            level *= 0.9 + 0.1 * r  # an improvement, sometimes within the threshold
        values.append(level * (1.0 + (0.0 if r < 0.5 else 1e-5 * r)))
    return values


PLATEAU_CASES = {
    "min rel": (lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.5, patience=2), _plateau_metrics(300, 1)),
    "min abs cooldown": (lambda o: S.ReduceLROnPlateau(o, mode="min", factor=0.3, patience=1, threshold=1e-3, threshold_mode="abs",
                                                       cooldown=3), _plateau_metrics(300, 2)),
    "max rel min_lr per group": (lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.7, patience=0, threshold=0.01, min_lr=[1e-3, 0.02]),
                                 [1.0 / m for m in _plateau_metrics(300, 3)]),
    "max abs eps": (lambda o: S.ReduceLROnPlateau(o, mode="max", factor=0.9, patience=3, threshold=0.0, threshold_mode="abs", eps=1e-3,
                                                  cooldown=1), [-m for m in _plateau_metrics(300, 4)]),
    "int factor zero, int min_lr": (lambda o: S.ReduceLROnPlateau(o, factor=0, patience=4, min_lr=0), _plateau_metrics(60, 5)),
    "negative patience": (lambda o: S.ReduceLROnPlateau(o, factor=0.95, patience=-1, min_lr=1e-6), _plateau_metrics(120, 6)),
    "inf and nan metrics": (lambda o: S.ReduceLROnPlateau(o, factor=0.5, patience=1, cooldown=2),
                            [float("inf"), 2.0, float("nan"), 1.0, float("-inf"), 3.0, float("nan"), 0.5] * 8),
}


@pytest.mark.parametrize("case", sorted(PLATEAU_CASES))
def test_the_plateau_contract_gives_torch_s_rates_and_state_bit_for_bit(case):
    make, metrics = PLATEAU_CASES[case]
    optimizer = optimizer_of_two_groups()
    scheduler = make(optimizer)
    description = schedules.describe(scheduler)
    assert description is not None and description["kind"] == "ReduceLROnPlateau", description
    expected = []
    for metric in metrics:
        scheduler.step(metric)
        expected.append(([group["lr"] for group in optimizer.param_groups], schedules.plateau_state(scheduler)))
    got = _native.schedule_values_with_metrics(json.dumps(description), 2, torch.__version__, metrics)
    assert len(got) == len(metrics)
    for step, ((want_rates, want_state), (values, state)) in enumerate(zip(expected, got)):
        assert [bits(v) for v in values[0]] == [bits(v) for v in want_rates], (case, step, values, want_rates)
        assert [bits(v) for v in state] == [bits(v) for v in want_state], (case, step, state, want_state)
    assert len({tuple(r) for r, _ in expected}) > 1, "the case reduces no rate: it proves nothing"


def test_a_plateau_described_mid_run_carries_its_state():
    # Described after some steps (as when the first transaction follows an evaluation): the
    # description's state and base are where the scheduler stands, and stepping on from them
    # is torch's.
    optimizer = optimizer_of_two_groups()
    scheduler = S.ReduceLROnPlateau(optimizer, factor=0.5, patience=1, cooldown=2)
    metrics = _plateau_metrics(90, 7)
    for metric in metrics[:30]:
        scheduler.step(metric)
    description = schedules.describe(scheduler)
    assert description["state"]["best"] == scheduler.best and description["base"]["lr"] == [g["lr"] for g in optimizer.param_groups]
    expected = []
    for metric in metrics[30:]:
        scheduler.step(metric)
        expected.append([bits(group["lr"]) for group in optimizer.param_groups])
    got = _native.schedule_values_with_metrics(json.dumps(description), 2, torch.__version__, metrics[30:])
    assert [[bits(v) for v in values[0]] for values, _ in got] == expected


def test_a_plateau_the_contract_cannot_take_is_recorded_as_recorded():
    # A float patience or cooldown (torch's arithmetic then moves to floats) and a subclass.
    assert schedules.describe(S.ReduceLROnPlateau(optimizer_of_two_groups(), patience=2.5)) is None
    assert schedules.describe(S.ReduceLROnPlateau(optimizer_of_two_groups(), cooldown=1.0)) is None

    class MyPlateau(S.ReduceLROnPlateau):
        pass

    assert schedules.describe(MyPlateau(optimizer_of_two_groups())) is None
    # A description whose state is not the scheduler's three numbers is refused.
    description = schedules.describe(S.ReduceLROnPlateau(optimizer_of_two_groups()))
    for state in ({"best": None}, {"best": "inf", "num_bad_epochs": 0, "cooldown_counter": 0},
                  {"best": None, "num_bad_epochs": 0.5, "cooldown_counter": 0}):
        with pytest.raises(RuntimeError, match="the description's state must be"):
            _native.schedule_values_with_metrics(json.dumps(dict(description, state=state)), 2, torch.__version__, [1.0])
    with pytest.raises(RuntimeError, match="needs its state"):
        _native.schedule_values_with_metrics(json.dumps({k: v for k, v in description.items() if k != "state"}), 2, torch.__version__, [1.0])
