"""The prepared optimizer trains exactly as torch.optim does, on the optimizer's own tensors."""

import pytest
import torch

from conftest import fresh_mlp, train_plain, train_with_zkdv

OPTIMIZERS = {
    "sgd_momentum": lambda parameters: torch.optim.SGD(parameters, lr=0.05, momentum=0.9),
    "adam": lambda parameters: torch.optim.Adam(parameters, lr=0.01),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_parameters_bit_identical_to_torch_optim(tmp_path, name):
    steps = 20
    recorded, plain = fresh_mlp(), fresh_mlp()
    for a, b in zip(recorded.parameters(), plain.parameters()):
        assert torch.equal(a, b)
    recorded_losses = train_with_zkdv(tmp_path / "run.zkdv", recorded, OPTIMIZERS[name](recorded.parameters()), steps)
    plain_losses = train_plain(plain, OPTIMIZERS[name](plain.parameters()), steps)
    assert recorded_losses == plain_losses
    moved = False
    for (parameter_name, a), (_, b) in zip(recorded.named_parameters(), plain.named_parameters()):
        assert torch.equal(a, b), "%s differs after %d steps of %s" % (parameter_name, steps, name)
        moved = moved or not torch.equal(a, fresh_mlp().state_dict()[parameter_name])
    assert moved, "training changed the parameters"


def test_state_is_the_recorders_tensors(tmp_path):
    """After a step, optimizer.state holds torch.optim's slots for the model's parameters,
    equal to what plain torch.optim holds."""
    recorded, plain = fresh_mlp(), fresh_mlp()
    prepared_holder = {}
    import zkdv.torch
    from conftest import batches

    loss_fn = torch.nn.CrossEntropyLoss()
    with zkdv.torch.ZKDV(tmp_path / "state.zkdv") as proof:
        model, loss_fn, optimizer = proof.prepare(recorded, loss_fn, torch.optim.Adam(recorded.parameters(), lr=0.01))
        prepared_holder["optimizer"] = optimizer
        assert model is recorded
        for x, y in batches(3):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
    reference = torch.optim.Adam(plain.parameters(), lr=0.01)
    train_plain_steps = 3
    from conftest import train_plain as plain_loop
    plain_loop(plain, reference, train_plain_steps)
    state = prepared_holder["optimizer"].state
    for a, b in zip(recorded.parameters(), plain.parameters()):
        assert set(state[a]) == set(reference.state[b])
        for slot in state[a]:
            assert torch.equal(torch.as_tensor(state[a][slot]), torch.as_tensor(reference.state[b][slot])), slot


def test_tensors_cross_without_copies(tmp_path):
    """The recorder steps the model's own Parameter objects in place: the binding hands torch's
    tensors to C++ and back as they are."""
    import zkdv.torch
    from conftest import batches

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
    assert not all(torch.equal(a, b) for a, b in zip(model.parameters(), before))
