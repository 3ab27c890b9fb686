"""Losses written as code, dict batches and keyword inputs (docs/python.md, "Losses written as
code"): with no loss module prepared, the code between proof.forward() and proof.backward() is
sealed with the model: traced into the TorchScript program (both lanes) or exported
(exported-graph programs, torch 2.x). Each loop form trains bit for bit as the same loop
without zkdv and its tape replays exact; code the tape could not hold is refused naming its
line."""

import inspect
import os

import pytest
import torch
import torch.nn.functional as F

import zkdv
import zkdv.torch
from conftest import MODELS, assert_replays_exact, batches, fresh_cnn, fresh_mlp, image_batches

HAS_EXPORT = hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2
POLICY = zkdv.SamplingPolicy(state_check_probability=0.5, update_check_probability=0.5, seed=4)
# The program kinds this torch seals a loss written as code as.
PROGRAMS = ["torchscript"] + (["exported-graph"] if HAS_EXPORT else [])
CONFIGS = {program: zkdv.ZKDVConfig(sampling_policy=POLICY, program=program) for program in PROGRAMS}
EXPORTED = CONFIGS.get("exported-graph", zkdv.ZKDVConfig(sampling_policy=POLICY, program="exported-graph"))
# The refusals are the capture's, whichever kind seals: the newest this torch has.
NEWEST = CONFIGS[PROGRAMS[-1]]
HERE = os.path.basename(__file__)


def here() -> str:
    """file:line of the caller's next line."""
    return "%s:%d" % (HERE, inspect.currentframe().f_back.f_lineno + 1)


def adamw(model):
    return torch.optim.AdamW(model.parameters(), lr=0.01)


@pytest.mark.skipif(HAS_EXPORT, reason="this torch has torch.export: the kind is sealed, not refused")
def test_the_exported_graph_kind_needs_torch2(tmp_path):
    model = fresh_mlp()
    proof = zkdv.torch.ZKDV(tmp_path / "old.zkdv", EXPORTED)
    model, optimizer = proof.prepare(model, adamw(model))
    x, y = next(batches(1))
    with pytest.raises(RuntimeError) as refused:
        where = here()
        with proof.transaction(batch=(x, y)):
            proof.backward(F.cross_entropy(proof.forward(model, x), y))
    proof.close()
    message = str(refused.value)
    assert "needs torch 2.x with torch.export" in message and where in message, message
    assert 'ZKDVConfig(program="torchscript")' in message, message


def seed_form(path, kind, steps, config):
    make, data = MODELS[kind]
    model = make()
    losses = []
    with zkdv.torch.ZKDV(path, config, replay_snapshot_interval=4) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        for x, y in data(steps):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                loss = F.cross_entropy(proof.forward(model, x), y)
                proof.backward(loss)
                optimizer.step()
            losses.append(loss.item())
    return model, losses


