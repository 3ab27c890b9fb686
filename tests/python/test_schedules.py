"""Learning-rate schedules through zkdv.torch (tape format 1.6, section 3.3): a prepared
torch.optim.lr_scheduler scheduler's values are recorded per transaction, the replay steps with
them, and the auditor recomputes them with the schedule contracts; a value off the schedule is
diverged at its transaction, naming the option."""

import json
import warnings

import pytest
import torch

import zkdv
import zkdv.torch
from conftest import audit, batches, fresh_mlp, independent_tape, replay_all
from tape_edit import _records

SCHEDULERS = {
    "step": lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=4, gamma=0.5),
    "multistep": lambda o: torch.optim.lr_scheduler.MultiStepLR(o, milestones=[3, 7, 7], gamma=0.3),
    "exponential": lambda o: torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.9),
    "cosine": lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=10, eta_min=1e-4),
    "linear_warmup": lambda o: torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=5),
    "constant": lambda o: torch.optim.lr_scheduler.ConstantLR(o, factor=0.25, total_iters=6),
    "polynomial": lambda o: torch.optim.lr_scheduler.PolynomialLR(o, total_iters=12, power=2.0),
    "warm_restarts": lambda o: torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(o, T_0=5, T_mult=2, eta_min=1e-3),
    # The usual warm-up then cosine decay, and a warm-up chained with a decay.
    "sequential_warmup_cosine": lambda o: torch.optim.lr_scheduler.SequentialLR(
        o, [torch.optim.lr_scheduler.LinearLR(o, start_factor=0.1, total_iters=5),
            torch.optim.lr_scheduler.CosineAnnealingLR(o, T_max=21, eta_min=1e-4)], milestones=[5]),
    "one_cycle": lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=[0.05, 0.1], total_steps=STEPS, cycle_momentum=False),
    "chained_warmup_exponential": lambda o: torch.optim.lr_scheduler.ChainedScheduler(
        [torch.optim.lr_scheduler.LinearLR(o, start_factor=0.2, total_iters=4), torch.optim.lr_scheduler.ExponentialLR(o, gamma=0.93)]),
}

STEPS = 26


def two_groups(model, lr=0.02):
    # No weight decay on biases, as real loops do: two groups with their own lr.
    weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return torch.optim.AdamW([{"params": weights, "weight_decay": 0.01}, {"params": biases, "weight_decay": 0.0, "lr": lr * 2}], lr=lr)


def root_of(tape):
    for kind, _, payload in _records(open(tape, "rb").read()):
        if kind == 1:
            return json.loads(payload)
    raise AssertionError("no root record")


def record(tape, make_scheduler, prepare_scheduler=True, steps=STEPS):
    """The ordinary scheduled loop; returns the learning rates each step used."""
    model = fresh_mlp()
    loss_fn = torch.nn.CrossEntropyLoss()
    used = []
    with zkdv.torch.ZKDV(tape, replay_snapshot_interval=6) as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, two_groups(model))
        scheduler = make_scheduler(optimizer)
        if prepare_scheduler:
            scheduler = proof.prepare(scheduler)
        for step, (x, y) in enumerate(batches(steps)):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                used.append([group["lr"] for group in optimizer.param_groups])
                optimizer.step()
            scheduler.step()
    return model, used


def train_plain(make_scheduler, steps=STEPS):
    model = fresh_mlp()
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = two_groups(model)
    scheduler = make_scheduler(optimizer)
    for x, y in batches(steps):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()
        scheduler.step()
    return model


def report_of(tmp_path, tape):
    """The JSON report of the tape's newest replay run (after replay())."""
    import subprocess

    from conftest import AUDIT

    out = tmp_path / (tape.stem + ".report.json")
    subprocess.run([AUDIT, "report", str(tmp_path / (tape.stem + ".zkaudit")), "--out", str(out), "--quiet"], check=True, timeout=300)
    return json.loads(out.read_text())




