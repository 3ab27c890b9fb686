"""The seed's refusals, with the seed's messages, and the C++ recorder's errors as Python
exceptions carrying the recorder's message."""

import pytest
import torch

import zkdv.torch
from conftest import TinyTransformer, batches, fresh_cnn, fresh_mlp, image_batches, sequence_batches


def prepared(tmp_path, optimizer_type=torch.optim.SGD, **options):
    proof = zkdv.torch.ZKDV(tmp_path / "refusal.zkdv")
    model = fresh_mlp()
    options = options or {"lr": 0.1}
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), optimizer_type(model.parameters(), **options))
    return proof, model, loss_fn, optimizer


def test_nested_transactions_are_refused(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path)
    x, y = next(batches(1))
    with proof.transaction(batch=(x, y)):
        with pytest.raises(RuntimeError, match="^nested ZKDV Torch transactions are unsupported$"):
            proof.transaction(batch=(x, y))
        proof.backward(loss_fn(proof.forward(model, x), y))
        optimizer.step()
    # The refusal left the outer transaction intact: it committed one step.
    assert proof.statistics["transactions"] == 1
    proof.seal()


def test_unprepared_model_is_refused(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path)
    x, y = next(batches(1))
    with proof.transaction(batch=(x, y)):
        with pytest.raises(RuntimeError) as refused:
            proof.forward(fresh_mlp(), x)
    assert str(refused.value) == "proof.forward() received an unprepared model; pass it through proof.prepare() first"
    assert proof.statistics["aborted_transactions"] == 1
    proof.close()


def test_existing_path_is_refused_with_the_recorders_message(tmp_path):
    path = tmp_path / "exists.zkdv"
    path.write_bytes(b"not a tape")
    with pytest.raises(RuntimeError, match="overwrite"):
        zkdv.torch.ZKDV(path)
    assert path.read_bytes() == b"not a tape"


def test_lbfgs_is_refused_at_prepare(tmp_path):
    with pytest.raises(RuntimeError, match="LBFGS"):
        prepared(tmp_path, torch.optim.LBFGS, lr=0.1)


def test_tensor_valued_options_are_refused(tmp_path):
    with pytest.raises(RuntimeError, match="ZKDV requires static optimizer options, but lr"):
        prepared(tmp_path, torch.optim.SGD, lr=torch.tensor(0.1))


def test_options_changed_after_sealing_are_refused(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path)
    data = batches(2)
    for step, (x, y) in enumerate(data):
        with proof.transaction(batch=(x, y)):
            proof.backward(loss_fn(proof.forward(model, x), y))
            if step == 1:
                optimizer.param_groups[0]["lr"] = 0.05
                with pytest.raises(RuntimeError, match="create a new proof for the new optimizer schedule"):
                    optimizer.step()
            else:
                optimizer.step()
            optimizer.zero_grad()
    assert proof.statistics["transactions"] == 1
    proof.close()


def test_options_changed_after_sealing_name_the_option(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path)
    x, y = next(batches(1))
    with proof.transaction(batch=(x, y)):
        proof.backward(loss_fn(proof.forward(model, x), y))
        optimizer.param_groups[0]["lr"] = 0.05
        with pytest.raises(RuntimeError) as refused:
            optimizer.step()
    assert "parameter group 0 changed after the tape recorded them (lr 0.1 -> 0.05)" in str(refused.value)
    proof.close()


def test_a_loss_the_program_did_not_compute_is_refused(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path)
    x, y = next(batches(1))
    with proof.transaction(batch=(x, y)):
        loss = loss_fn(proof.forward(model, x), y)
        with pytest.raises(RuntimeError, match="did not compute"):
            proof.backward(loss + 0.5 * sum(p.square().sum() for p in model.parameters()))
    proof.close()


class DropoutMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(6, 16)
        self.drop = torch.nn.Dropout(0.5)
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.out(self.drop(torch.relu(self.hidden(x))))


def test_random_operations_are_refused_with_the_seeds_message(tmp_path):
    proof = zkdv.torch.ZKDV(tmp_path / "random.zkdv")
    model = DropoutMLP()
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = next(batches(1))
    with pytest.raises(RuntimeError, match=r"^attested Torch code contains random operations \(aten::dropout\); generate randomness "
                       "outside the transition and include it in the prepared transaction batch$"):
        proof.transaction(batch=(x, y))
    proof.close()


def test_parameters_outside_every_group_are_refused(tmp_path):
    proof = zkdv.torch.ZKDV(tmp_path / "unbound.zkdv")
    model = fresh_mlp()
    head_only = list(model.out.parameters())
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(head_only, lr=0.1))
    x, y = next(batches(1))
    with pytest.raises(RuntimeError, match="^prepared optimizer parameters must exactly cover the prepared model"):
        proof.transaction(batch=(x, y))
    proof.close()


def test_forward_takes_the_batch_inputs(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path)
    x, y = next(batches(1))
    with proof.transaction(batch=(x, y)):
        with pytest.raises(RuntimeError, match="takes the batch's inputs"):
            proof.forward(model, x.clone())
    proof.close()


