"""Mixed precision (tape format 1.7, section 5.5): the autocast a transaction's forwards ran under
is recorded, and the replay runs the sealed program under it. CPU bfloat16 on both lanes (CUDA
float16 and bfloat16 need a device): the loop trains bit for bit as the same loop without zkdv,
its tape replays exact, and a tape whose autocast was removed is diverged where it was."""

import json

import pytest
import torch

import zkdv
import zkdv.torch
from conftest import audit, batches, fresh_mlp, fresh_transformer, replay_all, sequence_batches
from tape_edit import edited_metadata, rechain_with_edit
from test_gradient_accumulation import HAS_EXPORT, transactions_of
from test_schedules import root_of

STEPS = 8
MICRO = 2


def two_groups(model):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=0.01)


def warmup_cosine(optimizer, warmup=3):
    # The usual real-loop schedule: a linear warm-up, then a cosine decay (SequentialLR).
    S = torch.optim.lr_scheduler
    return S.SequentialLR(optimizer, [S.LinearLR(optimizer, start_factor=0.1, total_iters=warmup),
                                      S.CosineAnnealingLR(optimizer, T_max=STEPS - warmup)], milestones=[warmup])


def micro_batches(data, steps=STEPS):
    flat = list(data(steps * MICRO))
    return [flat[MICRO * s:MICRO * (s + 1)] for s in range(steps)]


def record(tape, make, data, program="torchscript", sampling=None):
    model = make()
    config = zkdv.ZKDVConfig(program=program, **({"sampling_policy": sampling} if sampling else {}))
    with zkdv.torch.ZKDV(tape, config, replay_snapshot_interval=4) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), two_groups(model))
        scheduler = proof.prepare(warmup_cosine(optimizer))
        for micro in micro_batches(data):
            with proof.transaction(batch=micro):
                optimizer.zero_grad()
                for x, y in micro:
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        loss = loss_fn(proof.forward(model, x), y)
                    proof.backward(loss / MICRO)
                proof.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            scheduler.step()
    return model


def train_plain(make, data):
    model = make()
    optimizer = two_groups(model)
    scheduler = warmup_cosine(optimizer)
    loss_fn = torch.nn.CrossEntropyLoss()
    for micro in micro_batches(data):
        optimizer.zero_grad(set_to_none=True)
        for x, y in micro:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = loss_fn(model(x), y)
            (loss / MICRO).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
    return model


MODELS = {"mlp": (fresh_mlp, batches), "transformer": (fresh_transformer, sequence_batches)}


@pytest.mark.parametrize("program", ["torchscript", "exported-graph"])
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_the_whole_real_loop_under_autocast_trains_as_torch_and_replays_exact(tmp_path, kind, program):
    """AdamW in two groups, a warm-up then cosine schedule (checked), accumulation, clipping at 1.0 and CPU bfloat16 autocast."""
    make, data = MODELS[kind]
    tape = tmp_path / (kind + ".zkdv")
    if program == "exported-graph" and not HAS_EXPORT:
        with pytest.raises(RuntimeError, match=r"needs torch 2\.x with torch\.export"):
            record(tape, make, data, program)
        return
    try:
        plain = train_plain(make, data)
    except RuntimeError as refusal:
        # torch 1.13's CPU autocast casts a Transformer layer's input but not layer_norm's
        # weights ("expected scalar type BFloat16 but found Float"), even without zkdv: where
        # torch cannot run the loop, the recorded loop stops with the same error.
        assert not HAS_EXPORT and kind == "transformer", refusal
        with pytest.raises(RuntimeError, match="expected scalar type BFloat16 but found Float"):
            record(tape, make, data, program)
        return
    model = record(tape, make, data, program)
    for (name, recorded), trained in zip(model.named_parameters(), plain.parameters()):
        assert torch.equal(recorded.detach(), trained.detach()), name
    assert root_of(tape)["optimizer"]["schedule"]["scheduler"]["kind"] == "SequentialLR"
    headers = transactions_of(tape)
    assert all(json.loads(h["__metadata__"]["autocast"]) == {"cpu": "BF16"} for h in headers), headers[0]["__metadata__"]
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["passed"], replayed
    assert replayed["verdicts"]["exact"] == STEPS, replayed["verdicts"]


def test_autocast_changes_the_numbers():
    """Without it the step computes otherwise: a replay that ignored the recorded autocast would
    not replay the tests above exact."""
    model, loss_fn = fresh_mlp(), torch.nn.CrossEntropyLoss()
    x, y = micro_batches(batches, 1)[0][0]
    with torch.autocast("cpu", dtype=torch.bfloat16):
        cast = loss_fn(model(x), y)
    assert cast.dtype == torch.float32 and not torch.equal(cast.detach(), loss_fn(model(x), y).detach())


def test_a_tape_whose_autocast_was_removed_is_diverged_there(tmp_path):
    honest = tmp_path / "honest.zkdv"
    record(honest, fresh_mlp, batches, sampling=zkdv.SamplingPolicy(state_check_probability=0.0, update_check_probability=0.0))
    forged = tmp_path / "forged.zkdv"

    def drop(metadata):
        del metadata["autocast"]

    rechain_with_edit(honest, forged, 3, lambda payload: edited_metadata(payload, drop))
    status, verified = audit("verify", str(forged))
    assert status == 0 and verified["status"] == "sealed", verified
    status, replayed = replay_all(tmp_path, forged)
    assert status == 1
    first = replayed["first_failures"][0]
    assert first["index"] == 3 and first["verdict"] == "diverged", replayed["first_failures"]
    assert "micro-batch 0 loss" in first["detail"], first["detail"]
    assert replayed["verdicts"]["exact"] >= 3, replayed["verdicts"]