@pytest.mark.parametrize("kind", sorted(SCHEDULERS))
def test_a_prepared_schedule_trains_as_torch_and_replays_exact(tmp_path, kind):
    tape = tmp_path / (kind + ".zkdv")
    model, used = record(tape, SCHEDULERS[kind])
    plain = train_plain(SCHEDULERS[kind])
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(recorded.detach(), trained.detach()), name
    assert len({tuple(lrs) for lrs in used}) > 1, "the schedule changed no learning rate: the test proves nothing"

    root = root_of(tape)
    assert root["format"]["minor"] >= 6
    schedule = root["optimizer"]["schedule"]
    assert schedule["options"] == ["lr"]
    assert schedule["scheduler"]["kind"] == type(SCHEDULERS[kind](two_groups(fresh_mlp()))).__name__
    assert schedule["scheduler"]["base"]["lr"] == ([0.05 / 25, 0.1 / 25] if kind == "one_cycle" else [0.02, 0.04])
    assert "initial_lr" not in root["optimizer"]["groups"][0]["options"]

    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["passed"], replayed
    assert replayed["verdicts"]["exact"] == STEPS, replayed["verdicts"]
    report = report_of(tmp_path, tape)
    assert report["optimizer"]["schedule"] == {"options": ["lr"], "scheduler": schedule["scheduler"]["kind"], "checked": True}, report["optimizer"]
    assert "checked against its schedule" in report["optimizer"]["schedule_statement"]


def test_a_step_off_the_prepared_schedule_is_refused_before_it_is_taken(tmp_path):
    """An honest loop that moves a rate by hand under a prepared StepLR would replay diverged
    there: the recorder refuses that step (nothing recorded, the tape goes on)."""
    tape = tmp_path / "meddled.zkdv"
    refused = []

    def meddle(step, optimizer):
        if step == 9:
            optimizer.param_groups[1]["lr"] *= 3.0

    model = fresh_mlp()
    with zkdv.torch.ZKDV(tape, replay_snapshot_interval=6) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        scheduler = proof.prepare(SCHEDULERS["step"](optimizer))
        for step, (x, y) in enumerate(batches(12)):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                meddle(step, optimizer)
                try:
                    optimizer.step()
                except RuntimeError as error:
                    refused.append((step, str(error)))
                    optimizer.param_groups[1]["lr"] /= 3.0
            scheduler.step()
        assert proof.statistics["transactions"] == 11
    assert [step for step, _ in refused] == [9], refused
    assert "not the prepared scheduler's" in refused[0][1] and "group 1 lr" in refused[0][1], refused[0][1]
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 11, replayed




STEP_LR = json.dumps({"kind": "StepLR", "arguments": {"step_size": 3, "gamma": 0.5}})


def test_a_forged_rate_is_diverged_at_its_transaction_naming_the_option(tmp_path):
    """A dishonest trainer steps transaction 6 with three times StepLR's rate and records the
    rate it used: every update replays exact, and only the schedule check can see it."""
    tape = independent_tape(tmp_path, "forged.zkdv", "--scheduler", STEP_LR, "--forge-lr", "6", interval=4)
    status, verified = audit("verify", str(tape))
    assert status == 0 and verified["status"] == "sealed", verified
    status, replayed = replay_all(tmp_path, tape)
    assert status == 1 and not replayed["passed"], replayed
    failures = replayed["first_failures"]
    assert failures[0]["index"] == 6 and failures[0]["verdict"] == "diverged", failures
    assert "optimizer/lr schedule" in failures[0]["detail"] and "StepLR schedule gives" in failures[0]["detail"], failures[0]
    # Only the forged step and the one after it, which steps from the forged rate, depart.
    assert replayed["verdicts"]["diverged"] == 2 and replayed["verdicts"]["exact"] == 12, replayed["verdicts"]


WARMUP_COSINE = json.dumps({"kind": "SequentialLR", "arguments": {
    "schedulers": [{"kind": "LinearLR", "arguments": {"start_factor": 0.25, "end_factor": 1.0, "total_iters": 4}},
                   {"kind": "CosineAnnealingLR", "arguments": {"T_max": 10, "eta_min": 0.0}}],
    "milestones": [4]}})


@pytest.mark.parametrize("forged", [2, 4, 9])
def test_a_forged_rate_under_a_sequential_schedule_is_diverged_where_it_was_forged(tmp_path, forged):
    """In the warm-up (2), at the milestone, where the cosine takes over from the base (4), and
    in the decay (9): each is the transaction that departs."""
    tape = independent_tape(tmp_path, "forged-%d.zkdv" % forged, "--scheduler", WARMUP_COSINE, "--forge-lr", str(forged), interval=4)
    status, replayed = replay_all(tmp_path, tape)
    assert status == 1 and not replayed["passed"], replayed
    failure = replayed["first_failures"][0]
    assert failure["index"] == forged and failure["verdict"] == "diverged", replayed["first_failures"]
    assert "optimizer/lr schedule" in failure["detail"] and "SequentialLR schedule gives" in failure["detail"], failure


