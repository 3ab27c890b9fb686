"""Tapes recorded through zkdv.torch verify, ingest and replay exact in the C++ auditor."""

import pytest
import torch

import zkdv
import zkdv.torch
from conftest import MODELS, OPTIMIZERS, assert_example_replays_exact, assert_replays_exact, audit, batches, fresh_mlp, train_with_zkdv

SAMPLED = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.5, update_check_probability=0.5, seed=9))


@pytest.mark.parametrize("optimizer", sorted(OPTIMIZERS))
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_real_model_tape_replays_exact(tmp_path, kind, optimizer):
    """An MLP, a CNN with BatchNorm and a Transformer encoder layer, each with SGD+momentum,
    Adam, AdamW, RMSprop and Adagrad: the tape verifies, ingests and replays exact."""
    steps = 10
    make, data = MODELS[kind]
    tape = tmp_path / ("%s-%s.zkdv" % (kind, optimizer))
    model = make()
    buffers = {name: value.clone() for name, value in model.named_buffers()}
    losses = train_with_zkdv(tape, model, OPTIMIZERS[optimizer](model.parameters()), steps, SAMPLED, data=data,
                             replay_snapshot_interval=4)
    assert losses[-1] < losses[0], "the loop trains: %s" % losses
    # The sealed step updated the user's model's own buffers (BatchNorm's running statistics).
    for name, before in buffers.items():
        assert not torch.equal(dict(model.named_buffers())[name], before), "%s never moved" % name
    if kind == "cnn":
        assert int(model.norm.num_batches_tracked) == steps
    assert_replays_exact(tmp_path, tape, steps)


def test_an_exception_leaves_the_tape_unsealed_up_to_its_last_step(tmp_path):
    tape = tmp_path / "interrupted.zkdv"
    model = fresh_mlp()
    loss_fn = torch.nn.CrossEntropyLoss()
    with pytest.raises(KeyboardInterrupt):
        with zkdv.torch.ZKDV(tape) as proof:
            model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.1))
            for step, (x, y) in enumerate(batches(10)):
                with proof.transaction(batch=(x, y)):
                    proof.backward(loss_fn(proof.forward(model, x), y))
                    if step == 7:
                        raise KeyboardInterrupt  # as Ctrl-C between the backward and the step
                    optimizer.step()
                    optimizer.zero_grad()
    status, verified = audit("verify", str(tape))
    assert status == 1 and verified["status"] == "unsealed", verified
    assert verified["transactions"] == 7


def test_a_rechained_edit_is_caught_at_its_transaction(tmp_path):
    """The last transaction's loss halved and the chain and seal recomputed: the tape still
    verifies as sealed (its draws are keyed by the record before it), and the replay names
    that transaction, and only it, as diverged."""
    from tape_edit import rechain_with_scaled_loss

    steps = 10
    honest, edited = tmp_path / "honest.zkdv", tmp_path / "edited.zkdv"
    model = fresh_mlp()
    train_with_zkdv(honest, model, OPTIMIZERS["adam"](model.parameters()), steps, replay_snapshot_interval=4)
    rechain_with_scaled_loss(honest, edited, steps - 1)
    assert edited.read_bytes() != honest.read_bytes()

    status, verified = audit("verify", str(edited))
    assert status == 0 and verified["status"] == "sealed", verified
    case = tmp_path / "edited.zkaudit"
    status, ingested = audit("ingest", str(edited), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all")
    assert status == 1 and not replayed["passed"], replayed
    assert replayed["verdicts"]["exact"] == steps - 1, replayed["verdicts"]
    assert [(f["index"], f["verdict"]) for f in replayed["first_failures"]] == [(steps - 1, "diverged")], replayed["first_failures"]


def test_the_readme_example_records_a_tape_that_replays_exact(tmp_path):
    # app/python/examples/train_mlp.py is the README's example: it must keep working as shown.
    assert_example_replays_exact(tmp_path, "train_mlp.py", 40)


class MaskedMLP(torch.nn.Module):
    """Dropout done the way the refusal asks: the mask is drawn outside the step and comes in
    the batch, after the targets, as a further model input."""

    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(6, 16)
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x, mask):
        return self.out(torch.relu(self.hidden(x)) * mask)


def masked_batches(steps, seed=8):
    generator = torch.Generator().manual_seed(seed)
    for x, y in batches(steps):
        yield x, y, (torch.rand(16, 16, generator=generator) >= 0.5).float() * 2.0


def test_randomness_passed_through_the_batch_replays_exact(tmp_path):
    steps = 8
    tape = tmp_path / "masked.zkdv"
    torch.manual_seed(3)
    recorded = MaskedMLP()
    torch.manual_seed(3)
    plain = MaskedMLP()
    loss_fn = torch.nn.CrossEntropyLoss()
    with zkdv.torch.ZKDV(tape, SAMPLED) as proof:
        model, loss_fn, optimizer = proof.prepare(recorded, loss_fn, torch.optim.Adam(recorded.parameters(), lr=0.01))
        for x, y, mask in masked_batches(steps):
            with proof.transaction(batch=(x, y, mask)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x, mask), y))
                optimizer.step()
    reference = torch.optim.Adam(plain.parameters(), lr=0.01)
    for x, y, mask in masked_batches(steps):
        reference.zero_grad()
        loss_fn(plain(x, mask), y).backward()
        reference.step()
    assert all(torch.equal(a, b) for a, b in zip(recorded.parameters(), plain.parameters()))
    assert_replays_exact(tmp_path, tape, steps)
