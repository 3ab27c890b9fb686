"""proof.register_functional_optimizer: a proof-local contract for an optimizer torch.optim
does not have. The recorder steps through it; the auditor, which lacks it, replays the tape
as unverifiable and names the contract."""

import pytest
import torch

import zkdv.torch
from conftest import audit, batches, fresh_mlp, train_plain, train_with_zkdv


class SignMomentum(torch.optim.Optimizer):
    """A user's optimizer: momentum on the gradient's sign, with a step counter."""

    def __init__(self, params, lr=0.01, beta=0.9):
        super().__init__(params, dict(lr=lr, beta=beta))

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["momentum"] = torch.zeros_like(p)
                state["step"] += 1
                state["momentum"].mul_(group["beta"]).add_(p.grad.sign(), alpha=1 - group["beta"])
                p.add_(state["momentum"], alpha=-group["lr"] / state["step"] ** 0.5)


class SignMomentumContract(zkdv.torch.OptimizerContract):
    number_slots = frozenset({"step"})

    def initialize(self, parameter, group):
        return {"step": 0, "momentum": torch.zeros_like(parameter)}

    def update(self, parameters, gradients, states, group):
        for p, grad, state in zip(parameters, gradients, states):
            state["step"] += 1
            state["momentum"].mul_(group["beta"]).add_(grad.sign(), alpha=1 - group["beta"])
            p.add_(state["momentum"], alpha=-group["lr"] / state["step"] ** 0.5)


def record(path, model, steps, contract=None):
    optimizer = SignMomentum(model.parameters(), lr=0.02)
    loss_fn = torch.nn.CrossEntropyLoss()
    with zkdv.torch.ZKDV(path) as proof:
        proof.register_functional_optimizer(SignMomentum, contract or SignMomentumContract())
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
        for x, y in batches(steps):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
    return optimizer


def test_a_custom_contract_trains_as_its_optimizer_and_the_auditor_names_it(tmp_path):
    steps = 8
    tape = tmp_path / "custom.zkdv"
    recorded, plain = fresh_mlp(), fresh_mlp()
    optimizer = record(tape, recorded, steps)
    reference = SignMomentum(plain.parameters(), lr=0.02)
    train_plain(plain, reference, steps)
    for a, b in zip(recorded.parameters(), plain.parameters()):
        assert torch.equal(a, b)
        assert optimizer.state[a]["step"] == reference.state[b]["step"] == steps
        assert type(optimizer.state[a]["step"]) is int
        assert torch.equal(optimizer.state[a]["momentum"], reference.state[b]["momentum"])

    status, info = audit("info", str(tape))
    assert status == 0 and "SignMomentumContract" in str(info), info
    status, verified = audit("verify", str(tape))
    assert status == 0 and verified["status"] == "sealed" and verified["transactions"] == steps, verified
    case = tmp_path / "custom.zkaudit"
    status, ingested = audit("ingest", str(tape), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all")
    assert not replayed["passed"], replayed
    assert replayed["verdicts"]["unverifiable"] == steps and replayed["verdicts"]["diverged"] == 0, replayed["verdicts"]
    assert all(f["verdict"] == "unverifiable" and 'contract for "SignMomentumContract"' in f["detail"]
               for f in replayed["first_failures"]), replayed["first_failures"]


def test_without_a_registered_contract_the_optimizer_is_refused(tmp_path):
    model = fresh_mlp()
    proof = zkdv.torch.ZKDV(tmp_path / "none.zkdv")
    with pytest.raises(RuntimeError, match=r'no functional optimizer contract for "SignMomentum" .*register a custom functional optimizer contract'):
        proof.prepare(SignMomentum(model.parameters()))
    proof.close()


def test_a_registration_is_local_to_its_proof(tmp_path):
    first, second = zkdv.torch.ZKDV(tmp_path / "first.zkdv"), zkdv.torch.ZKDV(tmp_path / "second.zkdv")
    model = fresh_mlp()
    first.register_functional_optimizer(SignMomentum, SignMomentumContract())
    assert first.prepare(SignMomentum(model.parameters())) is not None
    with pytest.raises(RuntimeError, match="no functional optimizer contract"):
        second.prepare(SignMomentum(model.parameters()))
    # Exact type: a subclass of a registered optimizer type is not covered by its contract.
    third = zkdv.torch.ZKDV(tmp_path / "third.zkdv")
    third.register_functional_optimizer(SignMomentum, SignMomentumContract())
    with pytest.raises(RuntimeError, match="no functional optimizer contract"):
        third.prepare(type("Derived", (SignMomentum,), {})(model.parameters()))
    for proof in (first, second, third):
        proof.close()


def test_registration_refusals(tmp_path):
    proof = zkdv.torch.ZKDV(tmp_path / "refusals.zkdv")
    model = fresh_mlp()

    class Named(SignMomentumContract):
        name = "Adam"

    with pytest.raises(ValueError, match="cannot be named Adam, as the built-in contract for torch.optim.Adam"):
        proof.register_functional_optimizer(SignMomentum, Named())
    with pytest.raises(TypeError, match="OptimizerContract"):
        proof.register_functional_optimizer(SignMomentum, object())
    proof.prepare(torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(RuntimeError, match=r"before proof.prepare\(optimizer\)"):
        proof.register_functional_optimizer(SignMomentum, SignMomentumContract())
    proof.close()


def test_a_failing_contract_reaches_python_with_its_message(tmp_path):
    class Broken(SignMomentumContract):
        def update(self, parameters, gradients, states, group):
            raise ValueError("the contract cannot take this step")

    model = fresh_mlp()
    with pytest.raises(RuntimeError, match="custom optimizer contract Broken.update: .*the contract cannot take this step"):
        record(tmp_path / "broken.zkdv", model, 2, Broken())