def test_the_independent_writer_s_sequential_tape_replays_exact(tmp_path):
    tape = independent_tape(tmp_path, "sequential.zkdv", "--scheduler", WARMUP_COSINE, interval=4)
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 14, replayed


def test_a_composite_holding_user_code_records_as_recorded():
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    S = torch.optim.lr_scheduler
    assert zkdv.torch.schedules.describe(S.SequentialLR(optimizer, [S.LinearLR(optimizer), S.LambdaLR(optimizer, lambda e: 0.5)], milestones=[3])) is None
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    assert zkdv.torch.schedules.describe(S.ChainedScheduler([S.ExponentialLR(optimizer, 0.9), S.MultiplicativeLR(optimizer, lambda e: 0.9)])) is None


def test_a_sequential_schedule_whose_schedulers_were_stepped_alone_is_refused():
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    S = torch.optim.lr_scheduler
    warmup, decay = S.LinearLR(optimizer, total_iters=3), S.ExponentialLR(optimizer, gamma=0.9)
    sequence = S.SequentialLR(optimizer, [warmup, decay], milestones=[3])
    for _ in range(5):
        optimizer.step()
        sequence.step()
    assert zkdv.torch.schedules.describe(sequence)["arguments"]["milestones"] == [3]
    decay.step()
    with pytest.raises(RuntimeError, match="its scheduler 1 \\(ExponentialLR\\) should stand at 2, not 3"):
        zkdv.torch.schedules.describe(sequence)


@pytest.mark.parametrize("how", ["lambda", "unprepared"])
def test_a_schedule_the_auditor_cannot_recompute_replays_as_recorded(tmp_path, how):
    tape = tmp_path / (how + ".zkdv")
    make = (lambda o: torch.optim.lr_scheduler.LambdaLR(o, lambda epoch: 1.0 / (1 + epoch))) if how == "lambda" else SCHEDULERS["cosine"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, used = record(tape, make, prepare_scheduler=(how == "lambda"))
    said = [str(w.message) for w in caught if "not prepared" in str(w.message)]
    assert bool(said) == (how == "unprepared"), said
    assert len({tuple(lrs) for lrs in used}) > 1
    schedule = root_of(tape)["optimizer"]["schedule"]
    assert schedule["options"] == ["lr"] and schedule["scheduler"] is None, schedule
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == STEPS, replayed
    report = report_of(tmp_path, tape)
    assert report["optimizer"]["schedule"] == {"options": ["lr"], "scheduler": None, "checked": False}, report["optimizer"]
    assert report["optimizer"]["schedule_statement"] == "lr as recorded, not checked against a schedule"


def test_a_scheduler_made_before_the_optimizer_was_prepared_records_as_recorded(tmp_path):
    model = fresh_mlp()
    raw = two_groups(model)
    scheduler = torch.optim.lr_scheduler.StepLR(raw, step_size=3, gamma=0.5)
    tape = tmp_path / "early.zkdv"
    with pytest.warns(UserWarning, match="not prepared"):
        with zkdv.torch.ZKDV(tape, replay_snapshot_interval=6) as proof:
            model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), raw)
            for x, y in batches(8):
                with proof.transaction(batch=(x, y)):
                    optimizer.zero_grad()
                    proof.backward(loss_fn(proof.forward(model, x), y))
                    optimizer.step()
                scheduler.step()
    assert root_of(tape)["optimizer"]["schedule"]["scheduler"] is None
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 8, replayed


def test_a_scheduler_made_after_the_first_transaction_is_refused_when_it_changes_lr(tmp_path):
    model = fresh_mlp()
    proof = zkdv.torch.ZKDV(tmp_path / "late.zkdv")
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
    data = batches(3)
    x, y = next(data)
    with proof.transaction(batch=(x, y)):
        proof.backward(loss_fn(proof.forward(model, x), y))
        optimizer.step()
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=0.5)
    with pytest.raises(RuntimeError, match="before the first transaction"):
        proof.prepare(scheduler)
    scheduler.step()
    x, y = next(data)
    with proof.transaction(batch=(x, y)):
        optimizer.zero_grad()
        proof.backward(loss_fn(proof.forward(model, x), y))
        with pytest.raises(RuntimeError, match="learning-rate scheduler"):
            optimizer.step()
    assert proof.statistics["transactions"] == 1
    proof.close()


