"""Changes a tape cannot describe are refused when they are made, with what changed and what to
do, never recorded to replay as `diverged` (docs/python.md, "Unrecorded changes"). What the
recorder refuses before a step leaves the tape going; a change of the model's state outside the
step ends it at the last transaction: it stays unsealed, and its readable part replays exact."""

import pytest
import torch

import zkdv.torch
from conftest import assert_replays_exact, audit, batches, fresh_cnn, fresh_mlp, image_batches

ENDS_AT = r"; this tape ends at transaction %d: create a new proof$"


def prepared(path, model=None, optimizer=None):
    proof = zkdv.torch.ZKDV(path)
    model = model if model is not None else fresh_mlp()
    optimizer = optimizer if optimizer is not None else torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), optimizer)
    return proof, model, loss_fn, optimizer


def step(proof, model, loss_fn, optimizer, x, y, between=None):
    """One ordinary transaction; `between` runs between the backward and the step."""
    with proof.transaction(batch=(x, y)):
        optimizer.zero_grad()
        proof.backward(loss_fn(proof.forward(model, x), y))
        if between is not None:
            between()
        optimizer.step()


def seal_and_replay(tmp_path, proof, tape, transactions):
    assert proof.statistics["transactions"] == transactions
    proof.seal()
    assert_replays_exact(tmp_path, tape, transactions)


def end_and_replay(tmp_path, proof, tape, transactions):
    """A tape ended by a change of the model's state stays unsealed: the model no longer holds
    the state after its last transaction, which a sealed tape ends with (tape format 2.4). Its
    readable part still replays exact."""
    assert proof.statistics["transactions"] == transactions
    with pytest.raises(RuntimeError, match=r"the tape stays unsealed, readable up to that transaction"):
        proof.seal()
    status, verified = audit("verify", str(tape))
    assert status == 1 and verified["status"] == "unsealed" and verified["transactions"] == transactions, verified
    case = tmp_path / (tape.stem + ".zkaudit")
    status, ingested = audit("ingest", str(tape), "--case", str(case), "--allow-incomplete")
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all")
    assert replayed["replayed"] == transactions and replayed["verdicts"]["exact"] == transactions, replayed


GRADIENT_CHANGES = {
    "clip_grad_norm_": lambda model: torch.nn.utils.clip_grad_norm_(model.parameters(), 0.01),
    # torch 1.13's clip_grad_value_ writes through .grad.data: no version counter sees it.
    "clip_grad_value_": lambda model: torch.nn.utils.clip_grad_value_(model.parameters(), 0.001),
    "grad.mul_": lambda model: model.out.weight.grad.mul_(0.5),
    "grad.data.mul_": lambda model: model.out.weight.grad.data.mul_(0.5),
    "grad replaced": lambda model: setattr(model.out.weight, "grad", model.out.weight.grad * 0.5),
    "grad removed": lambda model: setattr(model.out.weight, "grad", None),
}


@pytest.mark.parametrize("change", sorted(GRADIENT_CHANGES))
def test_a_gradient_changed_before_the_step_is_refused_and_the_tape_goes_on(tmp_path, change):
    tape = tmp_path / "clipped.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1), (x2, y2) = batches(3)
    step(proof, model, loss_fn, optimizer, x0, y0)
    before = [p.detach().clone() for p in model.parameters()]
    with pytest.raises(RuntimeError, match=r"^the gradient of parameter model\.(hidden|out)\.(weight|bias) .* between proof\.backward\(\) and "
                       r"optimizer\.step\(\) in transaction 1 \(gradient clipping, or another change of \.grad\).*leave the gradients as "
                       r"proof\.backward\(\) left them$"):
        step(proof, model, loss_fn, optimizer, x1, y1, between=lambda: GRADIENT_CHANGES[change](model))
    # Refused before the update: the model is as the tape's transaction 0 left it, and the loop goes on.
    assert all(torch.equal(p, b) for p, b in zip(model.parameters(), before))
    step(proof, model, loss_fn, optimizer, x2, y2)
    seal_and_replay(tmp_path, proof, tape, 2)


def _data_add(model):
    model.hidden.weight.data.add_(0.01)


def _no_grad_mul(model):
    with torch.no_grad():
        model.hidden.weight.mul_(0.5)


def _data_assigned(model):
    model.hidden.weight.data = model.hidden.weight.data * 0.5


PARAMETER_CHANGES = {"param.data.add_": _data_add, "no_grad mul_": _no_grad_mul, "param.data =": _data_assigned}


