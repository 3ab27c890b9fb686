"""Gradient accumulation (tape format 1.7, section 5.4): a transaction of several micro-batches,
each through proof.forward() and proof.backward() with its loss scaled as the loop writes it,
then one optimizer step. The loop trains bit for bit as the same loop in plain torch, its tape
replays exact, and a forged micro-batch (order, contents, scale) is diverged at its transaction."""

import json
import struct

import pytest
import torch

import zkdv
import zkdv.torch
from conftest import audit, batches, fresh_mlp, independent_tape, replay_all
from tape_edit import _records, edited_metadata, rechain_with_edit

STEPS = 10
MICRO = 4
SCALES = {
    "div_int": lambda loss: loss / MICRO,
    "div_float": lambda loss: loss / float(MICRO),
    "mul": lambda loss: loss * (1.0 / MICRO),
    "sum": lambda loss: loss,
}


def two_groups(model):
    weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
    biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
    return torch.optim.AdamW([{"params": weights, "weight_decay": 0.01}, {"params": biases, "weight_decay": 0.0}], lr=0.02)


def micro_batches(steps=STEPS):
    data = list(batches(steps * MICRO))
    return [data[MICRO * s:MICRO * (s + 1)] for s in range(steps)]


HAS_EXPORT = hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2


def record(tape, scale, clip=None, schedule=False, program="torchscript"):
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tape, zkdv.ZKDVConfig(program=program), replay_snapshot_interval=4) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        scheduler = proof.prepare(torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS)) if schedule else None
        for micro in micro_batches():
            with proof.transaction(batch=micro):
                optimizer.zero_grad()
                for x, y in micro:
                    proof.backward(scale(loss_fn(proof.forward(model, x), y)))
                if clip is not None:
                    proof.clip_grad_norm_(model.parameters(), clip)
                optimizer.step()
            if scheduler is not None:
                scheduler.step()
    return model


def train_plain(scale, clip=None, schedule=False):
    model = fresh_mlp()
    optimizer = two_groups(model)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=STEPS) if schedule else None
    loss_fn = torch.nn.CrossEntropyLoss()
    for micro in micro_batches():
        optimizer.zero_grad(set_to_none=True)
        for x, y in micro:
            scale(loss_fn(model(x), y)).backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimizer.step()
        if scheduler is not None:
            scheduler.step()
    return model




def header_of(payload):
    (length,) = struct.unpack_from("<Q", payload, 0)
    return json.loads(payload[8:8 + length])


def transactions_of(tape):
    return [header_of(payload) for kind, _, payload in _records(open(tape, "rb").read()) if kind == 4]


@pytest.mark.parametrize("scale", sorted(SCALES))
def test_an_accumulating_loop_trains_as_torch_and_replays_exact(tmp_path, scale):
    tape = tmp_path / (scale + ".zkdv")
    model = record(tape, SCALES[scale])
    plain = train_plain(SCALES[scale])
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(recorded.detach(), trained.detach()), name
    headers = transactions_of(tape)
    assert len(headers) == STEPS
    metadata = headers[0]["__metadata__"]
    assert metadata["micro_batches"] == str(MICRO)
    assert {"micro/%d/loss" % m for m in range(MICRO)} <= set(headers[0]) and "loss" not in headers[0], sorted(headers[0])
    scales = json.loads(metadata["loss_scales"]) if "loss_scales" in metadata else [None] * MICRO
    expected = {"div_int": {"op": "div", "by": MICRO}, "div_float": {"op": "div", "by": float(MICRO)},
                "mul": {"op": "mul", "by": 1.0 / MICRO}, "sum": None}[scale]
    assert scales == [expected] * MICRO, scales
    if scale == "div_int":
        assert isinstance(scales[0]["by"], int)
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["passed"], replayed
    assert replayed["verdicts"]["exact"] == STEPS, replayed["verdicts"]


@pytest.mark.parametrize("program", ["torchscript", "exported-graph"])
def test_the_real_loop_trains_as_torch_and_replays_exact(tmp_path, program):
    """AdamW in two groups, a cosine schedule, accumulation over 4 micro-batches, clipping at 1.0,
    with either program kind (the exported graph runs once per micro-batch too)."""
    tape = tmp_path / "real.zkdv"
    if program == "exported-graph" and not HAS_EXPORT:
        with pytest.raises(RuntimeError, match=r"needs torch 2\.x with torch\.export"):
            record(tape, SCALES["div_int"], program=program)
        return
    model = record(tape, SCALES["div_int"], clip=1.0, schedule=True, program=program)
    plain = train_plain(SCALES["div_int"], clip=1.0, schedule=True)
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(recorded.detach(), trained.detach()), name
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == STEPS, replayed