def test_the_independent_writer_s_scheduled_tape_replays_exact(tmp_path):
    tape = independent_tape(tmp_path, "independent.zkdv", "--scheduler", STEP_LR, interval=4)
    schedule = root_of(tape)["optimizer"]["schedule"]
    assert schedule["scheduler"]["kind"] == "StepLR" and root_of(tape)["format"]["minor"] == 6
    status, verified = audit("verify", str(tape))
    assert status == 0 and verified["status"] == "sealed", verified
    status, info = audit("info", str(tape))
    assert status == 0 and info["root"]["optimizer"]["schedule"] == schedule, info["root"]["optimizer"]
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 14, replayed


def test_gradients_zeroed_in_place_train_as_torch_and_replay_exact(tmp_path):
    """zero_grad(set_to_none=False) keeps zero tensors that the next backward accumulates
    into; with two parameter groups and a schedule, the tape still replays exact."""
    model = fresh_mlp()
    plain_model = fresh_mlp()
    plain_optimizer = two_groups(plain_model)
    plain_scheduler = SCHEDULERS["exponential"](plain_optimizer)
    loss_fn = torch.nn.CrossEntropyLoss()
    tape = tmp_path / "zeros.zkdv"
    with zkdv.torch.ZKDV(tape, replay_snapshot_interval=6) as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, two_groups(model))
        scheduler = proof.prepare(SCHEDULERS["exponential"](optimizer))
        for x, y in batches(10):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad(set_to_none=False)
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
            scheduler.step()
            plain_optimizer.zero_grad(set_to_none=False)
            loss_fn(plain_model(x), y).backward()
            plain_optimizer.step()
            plain_scheduler.step()
    for recorded, trained in zip(model.parameters(), plain_model.parameters()):
        assert torch.equal(recorded.detach(), trained.detach())
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 10, replayed


# OneCycleLR's default cycles AdamW's betas[0] against the rate (format 1.8 schedules the
# element); CyclicLR's cycles SGD's momentum. Both are checked against their schedule.
MOMENTUM = {
    "one_cycle_betas": (lambda o: torch.optim.lr_scheduler.OneCycleLR(o, max_lr=[0.05, 0.1], total_steps=STEPS), two_groups, "betas[0]"),
    "cyclic_momentum": (lambda o: torch.optim.lr_scheduler.CyclicLR(o, base_lr=0.001, max_lr=0.05, step_size_up=4),
                        lambda model: torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9), "momentum"),
}


@pytest.mark.parametrize("kind", sorted(MOMENTUM))
def test_a_cycled_momentum_trains_as_torch_and_replays_exact(tmp_path, kind):
    make_scheduler, make_optimizer, option = MOMENTUM[kind]
    tape = tmp_path / (kind + ".zkdv")
    model, plain = fresh_mlp(), fresh_mlp()
    loss_fn = torch.nn.CrossEntropyLoss()
    moved = []
    # No sampled checks: the forgery below edits a record, whose digest keys the next draws.
    unsampled = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.0, update_check_probability=0.0, seed=1))
    with zkdv.torch.ZKDV(tape, unsampled, replay_snapshot_interval=6) as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, make_optimizer(model))
        scheduler = proof.prepare(make_scheduler(optimizer))
        for x, y in batches(STEPS):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                moved.append(optimizer.param_groups[0]["momentum"] if option == "momentum" else optimizer.param_groups[0]["betas"][0])
                optimizer.step()
            scheduler.step()
    optimizer = make_optimizer(plain)
    scheduler = make_scheduler(optimizer)
    for x, y in batches(STEPS):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(plain(x), y).backward()
        optimizer.step()
        scheduler.step()
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(recorded.detach(), trained.detach()), name
    assert len(set(moved)) > 2, "the momentum did not move: the test proves nothing"
    schedule = root_of(tape)["optimizer"]["schedule"]
    assert schedule["options"] == ["lr", option]
    assert schedule["scheduler"]["kind"] == type(scheduler).__name__, schedule
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == STEPS, replayed["verdicts"]
    # A momentum off the cycle, re-chained, is diverged at its transaction, naming it.
    from tape_edit import rechain_with_edit
    import struct

    def bump(payload):
        (length,) = struct.unpack_from("<Q", payload, 0)
        header = json.loads(payload[8:8 + length])
        start, _ = header["optimizer/" + option]["data_offsets"]
        edited = bytearray(payload)
        at = 8 + length + start
        struct.pack_into("<d", edited, at, struct.unpack_from("<d", edited, at)[0] - 0.01)
        return bytes(edited)

    forged = tmp_path / "forged.zkdv"
    rechain_with_edit(tape, forged, 7, bump)
    status, replayed = replay_all(tmp_path, forged)
    assert status == 1
    first = replayed["first_failures"][0]
    assert first["index"] == 7 and first["verdict"] == "diverged" and option in first["detail"], replayed["first_failures"]


