"""Gradient clipping inside the recorded step (tape format 1.7, section 5.1): proof.clip_grad_norm_
and proof.clip_grad_value_ apply torch.nn.utils' arithmetic in the C++ core, record it per
transaction, and the replay re-applies it; an honest clipped loop trains bit for bit as the
same loop without zkdv and replays exact, a forged clip is diverged at its transaction."""

import json
import math

import pytest
import torch

import zkdv.torch
from zkdv import _native
from conftest import audit, batches, fresh_mlp, independent_tape, replay_all
from tape_edit import _records, edited_metadata, rechain_with_edit, scaled_scalar

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
STEPS = 14
BITS = {torch.float32: torch.int32, torch.float64: torch.int64, torch.bfloat16: torch.int16, torch.float16: torch.int16}


def same_bits(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and bool(torch.equal(a.view(BITS[a.dtype]), b.view(BITS[b.dtype])))


def gradients(dtype, seed, scale=1.0, poison=None):
    generator = torch.Generator().manual_seed(seed)
    shapes = [(3, 4), (5,), (), (0,), (2, 3, 2), (17,)]
    tensors = [(torch.randn(shape, generator=generator, dtype=torch.float64) * scale).to(dtype) for shape in shapes]
    if poison is not None:
        tensors[1][2] = poison
    return tensors


def torch_clip(kind, grads, value, norm_type, error_if_nonfinite, foreach):
    """torch.nn.utils' own call on parameters holding `grads`: (total norm or None, clipped grads)."""
    parameters = []
    for g in grads:
        p = torch.zeros_like(g, requires_grad=True)
        p.grad = g.clone()
        parameters.append(p)
    extra = {} if foreach is None else {"foreach": foreach}
    if kind == "clip_grad_norm":
        total = torch.nn.utils.clip_grad_norm_(parameters, value, norm_type, error_if_nonfinite, **extra)
    else:
        total = torch.nn.utils.clip_grad_value_(parameters, value, **extra)
    return total, [p.grad for p in parameters]


def zkdv_clip(kind, grads, value, norm_type, error_if_nonfinite, foreach):
    clipped = [g.clone() for g in grads]
    total = _native.gradient_transform(clipped, kind, value, norm_type, error_if_nonfinite, foreach, torch.__version__)
    return total, clipped


FOREACH = [None, False, True] if TORCH2 else [None]


@pytest.mark.parametrize("foreach", FOREACH)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.5, 0.5, math.inf])
@pytest.mark.parametrize("max_norm", [0.05, 1e6])
def test_clip_grad_norm_is_torchs_bit_for_bit(max_norm, norm_type, dtype, foreach):
    grads = gradients(dtype, seed=(int(norm_type * 7) if math.isfinite(norm_type) else 5) % 97 + 3, scale=2.0)
    if math.isinf(norm_type):
        grads = [g for g in grads if g.numel()]  # no inf norm of an empty gradient: the next test
    expected_total, expected = torch_clip("clip_grad_norm", grads, max_norm, norm_type, False, foreach)
    total, clipped = zkdv_clip("clip_grad_norm", grads, max_norm, norm_type, False, foreach)
    assert same_bits(total, expected_total), (total, expected_total)
    for i, (ours, theirs) in enumerate(zip(clipped, expected)):
        assert same_bits(ours, theirs), (i, ours, theirs)
    if max_norm < 1:
        assert any(not same_bits(c, g) for c, g in zip(clipped, grads) if c.numel()), "nothing was clipped: the case proves nothing"


@pytest.mark.parametrize("foreach", FOREACH)
def test_an_empty_gradient_has_no_inf_norm_in_torch_or_here(foreach):
    """The inf norm of an empty tensor has no identity: torch refuses it (1.13's max(), 2.x's
    norm kernels), and so does the port, before anything is scaled."""
    grads = gradients(torch.float32, seed=8)
    with pytest.raises(RuntimeError):
        torch_clip("clip_grad_norm", grads, 1.0, math.inf, False, foreach)
    kept = [g.clone() for g in grads]
    with pytest.raises(RuntimeError):
        _native.gradient_transform(kept, "clip_grad_norm", 1.0, math.inf, False, foreach, torch.__version__)
    assert all(same_bits(a, b) for a, b in zip(kept, grads))