def test_what_the_replay_cannot_accumulate_is_refused(tmp_path):
    model = fresh_mlp()
    micro = micro_batches(3)
    with zkdv.torch.ZKDV(tmp_path / "refused.zkdv", replay_snapshot_interval=4) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        with proof.transaction(batch=micro[0]):
            optimizer.zero_grad()
            (x0, y0), (x1, y1) = micro[0][:2]
            loss = loss_fn(proof.forward(model, x0), y0)
            with pytest.raises(RuntimeError, match="before proof.backward"):
                proof.forward(model, x1)
            with pytest.raises(RuntimeError, match="divided or multiplied by a number"):
                proof.backward(loss / 4 + 0.01 * sum(p.square().sum() for p in model.parameters()))
            proof.backward(loss / 4)
            with pytest.raises(RuntimeError, match="micro-batch 1"):
                proof.forward(model, x0)  # not the next micro-batch's inputs
            proof.backward(loss_fn(proof.forward(model, x1), y1) / 4)
            with pytest.raises(RuntimeError, match="after 2 of the 4 micro-batches"):
                proof.clip_grad_norm_(model.parameters(), 1.0)
            with pytest.raises(RuntimeError, match="after 2 of the 4 micro-batches"):
                optimizer.step()
        # The refused step recorded nothing, and the next transaction is whole.
        with proof.transaction(batch=micro[1]):
            optimizer.zero_grad()
            for x, y in micro[1]:
                proof.backward(loss_fn(proof.forward(model, x), y) / 4)
            optimizer.step()
        assert proof.statistics["transactions"] == 1
    status, replayed = replay_all(tmp_path, tmp_path / "refused.zkdv")
    assert status == 0 and replayed["verdicts"]["exact"] == 1, replayed




def test_an_independent_writers_accumulating_tape_replays_exact(tmp_path):
    tape = independent_tape(tmp_path, "independent.zkdv", "--accumulate", "3", "--clip-grad-norm", "0.3", steps=12)
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == 12, replayed


def renamed(payload, mapping):
    """The blob with tensors renamed (their bytes kept): micro/1/... <-> micro/2/..."""
    (length,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + length])
    header = {mapping.get(name, name): value for name, value in header.items()}
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + payload[8 + length:]


def swap_micro(payload):
    """Micro-batches 1 and 2 trade their batches, each keeping its loss. (Trading both is the
    claim of another order of the same data: caught where the order changes the accumulated
    gradient's rounding or a buffer, and where it changes neither it is the same step.)"""
    mapping = {}
    for name in header_of(payload):
        for a, b in (("micro/1/batch/", "micro/2/batch/"), ("micro/2/batch/", "micro/1/batch/")):
            if name.startswith(a):
                mapping[name] = b + name[len(a):]
    return renamed(payload, mapping)


def scaled_batch(payload):
    header = header_of(payload)
    start, _ = header["micro/2/batch/0"]["data_offsets"]
    (length,) = struct.unpack_from("<Q", payload, 0)
    at = 8 + length + start
    edited = bytearray(payload)
    (value,) = struct.unpack_from("<f", edited, at)
    struct.pack_into("<f", edited, at, value + 0.5)
    return bytes(edited)


def halved_scale(metadata):
    scales = json.loads(metadata["loss_scales"])
    scales[1] = {"op": "div", "by": 2}
    metadata["loss_scales"] = json.dumps(scales)


@pytest.mark.parametrize("edit", ["order", "contents", "scale"])
def test_a_forged_micro_batch_is_diverged_at_its_transaction(tmp_path, edit):
    # No sampled checks: the edit changes every later chain-bound draw, which a forger would have to match.
    honest = independent_tape(tmp_path, "honest.zkdv", "--accumulate", "3", "--update-check", "0", "--state-check", "0", steps=12)
    forged = tmp_path / ("forged-" + edit + ".zkdv")
    edits = {"order": swap_micro, "contents": scaled_batch, "scale": lambda payload: edited_metadata(payload, halved_scale)}
    rechain_with_edit(honest, forged, 5, edits[edit])
    status, verified = audit("verify", str(forged))
    assert status == 0 and verified["status"] == "sealed", verified
    status, replayed = replay_all(tmp_path, forged)
    assert status == 1 and not replayed["passed"], replayed
    first = replayed["first_failures"][0]
    assert first["index"] == 5 and first["verdict"] == "diverged", replayed["first_failures"]
    if edit != "scale":
        # The swapped or edited micro-batch's loss is not the one its batch gives.
        assert "micro-batch 1 loss" in first["detail"] or "micro-batch 2 loss" in first["detail"], first["detail"]
    # Everything before the forged transaction replays exact; after it the replay goes on from its own state.
    assert replayed["verdicts"]["exact"] >= 5 and replayed["verdicts"]["diverged"] >= 1, replayed["verdicts"]