def seed_form_plain(kind, steps):
    make, data = MODELS[kind]
    model = make()
    optimizer = adamw(model)
    losses = []
    for x, y in data(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return model, losses


def assert_same_training(a, b):
    for (name, x), (_, y) in zip(a.state_dict().items(), b.state_dict().items()):
        assert torch.equal(x, y), name


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("kind", sorted(MODELS))
def test_the_seeds_loop_form_trains_as_torch_and_replays_exact(tmp_path, kind, program):
    """loss = F.cross_entropy(proof.forward(model, x), y): the CNN's BatchNorm buffers, moved by
    the first transaction's eager forward, are where they were when the step is sealed."""
    steps = 8
    tape = tmp_path / ("%s-seed-form.zkdv" % kind)
    recorded, losses = seed_form(tape, kind, steps, CONFIGS[program])
    plain, plain_losses = seed_form_plain(kind, steps)
    assert losses == plain_losses
    assert_same_training(recorded, plain)
    assert_replays_exact(tmp_path, tape, steps)


class Tagger(torch.nn.Module):
    """A model called as model(**batch) that computes its own loss, as Hugging Face models do:
    a dict of input_ids, attention_mask and labels in, a dict with "loss" and "logits" out."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(20, 12)
        self.mix = torch.nn.Linear(12, 12)
        self.head = torch.nn.Linear(12, 5)

    def forward(self, input_ids, attention_mask=None, labels=None, return_logits=True):
        hidden = torch.tanh(self.mix(self.embed(input_ids)))
        logits = self.head(hidden)
        out = {"logits": logits} if return_logits else {}
        if labels is not None:
            each = F.cross_entropy(logits.flatten(0, 1), labels.flatten(), reduction="none")
            mask = attention_mask.flatten().to(each.dtype)
            out["loss"] = (each * mask).sum() / mask.sum()
        return out


def tagged_batches(steps, micro=2, seed=8):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        batch = []
        for _ in range(micro):
            ids = torch.randint(0, 20, (4, 6), generator=generator)
            mask = (torch.rand(4, 6, generator=generator) > 0.2).long()
            batch.append({"input_ids": ids, "attention_mask": mask, "labels": ids % 5})
        yield batch


def fresh_tagger():
    torch.manual_seed(21)
    return Tagger()


@pytest.mark.parametrize("program", PROGRAMS)
def test_dict_batches_keyword_inputs_and_a_model_computed_loss(tmp_path, program):
    """batch= a list of dict micro-batches, proof.forward(model, **micro, return_logits=True),
    the model's own loss divided for accumulation, clipping."""
    steps, micro = 6, 2
    tape = tmp_path / "tagger.zkdv"
    model = fresh_tagger()
    with zkdv.torch.ZKDV(tape, CONFIGS[program], replay_snapshot_interval=4) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        for batch in tagged_batches(steps, micro):
            with proof.transaction(batch=batch):
                optimizer.zero_grad()
                for part in batch:
                    out = proof.forward(model, **part, return_logits=True)
                    assert set(out) == {"logits", "loss"} and out["logits"].shape == (4, 6, 5)
                    proof.backward(out["loss"] / micro)
                proof.clip_grad_norm_(model.parameters(), 0.5)
                optimizer.step()
    plain = fresh_tagger()
    optimizer = adamw(plain)
    for batch in tagged_batches(steps, micro):
        optimizer.zero_grad(set_to_none=True)
        for part in batch:
            (plain(**part, return_logits=True)["loss"] / micro).backward()
        torch.nn.utils.clip_grad_norm_(plain.parameters(), 0.5)
        optimizer.step()
    assert_same_training(model, plain)
    assert_replays_exact(tmp_path, tape, steps)


def regularised(model, out, y):
    # Weight decay written as code: the parameters are the prepared model's, read by the step.
    return F.cross_entropy(out, y) + 1e-3 * sum(p.pow(2).sum() for p in model.parameters())


def test_a_traced_number_that_would_change_once_saved_is_refused(tmp_path):
    """TorchScript: `1e-3 * l2` traces to a 0-dim constant that promotes as float64 once the
    program is saved; the trainer's step would be float32. Refused at sealing, saying so,
    rather than recorded and then replayed diverged."""
    model = fresh_mlp()
    proof = zkdv.torch.ZKDV(tmp_path / "promoted.zkdv", CONFIGS["torchscript"])
    model, optimizer = proof.prepare(model, adamw(model))
    x, y = next(batches(1))
    with pytest.raises(RuntimeError, match=r"computed the loss as float32 \[\], but the traced program, as the auditor loads it, computes float64"):
        with proof.transaction(batch=[x, y]):
            proof.backward(regularised(model, proof.forward(model, x), y))
    proof.close()


@pytest.mark.skipif(not HAS_EXPORT, reason="needs torch.export: TorchScript cannot seal this code (the test above)")
def test_code_that_reads_parameters_and_logs_between_forward_and_backward(tmp_path):
    """An L2 term over the model's parameters, an accuracy computed on the way (not part of the
    loss), a lone-tensor forward: the sealed step holds the loss's code only."""
    program = "exported-graph"
    steps = 6
    tape = tmp_path / "regularised.zkdv"
    model = fresh_mlp()
    accuracies = []
    with zkdv.torch.ZKDV(tape, CONFIGS[program], replay_snapshot_interval=4) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        for x, y in batches(steps):
            with proof.transaction(batch=[x, y]):
                optimizer.zero_grad()
                out = proof.forward(model, x)
                accuracies.append((out.argmax(1) == y).float().mean().item())
                proof.backward(regularised(model, out, y))
                optimizer.step()
    plain = fresh_mlp()
    optimizer = adamw(plain)
    for x, y in batches(steps):
        optimizer.zero_grad(set_to_none=True)
        regularised(plain, plain(x), y).backward()
        optimizer.step()
    assert_same_training(model, plain)
    assert len(accuracies) == steps
    assert_replays_exact(tmp_path, tape, steps)


def test_a_tensor_the_tape_would_not_hold_is_refused_naming_the_line(tmp_path):
    model = fresh_mlp()
    weights = torch.tensor([1.0, 2.0, 1.0])  # class weights made outside the model and the batch
    with zkdv.torch.ZKDV(tmp_path / "weights.zkdv", NEWEST) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        x, y = next(batches(1))
        with pytest.raises(RuntimeError) as refused:
            with proof.transaction(batch=(x, y)):
                out = proof.forward(model, x)
                where = here()
                loss = F.cross_entropy(out, y, weight=weights)
                proof.backward(loss)
        message = str(refused.value)
        assert "the loss code at " in message and where in message and "shape [3]" in message, message
        assert "pass it in the batch or register it as a buffer" in message, message
        # Nothing was sealed: with the weights in the batch the same proof records.
        with proof.transaction(batch=(x, y, weights)):
            optimizer.zero_grad()
            proof.backward(F.cross_entropy(proof.forward(model, x), y, weight=weights))
            optimizer.step()
    assert_replays_exact(tmp_path, tmp_path / "weights.zkdv", 1)


def test_code_that_changes_after_sealing_is_refused(tmp_path):
    """The capture bakes in a number read then (here the label smoothing a loop switches on
    later): every transaction checks the loop's loss against the sealed step's."""
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tmp_path / "changed.zkdv", NEWEST) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        sealed_at = None
        with pytest.raises(RuntimeError) as refused:
            for step, (x, y) in enumerate(batches(4)):
                with proof.transaction(batch=(x, y)):
                    optimizer.zero_grad()
                    out = proof.forward(model, x)
                    if sealed_at is None:
                        sealed_at = here()
                    loss = F.cross_entropy(out, y, label_smoothing=0.1 if step >= 2 else 0.0)
                    proof.backward(loss)
                    optimizer.step()
        message = str(refused.value)
        assert "received a loss the sealed program did not compute" in message and sealed_at in message, message
        assert proof.statistics["transactions"] == 2
    assert_replays_exact(tmp_path, tmp_path / "changed.zkdv", 2)


