"""The prepared optimizer trains exactly as torch.optim does, on the optimizer's own tensors."""

import pytest
import torch

import zkdv.torch
from conftest import OPTIMIZERS, batches, fresh_cnn, fresh_mlp, image_batches, train_plain, train_with_zkdv


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_parameters_bit_identical_to_torch_optim(tmp_path, name):
    steps = 20
    recorded, plain, initial = fresh_mlp(), fresh_mlp(), fresh_mlp()
    recorded_losses = train_with_zkdv(tmp_path / "run.zkdv", recorded, OPTIMIZERS[name](recorded.parameters()), steps)
    plain_losses = train_plain(plain, OPTIMIZERS[name](plain.parameters()), steps)
    assert recorded_losses == plain_losses
    for (parameter_name, a), b, start in zip(recorded.named_parameters(), plain.parameters(), initial.parameters()):
        assert not torch.equal(a, start), "%s never moved" % parameter_name
        assert torch.equal(a, b), "%s differs after %d steps of %s" % (parameter_name, steps, name)


def test_cnn_parameters_and_buffers_bit_identical_to_torch_optim(tmp_path):
    steps = 12
    recorded, plain = fresh_cnn(), fresh_cnn()
    train_with_zkdv(tmp_path / "cnn.zkdv", recorded, OPTIMIZERS["adam"](recorded.parameters()), steps, data=image_batches)
    train_plain(plain, OPTIMIZERS["adam"](plain.parameters()), steps, data=image_batches)
    for (name, a), b in zip(recorded.state_dict().items(), plain.state_dict().values()):
        assert torch.equal(a, b), name


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_state_is_torch_optims_layout(tmp_path, name):
    """After the steps, optimizer.state holds the slots torch.optim holds, equal to its."""
    steps = 3
    recorded, plain = fresh_mlp(), fresh_mlp()
    loss_fn = torch.nn.CrossEntropyLoss()
    with zkdv.torch.ZKDV(tmp_path / "state.zkdv") as proof:
        model, loss_fn, optimizer = proof.prepare(recorded, loss_fn, OPTIMIZERS[name](recorded.parameters()))
        assert model is recorded
        for x, y in batches(steps):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
    reference = OPTIMIZERS[name](plain.parameters())
    train_plain(plain, reference, steps)
    for a, b in zip(recorded.parameters(), plain.parameters()):
        state, expected = optimizer.state[a], reference.state[b]
        assert set(state) == set(expected)
        for slot in state:
            assert type(state[slot]) is type(expected[slot]), slot
            assert torch.equal(torch.as_tensor(state[slot]), torch.as_tensor(expected[slot])), slot


def test_tensors_cross_without_copies(tmp_path):
    """The recorder steps the model's own Parameter objects in place: the binding hands torch's
    tensors to C++ and back as they are."""
    model = fresh_mlp()
    storage = [p.data_ptr() for p in model.parameters()]
    before = [p.detach().clone() for p in model.parameters()]
    loss_fn = torch.nn.CrossEntropyLoss()
    with zkdv.torch.ZKDV(tmp_path / "identity.zkdv") as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.1))
        for x, y in batches(2):
            with proof.transaction(batch=(x, y)):
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
                optimizer.zero_grad()
        bound = proof._native.parameters()
        assert len(bound) == len(list(model.parameters()))
        assert all(a is b for a, b in zip(bound, model.parameters()))
    assert [p.data_ptr() for p in model.parameters()] == storage
    assert not any(torch.equal(a, b) for a, b in zip(model.parameters(), before))