@pytest.mark.parametrize("inside", [False, True], ids=["between transactions", "between backward and step"])
@pytest.mark.parametrize("change", sorted(PARAMETER_CHANGES))
def test_a_parameter_changed_outside_the_step_ends_the_tape(tmp_path, change, inside):
    tape = tmp_path / "param.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1), (x2, y2) = batches(3)
    step(proof, model, loss_fn, optimizer, x0, y0)
    if not inside:
        PARAMETER_CHANGES[change](model)
    with pytest.raises(RuntimeError, match=r"^parameter model\.hidden\.weight .* between the optimizer step of transaction 0 and the (forward|optimizer "
                       r"step) of transaction 1, outside the prepared optimizer .*change parameters only through the prepared optimizer's step"
                       + ENDS_AT % 0):
        step(proof, model, loss_fn, optimizer, x1, y1, between=(lambda: PARAMETER_CHANGES[change](model)) if inside else None)
    with pytest.raises(RuntimeError, match=r"^parameter model\.hidden\.weight .*" + ENDS_AT % 0):
        proof.transaction(batch=(x2, y2))
    end_and_replay(tmp_path, proof, tape, 1)


def _fill_running_mean(model):
    model.norm.running_mean.data.fill_(0.0)


def _reset_running_stats(model):
    model.norm.reset_running_stats()


def _scale_running_var(model):
    model.norm.running_var.mul_(2.0)


BUFFER_CHANGES = {"running_mean.data.fill_": _fill_running_mean, "reset_running_stats": _reset_running_stats,
                  "running_var.mul_": _scale_running_var}


@pytest.mark.parametrize("inside", [False, True], ids=["between transactions", "between forward and step"])
@pytest.mark.parametrize("change", sorted(BUFFER_CHANGES))
def test_a_buffer_changed_outside_the_program_ends_the_tape(tmp_path, change, inside):
    tape = tmp_path / "buffer.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape, fresh_cnn())
    (x0, y0), (x1, y1) = image_batches(2)
    step(proof, model, loss_fn, optimizer, x0, y0)
    if not inside:
        BUFFER_CHANGES[change](model)
    with pytest.raises(RuntimeError, match=r"^buffer model\.norm\.(running_mean|running_var|num_batches_tracked) .* outside the sealed program: .*"
                       r"let only the model's forward change its buffers" + ENDS_AT % 0):
        step(proof, model, loss_fn, optimizer, x1, y1, between=(lambda: BUFFER_CHANGES[change](model)) if inside else None)
    end_and_replay(tmp_path, proof, tape, 1)


@pytest.mark.parametrize("change", ["add_", "data.mul_"])
def test_a_batch_changed_after_the_forward_is_refused(tmp_path, change):
    tape = tmp_path / "batch.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1), (x2, y2) = batches(3)
    step(proof, model, loss_fn, optimizer, x0, y0)
    augment = (lambda: x1.add_(0.5)) if change == "add_" else (lambda: x1.data.mul_(2.0))
    with pytest.raises(RuntimeError, match=r"^batch tensor 0 .* after proof\.forward\(\) in transaction 1: the tape would record another "
                       r"batch than the one the step trained on .*change a batch before its transaction, or pass a copy$"):
        step(proof, model, loss_fn, optimizer, x1, y1, between=augment)
    step(proof, model, loss_fn, optimizer, x2, y2)
    seal_and_replay(tmp_path, proof, tape, 2)


@pytest.mark.parametrize("when", ["before the transaction", "between backward and step"])
def test_requires_grad_flipped_is_refused(tmp_path, when):
    tape = tmp_path / "frozen.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1), (x2, y2) = batches(3)
    step(proof, model, loss_fn, optimizer, x0, y0)
    freeze = lambda: model.hidden.bias.requires_grad_(False)  # noqa: E731
    if when == "before the transaction":
        freeze()
    with pytest.raises(RuntimeError, match=r"^parameter model\.hidden\.bias has requires_grad=False in transaction 1, but the sealed program "
                       r"differentiates every prepared parameter .*freeze a parameter with a parameter group of lr 0$"):
        step(proof, model, loss_fn, optimizer, x1, y1, between=freeze if when != "before the transaction" else None)
    model.hidden.bias.requires_grad_(True)
    step(proof, model, loss_fn, optimizer, x2, y2)
    seal_and_replay(tmp_path, proof, tape, 2)