def test_forward_takes_the_batchs_tensors_and_the_sealed_call(tmp_path):
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tmp_path / "calls.zkdv", NEWEST) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        data = batches(3)
        x, y = next(data)
        with proof.transaction(batch=(x, y)):
            with pytest.raises(RuntimeError, match=r"takes tensors of the transaction's batch .* shape \[16, 6\]"):
                proof.forward(model, x + 0)
            optimizer.zero_grad()
            proof.backward(F.cross_entropy(proof.forward(model, x), y))
            optimizer.step()
        x, y = next(data)
        with proof.transaction(batch=(x, y)):
            with pytest.raises(RuntimeError, match="calls the model otherwise than the sealed step"):
                proof.forward(model, x, extra=True)
        with pytest.raises(RuntimeError, match="another form"):
            with proof.transaction(batch={"x": x, "y": y}):
                pass


def test_leaving_the_first_transaction_early_leaves_the_model_as_it_was(tmp_path):
    """The first transaction's eager forward moves BatchNorm's running statistics; leaving
    before proof.backward() puts them back, and nothing is sealed."""
    model = fresh_cnn()
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    proof = zkdv.torch.ZKDV(tmp_path / "left.zkdv", NEWEST)
    model, optimizer = proof.prepare(model, adamw(model))
    x, y = next(image_batches(1))
    with pytest.raises(KeyboardInterrupt):
        with proof.transaction(batch=(x, y)):
            proof.forward(model, x)
            raise KeyboardInterrupt
    for name, tensor in model.state_dict().items():
        assert torch.equal(tensor, before[name]), name
    with pytest.raises(RuntimeError, match="no transaction was recorded"):
        proof.seal()