# ReduceLROnPlateau (tape format 1.9): stepped with a validation loss after every second step,
# twice after step 9 (two evaluations) and not at all after the odd ones, so transactions
# record 0, 1 and 2 metrics. patience 0 and a 2 % threshold make it reduce as the loss levels.
def plateau(optimizer):
    return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.02, cooldown=1, min_lr=[1e-4, 0.0])


def evaluations_after(step):
    return 0 if step % 2 else (2 if step == 10 else 1)


def validation_loss(model, loss_fn, x, y):
    with torch.no_grad():
        return loss_fn(model(x), y)


def record_plateau(tape, config=None, steps=STEPS):
    model = fresh_mlp()
    held_out = next(batches(1, seed=99))
    used = []
    with zkdv.torch.ZKDV(tape, config, replay_snapshot_interval=6) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        scheduler = proof.prepare(plateau(optimizer))
        for step, (x, y) in enumerate(batches(steps)):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                used.append([group["lr"] for group in optimizer.param_groups])
                optimizer.step()
            for _ in range(evaluations_after(step)):
                scheduler.step(validation_loss(model, loss_fn, *held_out))
    return model, used


def train_plain_plateau(steps=STEPS):
    model = fresh_mlp()
    held_out = next(batches(1, seed=99))
    loss_fn = torch.nn.CrossEntropyLoss()
    optimizer = two_groups(model)
    scheduler = plateau(optimizer)
    for step, (x, y) in enumerate(batches(steps)):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()
        for _ in range(evaluations_after(step)):
            scheduler.step(validation_loss(model, loss_fn, *held_out))
    return model


def test_reduce_lr_on_plateau_trains_as_torch_and_replays_exact(tmp_path):
    from test_gradient_accumulation import transactions_of

    tape = tmp_path / "plateau.zkdv"
    model, used = record_plateau(tape)
    plain = train_plain_plateau()
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(recorded.detach(), trained.detach()), name
    assert len({tuple(lrs) for lrs in used}) > 2, ("the plateau reduced the rate less than twice: the test proves too little", used)

    root = root_of(tape)
    assert root["format"]["minor"] >= 9
    scheduler = root["optimizer"]["schedule"]["scheduler"]
    assert scheduler["kind"] == "ReduceLROnPlateau" and scheduler["state"] == {"best": None, "num_bad_epochs": 0, "cooldown_counter": 0}
    assert scheduler["arguments"]["min_lr"] == [1e-4, 0.0] and scheduler["base"]["lr"] == [0.02, 0.04], scheduler
    counts = [h["schedule/metrics"]["shape"][0] if "schedule/metrics" in h else 0 for h in transactions_of(tape)]
    assert counts == [0] + [evaluations_after(step) for step in range(STEPS - 1)], counts
    assert all("schedule/state" in h for h in transactions_of(tape))

    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["passed"] and replayed["verdicts"]["exact"] == STEPS, replayed
    report = report_of(tmp_path, tape)
    assert report["optimizer"]["schedule"] == {"options": ["lr"], "scheduler": "ReduceLROnPlateau", "checked": True}, report["optimizer"]
    assert "metrics the tape records" in report["optimizer"]["schedule_statement"], report["optimizer"]


