"""Issue 48, items 9 and 10: nothing a trainer claims (a torch release, or none) and nothing
it builds into its model (a parameter whose gradient is exactly zero, a buffer the step never
writes) turns a real edit into "unverifiable". The edits are made as an independent writer
would, re-chained and re-sealed, and replayed in another numerical environment (two intra-op
threads against the recorded one), where the envelope and the rounding excuses apply."""

import pytest
import torch

import zkdv
import zkdv.torch
from conftest import audit
from tape_edit import ROOT, SNAPSHOT, edited_f32_tensor, edited_root, rechain_records

STEPS = 24


class GatedModel(torch.nn.Module):
    """An input shift no step writes, a bias before BatchNorm (its gradient is rounding noise,
    which Adam turns into full steps) and a trigger the data never opens (its gradient is
    exactly zero): the three places an excuse might hide an edit."""

    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.zeros(6))
        self.lin = torch.nn.Linear(6, 8)
        self.bn = torch.nn.BatchNorm1d(8)
        self.out = torch.nn.Linear(8, 3)
        self.trigger = torch.nn.Parameter(torch.zeros(3))

    def forward(self, x):
        gate = (x[:, :1] > 1.0e6).to(x.dtype)
        return self.out(torch.relu(self.bn(self.lin(x - self.shift)))) + gate * self.trigger


def data(steps):
    generator = torch.Generator().manual_seed(7)
    centers = torch.randn(3, 6, generator=generator) * 2
    for _ in range(steps):
        y = torch.randint(0, 3, (16,), generator=generator)
        yield centers[y] + torch.randn(16, 6, generator=generator), y


@pytest.fixture(scope="module")
def honest_tape(tmp_path_factory):
    torch.set_num_threads(1)
    torch.manual_seed(17)
    model = GatedModel()
    path = tmp_path_factory.mktemp("claims") / "honest.zkdv"
    loss_fn = torch.nn.CrossEntropyLoss()
    with zkdv.torch.ZKDV(str(path)) as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.Adam(model.parameters(), lr=0.01))
        for x, y in data(STEPS):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
    return path


def replay_on_two_threads(tmp_path, tape, select="all"):
    """Replays `select` with two intra-op threads (the tape records one). `ids:23` replays the
    last segment, whose last transaction compares the final state, and lists every failure of
    it (a replay lists the 20 lowest-indexed)."""
    case = tmp_path / (tape.stem + ".zkaudit")
    status, ingested = audit("ingest", str(tape), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", select, "--intra-op-threads", "2")
    assert replayed["numeric_regime"] == "cross-environment", replayed
    assert replayed["replayed"] == (STEPS if select == "all" else STEPS - 12)
    return status, replayed


def test_the_honest_tape_is_never_diverged_on_two_threads(tmp_path, honest_tape):
    status, replayed = replay_on_two_threads(tmp_path, honest_tape)
    assert replayed["verdicts"]["diverged"] == 0, replayed["first_failures"]
    assert replayed["trainers_failures"] == 0, replayed


def final_state_edit(tensor, edit, release=None):
    def edit_record(kind, number, payload, last):
        if kind == SNAPSHOT and last:
            return edited_f32_tensor(payload, tensor, edit)
        if kind == ROOT and release is not None:
            return edited_root(payload, lambda root: root["producer"].__setitem__("torch_version", release))
        return payload
    return edit_record


def shifted(values):
    return [values[0] + 0.5] + values[1:]


def armed(values):
    return [5.0] * len(values)


@pytest.mark.parametrize("release", [None, "2.15.0", "1.13.0", "2.11.0", "banana", ""])
@pytest.mark.parametrize("tensor,edit", [("buffer/model.shift", shifted), ("param/model.trigger", armed)], ids=["unwritten buffer", "gated parameter"])
def test_an_edit_no_step_could_make_is_diverged_whatever_the_tape_claims(tmp_path, honest_tape, tensor, edit, release):
    edited = tmp_path / "edited.zkdv"
    rechain_records(honest_tape, edited, final_state_edit(tensor, edit, release))
    status, verified = audit("verify", str(edited))
    assert status == 0 and verified["status"] == "sealed", verified
    status, replayed = replay_on_two_threads(tmp_path, edited, "ids:%d" % (STEPS - 1))
    assert status == 1 and not replayed["passed"] and replayed["failed"], replayed
    if replayed["trainers_failures"]:
        # A claim of the other proven release whose contract refuses this release's options
        # (torch 1.13's Adam knows no decoupled_weight_decay): the trainer's own failure.
        assert all(f["cause"] == "program-refused" for f in replayed["first_failures"]), replayed["first_failures"]
        return
    assert replayed["verdicts"]["diverged"] >= 1, replayed
    last = [f for f in replayed["first_failures"] if f["index"] == STEPS - 1]
    assert last and last[0]["verdict"] == "diverged", replayed["first_failures"]
    name = tensor.split("/", 1)[1]
    named = [c for c in last[0]["not_exact"] if c["tensor"] == name and c["verdict"] == "diverged"]
    assert named and "judged bit for bit" in named[0].get("note", ""), last[0]


OTHER_PROVEN_RELEASE = "2.15.0" if torch.__version__.startswith("1.") else "1.13.0"


@pytest.mark.parametrize("release", [OTHER_PROVEN_RELEASE, "banana"])
def test_an_autocast_edit_is_never_passed_whatever_release_the_tape_claims(tmp_path, release):
    """The one excuse a release claim keeps: steps under autocast round at its precision, and
    differ between releases by that much, so across *proven* releases their divergence is
    unverifiable (a replay with the recording release decides). The attack: an armed trigger
    under autocast is never passed; under any other claim it stays diverged."""
    torch.set_num_threads(1)
    torch.manual_seed(17)
    model = GatedModel()
    honest = tmp_path / "autocast.zkdv"
    loss_fn = torch.nn.CrossEntropyLoss()
    with zkdv.torch.ZKDV(str(honest)) as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.05))
        for x, y in data(STEPS):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = loss_fn(proof.forward(model, x), y)
                proof.backward(loss)
                optimizer.step()
    edited = tmp_path / "autocast-edited.zkdv"
    rechain_records(honest, edited, final_state_edit("param/model.trigger", armed, release))
    case = tmp_path / "autocast.zkaudit"
    status, ingested = audit("ingest", str(edited), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "ids:%d" % (STEPS - 1))
    assert status == 1 and not replayed["passed"] and not replayed["consistent_within_rounding"], replayed
    last = [f for f in replayed["first_failures"] if f["index"] == STEPS - 1]
    assert last, replayed["first_failures"]
    if release == "banana":
        assert last[0]["verdict"] == "diverged", last[0]
    else:
        assert last[0]["verdict"] in ("unverifiable", "diverged"), last[0]
