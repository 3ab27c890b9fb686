"""Batches from a torch DataLoader with worker processes, shuffling by a seeded generator and
pin_memory (docs/python.md, "Data loading"): the loop trains bit for bit as without zkdv and
its tape replays exact; also with a dataset of dicts, collated into dict batches, and the loss
written as code. (No machine here pins memory: pin_memory=True without an
accelerator leaves the batches in ordinary memory, which is the path tested.)"""

import warnings

import pytest
import torch
import torch.nn.functional as F

import zkdv
import zkdv.torch
from conftest import assert_replays_exact, fresh_mlp

HAS_EXPORT = hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2
STEPS = 8


class Points(torch.utils.data.Dataset):
    def __init__(self, as_dicts=False):
        generator = torch.Generator().manual_seed(2)
        self.y = torch.randint(0, 3, (STEPS * 16,), generator=generator)
        self.x = torch.randn(STEPS * 16, 6, generator=generator) + self.y.unsqueeze(1).float()
        self.as_dicts = as_dicts

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        return {"inputs": self.x[i], "labels": self.y[i]} if self.as_dicts else (self.x[i], self.y[i])


def loader(as_dicts=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory without an accelerator
        return torch.utils.data.DataLoader(Points(as_dicts), batch_size=16, shuffle=True, num_workers=2, pin_memory=True,
                                           generator=torch.Generator().manual_seed(7))


def plain_training(as_dicts):
    model = fresh_mlp()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for batch in loader(as_dicts):
        x, y = (batch["inputs"], batch["labels"]) if as_dicts else batch
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model


def assert_same(a, b):
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


def test_a_data_loader_with_workers_and_a_seeded_shuffle(tmp_path):
    tape = tmp_path / "loader.zkdv"
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tape, replay_snapshot_interval=4) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=0.01))
        for x, y in loader():
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
    assert_same(model, plain_training(False))
    assert_replays_exact(tmp_path, tape, STEPS)


@pytest.mark.parametrize("program", ["torchscript", "exported-graph"] if HAS_EXPORT else ["torchscript"])
def test_dict_batches_from_a_data_loader_with_the_loss_written_as_code(tmp_path, program):
    tape = tmp_path / "dict-loader.zkdv"
    model = fresh_mlp()
    config = zkdv.ZKDVConfig(program=program)
    with zkdv.torch.ZKDV(tape, config, replay_snapshot_interval=4) as proof:
        model, optimizer = proof.prepare(model, torch.optim.Adam(model.parameters(), lr=0.01))
        for batch in loader(as_dicts=True):
            with proof.transaction(batch=batch):
                optimizer.zero_grad()
                proof.backward(F.cross_entropy(proof.forward(model, batch["inputs"]), batch["labels"]))
                optimizer.step()
    assert_same(model, plain_training(True))
    assert_replays_exact(tmp_path, tape, STEPS)