def _edited_f64(payload, name, index, value):
    """The transaction blob with element `index` of its F64 tensor `name` set to value."""
    import struct

    (length,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + length])
    start, _ = header[name]["data_offsets"]
    assert header[name]["dtype"] == "F64", header[name]
    edited = bytearray(payload)
    struct.pack_into("<d", edited, 8 + length + start + 8 * index, value)
    return bytes(edited)


@pytest.mark.parametrize("edit", ["metric", "state"])
def test_an_edited_plateau_step_rechained_is_caught_at_its_transaction(tmp_path, edit):
    """A dishonest trainer records another validation loss than the one the scheduler read, or
    another state: the replay steps torch's rule from the transaction before and finds the rate
    or the state departing there. (A rate of the trainer's own under a recorded schedule is
    test_a_forged_rate_is_diverged_at_its_transaction_naming_the_option's.)"""
    from tape_edit import rechain_with_edit
    from test_gradient_accumulation import transactions_of

    # No sampled checks: an edited record's digest keys the next transaction's draws.
    config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.0, update_check_probability=0.0))
    honest = tmp_path / "honest.zkdv"
    _, used = record_plateau(honest, config)
    headers = transactions_of(honest)
    # A transaction whose steps reduced the rate, after one that records a metric.
    at = next(i for i in range(1, STEPS) if used[i] != used[i - 1] and "schedule/metrics" in headers[i])
    forged = tmp_path / ("forged-" + edit + ".zkdv")
    if edit == "metric":
        # A metric far better than the best: no reduction would have followed it.
        change = lambda payload: _edited_f64(payload, "schedule/metrics", 0, 1e-6)
    else:
        change = lambda payload: _edited_f64(payload, "schedule/state", 1, 5.0)  # num_bad_epochs
    rechain_with_edit(honest, forged, at, change)
    status, verified = audit("verify", str(forged))
    assert status == 0 and verified["status"] == "sealed", verified
    status, replayed = replay_all(tmp_path, forged)
    assert status == 1 and not replayed["passed"], replayed
    first = replayed["first_failures"][0]
    assert first["index"] == at and first["verdict"] == "diverged", replayed["first_failures"]
    assert "schedule/state schedule" in first["detail"] and "ReduceLROnPlateau" in first["detail"], first
    if edit == "metric":
        assert "optimizer/lr schedule" in first["detail"], first


def test_a_plateau_stepped_with_an_epoch_is_refused(tmp_path):
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tmp_path / "epoch.zkdv") as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        scheduler = proof.prepare(plateau(optimizer))
        x, y = next(batches(1))
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x), y))
            optimizer.step()
        with pytest.raises(RuntimeError, match="step\\(metrics, epoch\\)"):
            scheduler.step(1.0, 5)
        # Still a ReduceLROnPlateau whose state_dict() a checkpoint saves: nothing of zkdv's in it.
        import io

        assert isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau)
        state = scheduler.state_dict()
        torch.save(state, io.BytesIO())
        fresh = plateau(two_groups(fresh_mlp()))
        fresh.load_state_dict(state)
        assert type(fresh) is torch.optim.lr_scheduler.ReduceLROnPlateau


PLATEAU = json.dumps({"kind": "ReduceLROnPlateau", "arguments": {
    "mode": "min", "factor": 0.5, "patience": 0, "threshold": 0.05, "threshold_mode": "rel", "cooldown": 1, "min_lr": [0.0], "eps": 1e-8}})


def test_the_independent_writer_s_plateau_tape_replays_exact(tmp_path):
    """The second writer of the spec steps its ReduceLROnPlateau with each step's loss and
    writes the metrics and the state as section 3.3 says: the auditor agrees with it."""
    from test_gradient_accumulation import transactions_of

    import struct

    tape = independent_tape(tmp_path, "plateau.zkdv", "--scheduler", PLATEAU, interval=4)
    rates = set()
    for kind, _, payload in _records(open(tape, "rb").read()):
        if kind == 4:
            (length,) = struct.unpack_from("<Q", payload, 0)
            start, _ = json.loads(payload[8:8 + length])["optimizer/lr"]["data_offsets"]
            rates.add(struct.unpack_from("<d", payload, 8 + length + start)[0])
    assert all("schedule/state" in h for h in transactions_of(tape))
    assert root_of(tape)["format"]["minor"] == 9
    assert len(rates) > 1, ("the plateau never reduced the rate: the tape proves little", rates)
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 14, replayed
