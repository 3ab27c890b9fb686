"""Exported-graph programs (docs/tape-format.md section 4.2) from the Python frontend: the
demo-like CNN, an MLP and a Transformer encoder replay exact; the same models sealed as
TorchScript and as exported graphs train bit for bit alike; hostile steps are refused with the
seed's messages; a dishonest edit is caught. On torch 1.x the kind is refused, naming what it
needs."""

import pytest
import torch

import zkdv
import zkdv.torch
from conftest import MODELS, OPTIMIZERS, assert_replays_exact, audit, batches, fresh_mlp, train_with_zkdv

EXPORTED = zkdv.ZKDVConfig(
    sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.5, update_check_probability=0.5, seed=9), program="exported-graph"
)
TORCHSCRIPT = zkdv.ZKDVConfig(sampling_policy=EXPORTED.sampling_policy)
HAS_EXPORT = hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2


def assert_needs_torch2(tmp_path):
    """Where torch has no torch.export (1.13), every exported-graph proof is refused at its
    first transaction, naming what it needs."""
    assert not HAS_EXPORT
    model = fresh_mlp()
    with pytest.raises(RuntimeError, match=r"needs torch 2\.x with torch\.export"):
        train_with_zkdv(tmp_path / "old-torch.zkdv", model, torch.optim.SGD(model.parameters(), lr=0.1), 1, EXPORTED)


@pytest.mark.parametrize("kind", sorted(MODELS))
def test_exported_program_replays_exact_and_matches_torchscript(tmp_path, kind):
    steps = 8
    make, data = MODELS[kind]
    if not HAS_EXPORT:
        return assert_needs_torch2(tmp_path)
    exported_model, scripted_model = make(), make()
    exported = tmp_path / ("%s-exported.zkdv" % kind)
    scripted = tmp_path / ("%s-torchscript.zkdv" % kind)
    exported_losses = train_with_zkdv(exported, exported_model, OPTIMIZERS["adam"](exported_model.parameters()), steps, EXPORTED,
                                      data=data, replay_snapshot_interval=4)
    scripted_losses = train_with_zkdv(scripted, scripted_model, OPTIMIZERS["adam"](scripted_model.parameters()), steps, TORCHSCRIPT,
                                      data=data, replay_snapshot_interval=4)
    # The same ATen operators in the same order through the same autograd: bit for bit alike.
    assert exported_losses == scripted_losses
    for (name, a), (_, b) in zip(exported_model.state_dict().items(), scripted_model.state_dict().items()):
        assert torch.equal(a, b), name
    assert b'"kind":"exported-graph"' in exported.read_bytes()[:4096]
    assert_replays_exact(tmp_path, exported, steps)


def test_a_random_operation_is_refused_with_the_seeds_message(tmp_path):
    if not HAS_EXPORT:
        return assert_needs_torch2(tmp_path)
    class Noisy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 3)

        def forward(self, x):
            return self.fc(x + torch.randn_like(x))

    model = Noisy()
    with pytest.raises(RuntimeError, match=r"attested Torch code contains random operations \(aten::randn_like\)"):
        train_with_zkdv(tmp_path / "noisy.zkdv", model, torch.optim.SGD(model.parameters(), lr=0.1), 1, EXPORTED)


def test_dropout_in_training_mode_is_refused(tmp_path):
    if not HAS_EXPORT:
        return assert_needs_torch2(tmp_path)
    _, data = MODELS["transformer"]
    from conftest import TinyTransformer

    torch.manual_seed(1)
    model = TinyTransformer(dropout=0.1)
    with pytest.raises(RuntimeError, match=r"random operations \(aten::dropout"):
        train_with_zkdv(tmp_path / "dropout.zkdv", model, torch.optim.SGD(model.parameters(), lr=0.1), 1, EXPORTED, data=data)


def test_captured_unprepared_tensor_state_is_refused(tmp_path):
    if not HAS_EXPORT:
        return assert_needs_torch2(tmp_path)
    class Captures(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(6, 3)
            self.scale = torch.ones(3)  # neither a parameter nor a buffer

        def forward(self, x):
            return self.fc(x) * self.scale

    model = Captures()
    with pytest.raises(RuntimeError, match=r"attested Torch code captured unprepared tensor state \(model\.scale\)"):
        train_with_zkdv(tmp_path / "captures.zkdv", model, torch.optim.SGD(model.parameters(), lr=0.1), 1, EXPORTED)


def test_a_rechained_edit_of_an_exported_tape_is_caught(tmp_path):
    if not HAS_EXPORT:
        return assert_needs_torch2(tmp_path)
    from tape_edit import rechain_with_scaled_loss

    steps = 8
    honest, edited = tmp_path / "honest.zkdv", tmp_path / "edited.zkdv"
    model = fresh_mlp()
    train_with_zkdv(honest, model, OPTIMIZERS["sgd_momentum"](model.parameters()), steps, EXPORTED, replay_snapshot_interval=4)
    # The last transaction: an earlier one would re-key every later transaction's draws (1.3).
    rechain_with_scaled_loss(honest, edited, steps - 1)
    status, verified = audit("verify", str(edited))
    assert status == 0 and verified["status"] == "sealed", verified
    case = tmp_path / "edited.zkaudit"
    status, ingested = audit("ingest", str(edited), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all")
    assert status == 1 and not replayed["passed"], replayed
    assert [(f["index"], f["verdict"]) for f in replayed["first_failures"]] == [(steps - 1, "diverged")], replayed["first_failures"]


def test_an_unknown_program_kind_is_refused():
    with pytest.raises(ValueError, match="torchscript"):
        zkdv.torch.ZKDV("/nonexistent/never-created.zkdv", zkdv.ZKDVConfig(program="aot-inductor"))


def test_explain_traces_an_exported_graph_program(tmp_path):
    """zkdv-audit explain replays an exported-graph program on two sides and traces its
    operators as it does TorchScript's: the forward's ATen calls, the backward's autograd
    nodes and the optimizer's arithmetic, in the same order on both sides."""
    if not HAS_EXPORT:
        return assert_needs_torch2(tmp_path)
    make, data = MODELS["mlp"]
    model = make()
    tape = tmp_path / "mlp-exported.zkdv"
    train_with_zkdv(tape, model, OPTIMIZERS["adam"](model.parameters()), 6, EXPORTED, data=data, replay_snapshot_interval=4)
    case = tmp_path / "mlp-exported.zkaudit"
    status, ingested = audit("ingest", str(tape), "--case", str(case))
    assert status == 0, ingested
    # Transaction 5 starts its segment's second step: the trace covers the step explained only.
    status, explained = audit("explain", str(case), "5", "--devices", "cpu,cpu@threads=2", "--all")
    assert status in (0, 1), explained
    assert explained["transaction"] == 5 and explained["granularity"] == "operator", explained
    for side in explained["sides"]:
        assert side["verdict"] == "exact", side
        assert side["traced"] > 10, side
    assert explained["parted"] is None, explained["parted"]
    assert explained["compared"] == len(explained["rows"]) > 10
    calls = {(row["phase"], row["op"]) for row in explained["rows"]}
    phases = {phase for phase, _ in calls}
    assert {"forward", "backward"} <= phases, calls
    # The same side twice is the same numbers: nothing differs, not even within rounding.
    status, same = audit("explain", str(case), "5", "--devices", "cpu,cpu")
    assert status == 0 and not same["diverged"], same
    assert same["first_difference"] is None and same["rounding"] == 0 and same["beyond"] == 0, same