def test_a_second_step_in_a_transaction_is_refused(tmp_path):
    tape = tmp_path / "twice.zkdv"
    model = fresh_mlp()
    raw = torch.optim.SGD(model.parameters(), lr=0.1)
    proof, model, loss_fn, optimizer = prepared(tape, model, raw)
    (x0, y0), (x1, y1), (x2, y2) = batches(3)
    with proof.transaction(batch=(x0, y0)):
        proof.backward(loss_fn(proof.forward(model, x0), y0))
        optimizer.step()
        after = [p.detach().clone() for p in model.parameters()]
        with pytest.raises(RuntimeError, match="^a transaction holds one optimizer step; open a new transaction for the next$"):
            optimizer.step()
    assert all(torch.equal(p, a) for p, a in zip(model.parameters(), after))
    # A second step by the raw optimizer moves the parameters after the recorded one.
    with pytest.raises(RuntimeError, match=r"^parameter model\.hidden\.weight was changed in place after the optimizer step of transaction 1, "
                       r"inside it, outside the prepared optimizer \(a step of the raw torch\.optim optimizer" + ".*" + ENDS_AT % 1):
        with proof.transaction(batch=(x1, y1)):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x1), y1))
            optimizer.step()
            raw.step()
    with pytest.raises(RuntimeError, match=ENDS_AT % 1):
        proof.transaction(batch=(x2, y2))
    end_and_replay(tmp_path, proof, tape, 2)


def test_gradients_accumulated_over_transactions_are_refused(tmp_path):
    tape = tmp_path / "accumulated.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1), (x2, y2) = batches(3)
    step(proof, model, loss_fn, optimizer, x0, y0)
    with proof.transaction(batch=(x1, y1)):
        # No zero_grad(): transaction 0's gradients are still there.
        loss = loss_fn(proof.forward(model, x1), y1)
        with pytest.raises(RuntimeError, match=r"^the gradient of parameter model\.hidden\.weight is not zero before proof\.backward\(\) in "
                           r"transaction 1 \(gradients accumulated over earlier transactions\?\): the replay computes every transaction's "
                           r"gradients from zero.*call optimizer\.zero_grad\(\) before proof\.backward\(\), step in every transaction, and accumulate "
                           r"over micro-batches inside one transaction$"):
            proof.backward(loss)
    # Zeros (zero_grad(set_to_none=False)) are what the replay starts from: accepted.
    with proof.transaction(batch=(x2, y2)):
        optimizer.zero_grad(set_to_none=False)
        proof.backward(loss_fn(proof.forward(model, x2), y2))
        optimizer.step()
    seal_and_replay(tmp_path, proof, tape, 2)


def test_a_second_backward_in_a_transaction_is_refused(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path / "twice-backward.zkdv")
    (x, y), = batches(1)
    with proof.transaction(batch=(x, y)):
        loss = loss_fn(proof.forward(model, x), y)
        proof.backward(loss)
        with pytest.raises(RuntimeError, match=r"^proof\.backward\(\) twice for micro-batch 0 of transaction 0 \(its loss was differentiated "
                           r"already\): the replay differentiates each micro-batch's loss once$"):
            proof.backward(loss)
        optimizer.step()
    assert proof.statistics["transactions"] == 1
    proof.close()


def test_a_backward_outside_proof_backward_is_refused_at_the_step(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path / "plain-backward.zkdv")
    (x, y), = batches(1)
    with proof.transaction(batch=(x, y)):
        loss_fn(proof.forward(model, x), y).backward()
        with pytest.raises(RuntimeError, match=r"^no recorded backward in transaction 0: differentiate the loss with proof\.backward\(loss\)"):
            optimizer.step()
    proof.close()


def test_autocast_changed_between_micro_batches_is_refused(tmp_path):
    """Autocast is recorded (test_mixed_precision.py), one setting per transaction."""
    tape = tmp_path / "autocast.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1) = batches(2)
    with proof.transaction(batch=[(x0, y0), (x1, y1)]):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            proof.backward(loss_fn(proof.forward(model, x0), y0) / 2)
        with pytest.raises(RuntimeError, match=r"^micro-batch 1 of transaction 0 runs its forward without autocast, micro-batch 0 under "
                           r"torch\.autocast\(\"cpu\", dtype=torch\.bfloat16\)"):
            proof.forward(model, x1)
        # The refused call ran nothing: the same transaction goes on under the same autocast.
        with torch.autocast("cpu", dtype=torch.bfloat16):
            proof.backward(loss_fn(proof.forward(model, x1), y1) / 2)
        optimizer.step()
    seal_and_replay(tmp_path, proof, tape, 1)