class Scaled(torch.nn.Module):
    """An MLP that multiplies its input by a plain tensor attribute: state that is neither a
    parameter nor a buffer, which a trace would fix into the program as a constant."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(6, 3)
        self.scale = torch.full((6,), 0.5)

    def forward(self, x):
        return self.fc(x * self.scale)


@pytest.mark.parametrize("program", PROGRAMS)
def test_a_tensor_the_model_holds_outside_its_state_is_refused(tmp_path, program):
    torch.manual_seed(3)
    model = Scaled()
    proof = zkdv.torch.ZKDV(tmp_path / "scaled.zkdv", CONFIGS[program])
    model, optimizer = proof.prepare(model, adamw(model))
    x, y = next(batches(1))
    refusal = "holds a tensor constant" if program == "torchscript" else "captured unprepared tensor state"
    with pytest.raises(RuntimeError, match=refusal):
        with proof.transaction(batch=(x, y)):
            proof.backward(F.cross_entropy(proof.forward(model, x), y))
    proof.close()


class PaddedEncoder(torch.nn.Module):
    """nn.TransformerEncoderLayer with a bool key padding mask from the batch."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x, pad):
        return self.head(self.layer(x, src_key_padding_mask=pad).mean(1))


class CausalAttention(torch.nn.Module):
    """nn.MultiheadAttention with a bool causal mask from the batch."""

    def __init__(self):
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 2, batch_first=True)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x, mask):
        return self.head(self.attn(x, x, x, attn_mask=mask, need_weights=False)[0].mean(1))


def masked_batches(kind, steps=6, seed=12):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        y = torch.randint(0, 3, (4,), generator=generator)
        x = torch.randn(4, 5, 16, generator=generator)
        if kind == "padding":
            mask = torch.zeros(4, 5, dtype=torch.bool)
            mask[0, 3:] = True
        else:
            mask = torch.triu(torch.ones(5, 5, dtype=torch.bool), 1)
        yield x, y, mask


@pytest.mark.parametrize("program", PROGRAMS)
@pytest.mark.parametrize("kind", ["padding", "causal"])
def test_bool_attention_masks_from_the_batch(tmp_path, kind, program):
    """torch makes a bool mask additive in place (zeros_like(mask).masked_fill_(mask, -inf)):
    the in-place fill of the step's own value is admitted, and the run is torch's."""
    make = PaddedEncoder if kind == "padding" else CausalAttention
    steps = 6
    tape = tmp_path / ("%s.zkdv" % kind)
    torch.manual_seed(31)
    model = make()
    with zkdv.torch.ZKDV(tape, CONFIGS[program], replay_snapshot_interval=4) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        for x, y, mask in masked_batches(kind, steps):
            with proof.transaction(batch=(x, y, mask)):
                optimizer.zero_grad()
                proof.backward(F.cross_entropy(proof.forward(model, x, mask), y))
                optimizer.step()
    torch.manual_seed(31)
    plain = make()
    optimizer = adamw(plain)
    for x, y, mask in masked_batches(kind, steps):
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(plain(x, mask), y).backward()
        optimizer.step()
    assert_same_training(model, plain)
    assert_replays_exact(tmp_path, tape, steps)


@pytest.mark.parametrize("program", PROGRAMS)
def test_the_loss_written_as_code_under_autocast(tmp_path, program):
    """bfloat16 CPU autocast around the forward and the loss, backward outside it (torch's
    recipe): the sealed step runs under the recorded autocast, as the loop did."""
    steps = 6
    tape = tmp_path / "autocast.zkdv"
    model = fresh_mlp()
    with zkdv.torch.ZKDV(tape, CONFIGS[program], replay_snapshot_interval=4) as proof:
        model, optimizer = proof.prepare(model, adamw(model))
        for x, y in batches(steps):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = F.cross_entropy(proof.forward(model, x), y)
                proof.backward(loss)
                optimizer.step()
    plain = fresh_mlp()
    optimizer = adamw(plain)
    for x, y in batches(steps):
        optimizer.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = F.cross_entropy(plain(x), y)
        loss.backward()
        optimizer.step()
    assert_same_training(model, plain)
    assert_replays_exact(tmp_path, tape, steps)
