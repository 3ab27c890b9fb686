"""The seed's API names and prepare()'s one-in-one-out, several-in-a-tuple-out rule."""

import torch

import zkdv
import zkdv.overlap
import zkdv.torch
from conftest import fresh_mlp


def test_seed_names():
    policy = zkdv.SamplingPolicy(state_check_probability=0.25, update_check_probability=0.5)
    config = zkdv.ZKDVConfig(sampling_policy=policy)
    assert config.sampling_policy.state_check_probability == 0.25
    assert config.sampling_policy.update_check_probability == 0.5
    assert zkdv.overlap.UNCHECKED is zkdv.overlap.UNCHECKED


def test_prepare_passes_other_values_through(tmp_path):
    proof = zkdv.torch.ZKDV(tmp_path / "api.zkdv", max_in_flight=1, replay_snapshot_interval=3)
    model = fresh_mlp()
    settings = {"epochs": 2}
    assert proof.prepare(model) is model
    assert proof.prepare(settings) is settings
    loss_fn, same, number = proof.prepare(torch.nn.CrossEntropyLoss(), settings, 3)
    assert isinstance(loss_fn, torch.nn.CrossEntropyLoss) and same is settings and number == 3
    plain = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer = proof.prepare(plain)
    assert isinstance(optimizer, torch.optim.Optimizer) and optimizer is not plain
    assert optimizer.param_groups is plain.param_groups and optimizer.state is plain.state
    assert proof.prepare(optimizer) is optimizer
    proof.close()


def test_a_proof_seals_on_exit(tmp_path):
    from conftest import audit, batches

    tape = tmp_path / "sealed.zkdv"
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tape) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
        for x, y in batches(2):
            with proof.transaction(batch=(x, y), overlap=zkdv.overlap.UNCHECKED):
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
                optimizer.zero_grad()
    status, verified = audit("verify", str(tape))
    assert status == 0 and verified["status"] == "sealed" and verified["transactions"] == 2, verified
