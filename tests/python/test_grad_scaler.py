"""Gradient scaling (tape format 1.8, section 5.6): a loop with torch.amp.GradScaler (float16
autocast, scaler.scale, unscale_, clipping, scaler.step, update) records through the scaler
proof.prepare() returns, trains bit for bit as the same loop without zkdv, skipped steps
included, and replays exact; a forged skip or scale is caught at its transaction, naming the
field. torch 1.13 has no CPU GradScaler: there torch.cuda.amp.GradScaler is disabled without
CUDA, and a loop using it records as one without scaling (also tested)."""

import json
import warnings

import pytest
import torch

import zkdv.torch
from zkdv import _native
from conftest import audit, batches, fresh_mlp, independent_tape, replay_all
from tape_edit import edited_metadata, rechain_with_edit
from test_gradient_accumulation import transactions_of
from test_gradient_clipping import assert_diverged_from, same_bits
from test_schedules import root_of

RELEASE = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
# torch.amp.GradScaler("cpu") and its CPU kernels came with torch 2.3.
CPU_SCALER = RELEASE >= (2, 3)
STEPS = 10
MICRO = 2
# Far too large for float16 activations' gradients at first: the first steps overflow and are
# skipped, the scale backs off, and then grows every 3 steps without one.
INIT_SCALE = 2.0 ** 24


def make_scaler(**options):
    if CPU_SCALER:
        return torch.amp.GradScaler("cpu", init_scale=INIT_SCALE, growth_interval=3, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "torch.cuda.amp.GradScaler is enabled, but CUDA is not available"
        return torch.cuda.amp.GradScaler(init_scale=INIT_SCALE, growth_interval=3, **options)


def autocast():
    # CPU float16 autocast is what needs a scaler; a torch without it runs bfloat16.
    return torch.autocast("cpu", dtype=torch.float16 if CPU_SCALER else torch.bfloat16)


def two_groups(model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=0.01)


def micro_batches(steps=STEPS):
    flat = list(batches(steps * MICRO))
    return [flat[MICRO * s:MICRO * (s + 1)] for s in range(steps)]


def record(tape, unscale=True, update_every=1, scaler_options=None):
    """The real loop with a GradScaler, through zkdv.torch; returns the model and the scales used."""
    model = fresh_mlp()
    scales = []
    with zkdv.torch.ZKDV(tape, replay_snapshot_interval=4) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        scheduler = proof.prepare(torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS))
        scaler = proof.prepare(make_scaler(**(scaler_options or {})))
        for step, micro in enumerate(micro_batches()):
            scales.append(scaler.get_scale())
            with proof.transaction(batch=micro):
                optimizer.zero_grad()
                for x, y in micro:
                    with autocast():
                        loss = loss_fn(proof.forward(model, x), y)
                    proof.backward(scaler.scale(loss / MICRO))
                if unscale:
                    scaler.unscale_(optimizer)
                    proof.clip_grad_norm_(model.parameters(), 1.0)
                scaler.step(optimizer)
            if (step + 1) % update_every == 0:
                scaler.update()
            scheduler.step()
    return model, scales


def train_plain(unscale=True):
    model = fresh_mlp()
    optimizer = two_groups(model)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS)
    scaler = make_scaler()
    loss_fn = torch.nn.CrossEntropyLoss()
    scales = []
    for micro in micro_batches():
        scales.append(scaler.get_scale())
        optimizer.zero_grad(set_to_none=True)
        for x, y in micro:
            with autocast():
                loss = loss_fn(model(x), y)
            scaler.scale(loss / MICRO).backward()
        if unscale:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        scheduler.step()
    return model, scales


@pytest.mark.parametrize("unscale", [True, False], ids=["unscale-then-clip", "step-unscales"])
def test_a_scaled_loop_trains_as_torch_and_replays_exact(tmp_path, unscale):
    tape = tmp_path / "scaled.zkdv"
    model, scales = record(tape, unscale)
    plain, plain_scales = train_plain(unscale)
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert same_bits(recorded.detach(), trained.detach()), name
    assert scales == plain_scales
    root = root_of(tape)
    headers = transactions_of(tape)
    if not CPU_SCALER:
        # torch 1.13 on a machine without CUDA: the scaler is disabled and scales nothing.
        assert not make_scaler().is_enabled() and "grad_scaler" not in root and root["format"]["minor"] >= 8
        assert all("grad_scaler" not in header["__metadata__"] for header in headers)
    else:
        assert root["grad_scaler"] == {"growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3, "scale": INIT_SCALE,
                                       "growth_tracker": 0}, root["grad_scaler"]
        recorded = [json.loads(header["__metadata__"]["grad_scaler"]) for header in headers]
        assert [entry["scale"] for entry in recorded] == plain_scales
        skipped = [entry["skipped"] for entry in recorded]
        # The loop meets both: overflowing steps skipped, and steps taken.
        assert any(skipped) and not all(skipped), skipped
        for header, entry in zip(headers, recorded):
            transforms = json.loads(header["__metadata__"]["gradient_transforms"])
            assert [t["kind"] for t in transforms] == (["unscale", "clip_grad_norm"] if unscale else ["unscale"]), transforms
            if entry["skipped"]:
                assert all(value == 0.0 for value in _update_norms(tape, header)), header
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["passed"], replayed
    assert replayed["verdicts"]["exact"] == STEPS, replayed["verdicts"]