def test_a_transaction_whose_forward_moved_buffers_must_step(tmp_path):
    tape = tmp_path / "no-step.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape, fresh_cnn())
    (x0, y0), (x1, y1) = image_batches(2)
    step(proof, model, loss_fn, optimizer, x0, y0)
    with pytest.raises(RuntimeError, match=r"^buffer model\.norm\.\w+ .* in transaction 1, which ended without a step of the prepared optimizer "
                       r"\(step the optimizer returned by proof\.prepare\(\) in every transaction\), outside the sealed program: .*" + ENDS_AT % 0):
        with proof.transaction(batch=(x1, y1)):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x1), y1))
    end_and_replay(tmp_path, proof, tape, 1)


def test_a_transaction_that_changed_nothing_may_end_without_a_step(tmp_path):
    # A skipped step (a loss found not finite, say) of a model without buffers changes nothing the
    # tape describes: the transaction is dropped and the tape goes on.
    tape = tmp_path / "skipped.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1), (x2, y2) = batches(3)
    step(proof, model, loss_fn, optimizer, x0, y0)
    with proof.transaction(batch=(x1, y1)):
        optimizer.zero_grad()
        proof.backward(loss_fn(proof.forward(model, x1), y1))
    assert proof.statistics["aborted_transactions"] == 1
    step(proof, model, loss_fn, optimizer, x2, y2)
    seal_and_replay(tmp_path, proof, tape, 2)


def test_a_raw_optimizer_step_is_refused_and_never_seals_an_empty_tape(tmp_path):
    tape = tmp_path / "raw.zkdv"
    model = fresh_mlp()
    raw = torch.optim.SGD(model.parameters(), lr=0.1)
    proof = zkdv.torch.ZKDV(tape)
    model, loss_fn, _prepared = proof.prepare(model, torch.nn.CrossEntropyLoss(), raw)
    (x0, y0), (x1, y1) = batches(2)
    with pytest.raises(RuntimeError, match=r"^parameter model\.hidden\.weight was changed in place in transaction 0, which ended without a step of "
                       r"the prepared optimizer \(step the optimizer returned by proof\.prepare\(\) in every transaction\), outside the "
                       r"prepared optimizer \(a step of the raw torch\.optim optimizer instead of the one proof\.prepare\(\) returned"
                       + r".*; this tape ends before its first transaction: create a new proof$"):
        with proof.transaction(batch=(x0, y0)):
            raw.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x0), y0))
            raw.step()
    with pytest.raises(RuntimeError, match=r"^no transaction was recorded: step the optimizer returned by proof\.prepare\(\.\.\.\) inside "
                       r"proof\.transaction\(batch=\.\.\.\); the tape is left unsealed$"):
        proof.seal()
    status, verified = audit("verify", str(tape))
    assert status == 1 and verified["status"] == "unsealed" and verified["transactions"] == 0, verified


def test_a_loop_that_opened_no_transaction_is_not_sealed(tmp_path):
    tape = tmp_path / "none.zkdv"
    model = fresh_mlp()
    raw = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(RuntimeError, match=r"^no transaction was recorded"):
        with zkdv.torch.ZKDV(tape) as proof:
            model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), raw)
            for x, y in batches(2):
                raw.zero_grad()
                loss_fn(proof.forward(model, x), y).backward()
                raw.step()
    status, verified = audit("verify", str(tape))
    assert status == 1 and verified["status"] == "unsealed", verified


def test_an_optimizer_slot_changed_outside_the_step_ends_the_tape(tmp_path):
    tape = tmp_path / "slot.zkdv"
    proof, model, loss_fn, optimizer = prepared(tape)
    (x0, y0), (x1, y1) = batches(2)
    step(proof, model, loss_fn, optimizer, x0, y0)
    optimizer.state[model.out.weight]["momentum_buffer"].mul_(0.0)
    with pytest.raises(RuntimeError, match=r"^optimizer state \S+\.momentum_buffer was changed in place between the optimizer step of "
                       r"transaction 0 and the forward of transaction 1, outside the prepared optimizer's step" + ".*" + ENDS_AT % 0):
        step(proof, model, loss_fn, optimizer, x1, y1)
    end_and_replay(tmp_path, proof, tape, 1)
