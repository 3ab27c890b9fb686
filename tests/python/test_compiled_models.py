"""torch.compile: a compiled module trains with kernels the auditor's replay does not run
(measure_compiled_training.py), so the frontend refuses it, however it was compiled and
wherever it is prepared, naming why and what to do; the uncompiled module then records."""

import re

import pytest
import torch

import zkdv.torch
from conftest import assert_replays_exact, batches, fresh_mlp, train_with_zkdv

# Debian's torch 1.13 has no torch.compile: there is nothing to refuse on that lane.
pytestmark = pytest.mark.skipif(not hasattr(torch, "compile"), reason="torch %s has no torch.compile" % torch.__version__)

WHY = r"compiled kernels fuse, reorder and round differently"


def refusal(action):
    with pytest.raises(RuntimeError) as refused:
        action()
    message = str(refused.value)
    assert "ZKDV Torch cannot record" in message and "docs/python.md" in message, message
    assert re.search(WHY, message), message
    return message


def test_a_compiled_model_is_refused_at_prepare(tmp_path):
    model = fresh_mlp()
    compiled = torch.compile(model)
    proof = zkdv.torch.ZKDV(tmp_path / "compiled.zkdv")
    message = refusal(lambda: proof.prepare(compiled))
    assert "a torch.compile()d module" in message and "model._orig_mod" in message, message
    # The module itself records, and its tape replays exact: nothing of the refusal stuck.
    assert compiled._orig_mod is model
    proof.close()
    assert_replays_exact(tmp_path, _recorded(tmp_path / "eager.zkdv", model), 3)


def test_a_compiled_part_and_an_in_place_compile_are_refused(tmp_path):
    part = torch.nn.Sequential(torch.nn.Flatten(), torch.compile(torch.nn.Linear(16, 4)))
    message = refusal(lambda: zkdv.torch.ZKDV(tmp_path / "part.zkdv").prepare(part))
    assert "part '1' is compiled" in message, message

    in_place = fresh_mlp()
    in_place.compile()
    message = refusal(lambda: zkdv.torch.ZKDV(tmp_path / "in-place.zkdv").prepare(in_place))
    assert "compiled in place (.compile())" in message, message

    loss = torch.nn.CrossEntropyLoss()
    loss.compile()
    refusal(lambda: zkdv.torch.ZKDV(tmp_path / "loss.zkdv").prepare(loss))


def test_compiling_after_prepare_is_refused_not_called_unprepared(tmp_path):
    x, y = next(batches(1))
    # Compiled in place after prepare, before the step is sealed: refused at the sealing,
    # which the first transaction does.
    proof = zkdv.torch.ZKDV(tmp_path / "late.zkdv")
    model = fresh_mlp()
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    model.compile()
    message = refusal(lambda: proof.transaction(batch=(x, y)))
    assert "compiled in place" in message, message
    proof.close()
    # A wrapper compiled from the prepared model is another object: the refusal says why,
    # rather than calling it unprepared.
    proof = zkdv.torch.ZKDV(tmp_path / "wrapper.zkdv")
    model = fresh_mlp()
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    with proof.transaction(batch=(x, y)):
        message = refusal(lambda: proof.forward(torch.compile(model), x))
    assert "a torch.compile()d module" in message, message
    proof.close()


def _recorded(path, model):
    train_with_zkdv(path, model, torch.optim.Adam(model.parameters(), lr=0.01), 3)
    return path