def test_a_proof_that_failed_to_seal_says_so_at_the_next_transaction(tmp_path):
    proof = zkdv.torch.ZKDV(tmp_path / "half.zkdv")
    model = fresh_mlp()
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.out.parameters(), lr=0.1))
    x, y = next(batches(1))
    with pytest.raises(RuntimeError, match="must exactly cover"):
        proof.transaction(batch=(x, y))
    with pytest.raises(RuntimeError, match=r"^this proof could not seal its training step \(prepared optimizer parameters must exactly cover"):
        proof.transaction(batch=(x, y))
    proof.close()


def _first_transaction(path, model):
    """Records one step of `model`; returns the number of transactions the proof committed."""
    proof = zkdv.torch.ZKDV(path)
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = next(sequence_batches(1))
    try:
        with proof.transaction(batch=(x, y)):
            proof.backward(loss_fn(proof.forward(model, x), y))
            optimizer.step()
        return proof.statistics["transactions"]
    finally:
        proof.close()


SEED_RANDOM = r"; generate randomness outside the transition and include it in the prepared transaction batch$"


def test_real_dropout_in_a_transformer_is_refused(tmp_path):
    torch.manual_seed(1)
    with pytest.raises(RuntimeError, match=r"^attested Torch code contains random operations \(.*aten::dropout.*\)" + SEED_RANDOM):
        _first_transaction(tmp_path / "dropout.zkdv", TinyTransformer(dropout=0.1))
    # Dropout(p=0) and attention with dropout 0 draw nothing: that encoder layer is sealed.
    torch.manual_seed(1)
    assert _first_transaction(tmp_path / "no-dropout.zkdv", TinyTransformer(dropout=0.0)) == 1


class Attention(torch.nn.Module):
    """Attention alone, its dropout the only random draw (scaled_dot_product_attention on
    torch 2, a dropout of the attention weights on 1.13)."""

    def __init__(self, dropout):
        super().__init__()
        self.attention = torch.nn.MultiheadAttention(4, 2, dropout=dropout, batch_first=True)
        self.head = torch.nn.Linear(4, 3)

    def forward(self, x):
        return self.head(self.attention(x, x, x, need_weights=False)[0].mean(1))


def test_attention_dropout_is_refused_and_attention_without_it_is_not(tmp_path):
    torch.manual_seed(2)
    with pytest.raises(RuntimeError, match=r"^attested Torch code contains random operations \((aten::dropout|aten::scaled_dot_product_attention)\)" + SEED_RANDOM):
        _first_transaction(tmp_path / "dropout.zkdv", Attention(0.25))
    torch.manual_seed(2)
    assert _first_transaction(tmp_path / "no-dropout.zkdv", Attention(0.0)) == 1


def test_a_model_in_eval_mode_is_refused(tmp_path):
    # The auditor replays in training mode: BatchNorm sealed in eval mode would diverge.
    proof = zkdv.torch.ZKDV(tmp_path / "eval.zkdv")
    model = fresh_cnn()
    model.norm.eval()
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = next(image_batches(1))
    with pytest.raises(RuntimeError, match=r"training mode .* norm is in eval mode; call model.train\(\) before the first transaction$"):
        proof.transaction(batch=(x, y))
    # Nothing was bound yet: the loop can put the model in training mode and go on.
    model.train()
    with proof.transaction(batch=(x, y)):
        proof.backward(loss_fn(proof.forward(model, x), y))
        optimizer.step()
    assert proof.statistics["transactions"] == 1
    proof.close()


def test_every_batch_has_the_form_of_the_first(tmp_path):
    proof, model, loss_fn, optimizer = prepared(tmp_path)
    (x, y), (x2, y2) = list(batches(2))
    with proof.transaction(batch=(x, y)):
        proof.backward(loss_fn(proof.forward(model, x), y))
        optimizer.step()
    with pytest.raises(RuntimeError, match="sealed a step whose batch holds 2 tensors, not 3"):
        proof.transaction(batch=(x2, y2, x2))
    with pytest.raises(RuntimeError, match=r"\(inputs, targets\) or \(inputs, targets, extra, ...\)"):
        proof.transaction(batch=(x2,))
    proof.close()


class ScaledMLP(torch.nn.Module):
    """Holds a tensor that is neither a parameter nor a buffer: state the tape would not carry."""

    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(6, 3)
        self.scale = torch.tensor(2.0)

    def forward(self, x):
        return self.hidden(x) * self.scale


def test_captured_unprepared_tensors_are_refused_with_the_seeds_message(tmp_path):
    proof = zkdv.torch.ZKDV(tmp_path / "captured.zkdv")
    model = ScaledMLP()
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    x, y = next(batches(1))
    with pytest.raises(RuntimeError, match=r"^attested Torch code captured unprepared tensor state \(model\.scale\); register it as a "
                       r"parameter or buffer of the sealed program, or pass it in the batch$"):
        proof.transaction(batch=(x, y))
    # Registered as a buffer, the same tensor is prepared state, and the step seals.
    del model.scale
    model.register_buffer("scale", torch.tensor(2.0))
    with proof.transaction(batch=(x, y)):
        optimizer.zero_grad()
        loss = loss_fn(proof.forward(model, x), y)
        proof.backward(loss)
        optimizer.step()
    proof.seal()
