"""Tapes recorded through zkdv.torch verify, ingest and replay exact in the C++ auditor."""

import pytest
import torch

import zkdv
from conftest import audit, fresh_mlp, train_with_zkdv

OPTIMIZERS = {
    "sgd_momentum": lambda parameters: torch.optim.SGD(parameters, lr=0.05, momentum=0.9),
    "adam": lambda parameters: torch.optim.Adam(parameters, lr=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_tape_replays_exact(tmp_path, name):
    steps = 20
    tape = tmp_path / ("%s.zkdv" % name)
    model = fresh_mlp()
    config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.5, update_check_probability=0.5, seed=9))
    losses = train_with_zkdv(tape, model, OPTIMIZERS[name](model.parameters()), steps, config, replay_snapshot_interval=6)
    assert losses[-1] < losses[0], "the loop trains: %s" % losses

    status, verified = audit("verify", str(tape))
    assert status == 0 and verified["status"] == "sealed", verified
    assert verified["transactions"] == steps

    case = tmp_path / ("%s.zkaudit" % name)
    status, ingested = audit("ingest", str(tape), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all")
    assert status == 0 and replayed["passed"], replayed
    assert replayed["replayed"] == steps
    assert replayed["verdicts"]["exact"] == steps, replayed["verdicts"]