def _update_norms(tape, header):
    import struct
    start, end = header["update/l2"]["data_offsets"]
    for kind, _, payload in _records_of(tape):
        if kind == 4 and json.loads(payload[8:8 + struct.unpack_from("<Q", payload, 0)[0]]) == header:
            base = 8 + struct.unpack_from("<Q", payload, 0)[0]
            return struct.unpack_from("<%dd" % ((end - start) // 8), payload, base + start)
    raise AssertionError("no such transaction")


def _records_of(tape):
    from tape_edit import _records
    return _records(open(tape, "rb").read())


def test_a_disabled_scaler_records_as_no_scaler(tmp_path):
    """GradScaler(enabled=False), the switch of a loop that turns mixed precision off."""
    tape = tmp_path / "disabled.zkdv"
    model, scales = record(tape, scaler_options={"enabled": False})
    assert set(scales) == {1.0}
    assert "grad_scaler" not in root_of(tape)
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == STEPS, replayed


# The unscale the recorder and the replay apply, against torch's own kernel (2.3 and later) or,
# where torch has none on the CPU (1.13), against the arithmetic it states (spec 5.6).
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("scale", [65536.0, 3.0e38, 1000.1, 1.0, 0.75])
@pytest.mark.parametrize("poison", [None, float("inf"), float("nan")])
def test_unscale_is_torchs(dtype, scale, poison):
    generator = torch.Generator().manual_seed(int(scale) % 1000 + 7)
    grads = [(torch.randn(shape, generator=generator, dtype=torch.float64) * 1e4).to(dtype) for shape in [(3, 4), (17,), (), (0,)]]
    if poison is not None:
        grads[1][5] = poison
    scale32 = torch.tensor(scale, dtype=torch.float32)
    ours = [g.clone() for g in grads]
    found = _native.gradient_transform(ours, "unscale", float(scale32.item()), torch_version=torch.__version__)
    inverse = scale32.double().reciprocal().float()
    if CPU_SCALER:
        theirs = [g.clone() for g in grads]
        found_theirs = torch.zeros((), dtype=torch.float32)
        torch._amp_foreach_non_finite_check_and_unscale_(theirs, found_theirs, inverse)
    else:
        theirs = [g if inverse.item() == 1.0 else (g.to(torch.float32 if dtype == torch.bfloat16 else dtype) * inverse.to(
            torch.float32 if dtype == torch.bfloat16 else dtype)).to(dtype) for g in grads]
        found_theirs = torch.tensor(float(any(not torch.isfinite(g).all() for g in grads)))
    assert found.item() == found_theirs.item() == (0.0 if poison is None else 1.0)
    for a, b in zip(ours, theirs):
        assert a.dtype == b.dtype and (same_bits(a, b) or (poison is not None and torch.equal(a.isnan(), b.isnan())))


# tests/oracle/record.py scales with torch's own GradScaler("cpu") where torch has one, and with
# the spec's arithmetic (its SpecGradScaler) on torch 1.13: the auditor's side on both lanes.
SCALED = ("--grad-scaler", "3.4e38", "--loss-mul", "4.0", "--backoff-factor", "1e-30", "--growth-interval", "3")


def test_an_independent_writers_scaled_tape_replays_exact(tmp_path):
    """An odd backoff factor whose product rounds, and a start so large that the first step
    overflows (float32 parameters: the loss, times 4 as the loop writes it, times the scale
    passes float32's largest)."""
    tape = independent_tape(tmp_path, "scaled.zkdv", *SCALED)
    skipped = [json.loads(h["__metadata__"]["grad_scaler"])["skipped"] for h in transactions_of(tape)]
    assert skipped[0] and not all(skipped), skipped
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 14, replayed


def test_a_forged_skip_is_diverged_there(tmp_path):
    """A dishonest trainer leaves out the update of step 6 and records it as skipped for an
    overflow, backing the scale off as the rule says: only the replay's gradients can tell."""
    tape = independent_tape(tmp_path, "forged.zkdv", "--grad-scaler", "1024", "--growth-interval", "3", "--forge-skip", "6")
    status, replayed = replay_all(tmp_path, tape)
    assert status == 1
    assert_diverged_from(replayed, 6, "grad_scaler skipped", "are all finite")


@pytest.mark.parametrize("edit", ["scale", "skipped"])
def test_an_edited_scaler_state_rechained_is_caught_at_its_transaction(tmp_path, edit):
    # No sampled checks: an edited record's digest keys the next transaction's draws.
    honest = independent_tape(tmp_path, "honest.zkdv", *SCALED, "--update-check", "0", "--state-check", "0")
    states = [json.loads(h["__metadata__"]["grad_scaler"]) for h in transactions_of(honest)]
    # A skipped step for "skipped" (claimed taken), a taken one for "scale".
    at = next(i for i, s in enumerate(states) if s["skipped"] == (edit == "skipped"))

    def change(metadata):
        state = json.loads(metadata["grad_scaler"])
        if edit == "scale":
            state["scale"] *= 2
        else:
            state["skipped"] = False
        metadata["grad_scaler"] = json.dumps(state)

    forged = tmp_path / ("forged-" + edit + ".zkdv")
    rechain_with_edit(honest, forged, at, lambda payload: edited_metadata(payload, change))
    status, verified = audit("verify", str(forged))
    assert status == 0 and verified["status"] == "sealed", verified
    status, replayed = replay_all(tmp_path, forged)
    assert status == 1
    assert_diverged_from(replayed, at, *(["grad_scaler/scale", "GradScaler's rule"] if edit == "scale" else ["grad_scaler skipped is false",
                                                                                                              "hold an inf or NaN"]))


def test_a_scale_off_the_rule_is_refused_before_it_is_used(tmp_path):
    """A loop that updates the scale every other step would record scales the auditor's rule does
    not give: the next scale() is refused, and nothing of that step is recorded."""
    if not CPU_SCALER:
        # A disabled scaler has no scale to check: the loop records as one without it.
        record(tmp_path / "every-other.zkdv", update_every=2)
        assert "grad_scaler" not in root_of(tmp_path / "every-other.zkdv")
        return
    with pytest.raises(RuntimeError, match="not the one its rule gives"):
        record(tmp_path / "every-other.zkdv", update_every=2)


def test_misuse_of_a_prepared_scaler_is_refused(tmp_path):
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tmp_path / "misuse.zkdv") as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
        scaler = proof.prepare(make_scaler())
        (x, y), = batches(1)
        if not CPU_SCALER:
            # torch 1.13 without CUDA: the prepared scaler is torch's disabled one, passed through.
            assert not scaler.is_enabled()
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                loss = loss_fn(proof.forward(model, x), y)
                assert scaler.scale(loss) is loss
                proof.backward(scaler.scale(loss))
                scaler.step(optimizer)
            scaler.update()
            assert proof.statistics["transactions"] == 1
            return
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            loss = loss_fn(proof.forward(model, x), y)
            with pytest.raises(RuntimeError, match="did not scale"):
                proof.backward(loss)
            proof.backward(scaler.scale(loss))
            with pytest.raises(RuntimeError, match="step through scaler.step"):
                optimizer.step()
            scaler.step(optimizer)
        with pytest.raises(RuntimeError, match="new_scale"):
            scaler.update(new_scale=8.0)
        scaler.update()
        with pytest.raises(RuntimeError, match="already prepared a GradScaler"):
            proof.prepare(torch.amp.GradScaler("cpu"))


def test_an_unprepared_scaler_is_refused_with_the_way_out(tmp_path):
    model = fresh_mlp()
    scaler = make_scaler()
    if not CPU_SCALER:
        assert not scaler.is_enabled() and scaler.scale(torch.ones(())).item() == 1.0  # nothing to refuse
        return
    with zkdv.torch.ZKDV(tmp_path / "unprepared.zkdv") as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
        (x, y), = batches(1)
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            loss = loss_fn(proof.forward(model, x), y)
            with pytest.raises(RuntimeError, match=r"proof.prepare\(scaler\)"):
                proof.backward(scaler.scale(loss))
            proof.backward(loss)
            optimizer.step()
        # The root, written at the first transaction, declared no scaler: too late for one now.
        with pytest.raises(RuntimeError, match="before the first transaction"):
            proof.prepare(scaler)