@pytest.mark.parametrize("foreach", FOREACH)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("clip_value", [0.3, 0.0, -0.5])
def test_clip_grad_value_is_torchs_bit_for_bit(clip_value, dtype, foreach):
    grads = gradients(dtype, seed=21)
    _, expected = torch_clip("clip_grad_value", grads, clip_value, 2.0, False, foreach)
    total, clipped = zkdv_clip("clip_grad_value", grads, clip_value, 2.0, False, foreach)
    assert total is None or not total.numel() or total.dim() == 0
    for i, (ours, theirs) in enumerate(zip(clipped, expected)):
        assert same_bits(ours, theirs), (i, ours, theirs)


@pytest.mark.parametrize("poison", [math.nan, math.inf])
def test_a_nonfinite_norm_scales_as_torch_or_raises_before_anything_changes(poison):
    grads = gradients(torch.float32, seed=5, poison=poison)
    expected_total, expected = torch_clip("clip_grad_norm", grads, 1.0, 2.0, False, None)
    total, clipped = zkdv_clip("clip_grad_norm", grads, 1.0, 2.0, False, None)
    assert same_bits(total, expected_total)
    assert all(same_bits(a, b) for a, b in zip(clipped, expected))
    with pytest.raises(RuntimeError, match="non-finite"):
        torch_clip("clip_grad_norm", grads, 1.0, 2.0, True, None)
    kept = [g.clone() for g in grads]
    with pytest.raises(RuntimeError, match="non-finite"):
        _native.gradient_transform(kept, "clip_grad_norm", 1.0, 2.0, True, None, torch.__version__)
    assert all(same_bits(a, b) for a, b in zip(kept, grads)), "the refused clip changed a gradient"


def two_groups(model):
    weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return torch.optim.AdamW([{"params": weights, "weight_decay": 0.01}, {"params": biases, "weight_decay": 0.0}], lr=0.02)


MAX_NORM = 0.5
CLIP_VALUE = 0.05


def record_clipped(tape, steps=STEPS, by_value=True):
    model = fresh_mlp()
    norms = []
    with zkdv.torch.ZKDV(tape, replay_snapshot_interval=6) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        for x, y in batches(steps):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                norms.append(proof.clip_grad_norm_(model.parameters(), MAX_NORM))
                if by_value:
                    proof.clip_grad_value_(model.parameters(), CLIP_VALUE)
                optimizer.step()
    return model, norms


def train_plain_clipped(steps=STEPS, by_value=True):
    model = fresh_mlp()
    optimizer = two_groups(model)
    loss_fn = torch.nn.CrossEntropyLoss()
    norms = []
    for x, y in batches(steps):
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        norms.append(torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM))
        if by_value:
            torch.nn.utils.clip_grad_value_(model.parameters(), CLIP_VALUE)
        optimizer.step()
    return model, norms


def transactions_of(tape):
    """(metadata, header) of every transaction record."""
    import struct

    found = []
    for kind, _, payload in _records(open(tape, "rb").read()):
        if kind == 4:
            (length,) = struct.unpack_from("<Q", payload, 0)
            header = json.loads(payload[8:8 + length])
            found.append((header.pop("__metadata__"), header))
    return found




@pytest.mark.parametrize("by_value", [False, True], ids=["norm", "norm+value"])
def test_a_clipped_loop_trains_as_torch_and_replays_exact(tmp_path, by_value):
    tape = tmp_path / "clipped.zkdv"
    model, norms = record_clipped(tape, by_value=by_value)
    plain, plain_norms = train_plain_clipped(by_value=by_value)
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(recorded.detach(), trained.detach()), name
    assert all(same_bits(a.detach(), b.detach()) for a, b in zip(norms, plain_norms))
    assert sum(float(n) > MAX_NORM for n in norms) >= STEPS // 2, "the clip changed too few steps for the test to prove anything"

    records = transactions_of(tape)
    assert len(records) == STEPS
    for (metadata, header), norm in zip(records, norms):
        transforms = json.loads(metadata["gradient_transforms"])
        assert transforms[0]["kind"] == "clip_grad_norm" and transforms[0]["max_norm"] == MAX_NORM, transforms
        assert transforms[0]["foreach"] is (True if TORCH2 else None), transforms
        assert [t["kind"] for t in transforms[1:]] == (["clip_grad_value"] if by_value else [])
        assert "gradients/total_norm/0" in header and "gradients/total_norm/1" not in header

    status, info = audit("info", str(tape))
    assert status == 0, info
    uses = info["gradient_transforms"]["uses"]
    assert len(uses) == 1 and uses[0]["transactions"] == STEPS and (uses[0]["first"], uses[0]["last"]) == (0, STEPS - 1), uses
    assert uses[0]["transforms"].startswith("clip_grad_norm_(max_norm=0.5, norm_type=2"), uses
    assert ("then clip_grad_value_(clip_value=0.05" in uses[0]["transforms"]) == by_value, uses

    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["passed"], replayed
    assert replayed["verdicts"]["exact"] == STEPS, replayed["verdicts"]


def test_an_unrecorded_clip_is_refused_naming_the_recorded_one(tmp_path):
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tmp_path / "raw.zkdv", replay_snapshot_interval=6) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        data = list(batches(3))
        x, y = data[0]
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x), y))
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1e-3)
            with pytest.raises(RuntimeError, match=r"proof\.clip_grad_norm_\(\)"):
                optimizer.step()
        x, y = data[1]
        with proof.transaction(batch=(x, y)):
            with pytest.raises(RuntimeError, match=r"before proof\.backward\(\)"):
                proof.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x), y))
            with pytest.raises(RuntimeError, match="every prepared parameter"):
                proof.clip_grad_norm_(list(model.parameters())[:2], 1.0)
            with pytest.raises(RuntimeError, match="norm_type must be a positive number"):
                proof.clip_grad_norm_(model.parameters(), 1.0, norm_type=-2.0)
            proof.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            with pytest.raises(RuntimeError, match=r"after optimizer\.step\(\)"):
                proof.clip_grad_value_(model.parameters(), 1.0)
        assert proof.statistics["transactions"] == 1
    # Outside a transaction it is torch's own call.
    model.zero_grad()
    torch.nn.CrossEntropyLoss()(model(x), y).backward()
    assert float(proof.clip_grad_norm_(model.parameters(), 1e-4)) > 1e-4




def test_an_independent_writers_clipped_tape_replays_exact(tmp_path):
    tape = independent_tape(tmp_path, "independent.zkdv", "--clip-grad-norm", "0.2", "--clip-grad-value", "0.02")
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 14, replayed


def assert_diverged_from(replayed, index, *said):
    assert not replayed["passed"], replayed
    first = replayed["first_failures"][0]
    assert first["index"] == index and first["verdict"] == "diverged", replayed["first_failures"]
    for text in said:
        assert text in first["detail"], first["detail"]
    assert replayed["verdicts"]["exact"] >= index, replayed["verdicts"]


def test_a_step_clipped_otherwise_than_recorded_is_diverged_there(tmp_path):
    """A dishonest trainer clips step 8 at half the max_norm it records: the total norm (taken
    before clipping) replays exact, the update does not."""
    tape = independent_tape(tmp_path, "forged.zkdv", "--clip-grad-norm", "0.2", "--forge-clip", "8")
    status, replayed = replay_all(tmp_path, tape)
    assert status == 1
    assert_diverged_from(replayed, 8, "clip_grad_norm_(max_norm=0.2")


@pytest.mark.parametrize("edit", ["total_norm", "max_norm", "dropped"])
def test_an_edited_clip_rechained_is_caught_at_its_transaction(tmp_path, edit):
    honest = tmp_path / "honest.zkdv"
    record_clipped(honest, by_value=False)
    forged = tmp_path / ("forged-" + edit + ".zkdv")

    def change(metadata):
        transforms = json.loads(metadata["gradient_transforms"])
        transforms[0]["max_norm"] = MAX_NORM * 4
        metadata["gradient_transforms"] = json.dumps(transforms)

    def drop(metadata):
        del metadata["gradient_transforms"]

    edits = {
        "total_norm": lambda payload: scaled_scalar(payload, "gradients/total_norm/0", 1.5),
        "max_norm": lambda payload: edited_metadata(payload, change),
        "dropped": lambda payload: edited_metadata(payload, drop),
    }
    rechain_with_edit(honest, forged, 4, edits[edit])
    status, verified = audit("verify", str(forged))
    if edit == "dropped":
        # The total norm is left without its transform: a corrupt record, named where it is.
        assert status != 0 and verified["status"] == "corrupt" and verified["transactions"] == 4, verified
        assert "gradients/total_norm/0: the transaction records no gradient transform 0" in verified["problem"]["message"], verified
        return
    assert status == 0 and verified["status"] == "sealed", verified
    status, replayed = replay_all(tmp_path, forged)
    assert status == 1
    assert_diverged_from(replayed, 4, *(["gradients total_norm/0"] if edit == "total_norm" else ["clip_grad_norm_(max_norm=2"]))
