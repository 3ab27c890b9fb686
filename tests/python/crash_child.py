"""A training run for the crash tests, run as its own process: records an MLP through
zkdv.torch until it is interrupted, printing "step N" (flushed) after each committed step.

usage: crash_child.py TAPE [full-disk]

With full-disk the tape lies on a small filesystem: the run trains until the recorder
raises, then checks that the model and the optimizer state are those of plain torch.optim
after one same number of steps, and prints the result as JSON (one line)."""

import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zkdv.torch  # noqa: E402
from conftest import OPTIMIZERS, batches, fresh_mlp  # noqa: E402


def train(tape, steps, on_step):
    torch.set_num_threads(1)
    model = fresh_mlp()
    optimizer = OPTIMIZERS["adam"](model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    try:
        with zkdv.torch.ZKDV(tape, replay_snapshot_interval=1) as proof:
            model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
            for step, (x, y) in enumerate(batches(steps)):
                with proof.transaction(batch=(x, y)):
                    optimizer.zero_grad()
                    proof.backward(loss_fn(proof.forward(model, x), y))
                    optimizer.step()
                on_step(step + 1)
    except RuntimeError as error:
        return model, optimizer, error
    return model, optimizer, None


def consistent_with_plain_torch(model, optimizer, most):
    """The number of plain torch.optim steps after which parameters and state are exactly
    the model's and the optimizer's, or None."""
    reference_model = fresh_mlp()
    reference = OPTIMIZERS["adam"](reference_model.parameters())
    loss_fn = torch.nn.CrossEntropyLoss()
    for done, (x, y) in enumerate(batches(most)):
        reference.zero_grad(set_to_none=True)
        loss_fn(reference_model(x), y).backward()
        reference.step()
        same = all(torch.equal(a, b) for a, b in zip(model.parameters(), reference_model.parameters()))
        same = same and all(
            set(optimizer.state[a]) == set(reference.state[b])
            and all(torch.equal(torch.as_tensor(optimizer.state[a][k]), torch.as_tensor(reference.state[b][k])) for k in reference.state[b])
            for a, b in zip(model.parameters(), reference_model.parameters()))
        if same:
            return done + 1
    return None


def main():
    tape = sys.argv[1]
    if len(sys.argv) > 2 and sys.argv[2] == "full-disk":
        committed = []
        model, optimizer, error = train(tape, 100000, committed.append)
        steps = committed[-1] if committed else 0
        print(json.dumps({
            "error": None if error is None else str(error),
            "committed": steps,
            "consistent_after": consistent_with_plain_torch(model, optimizer, steps + 2),
        }), flush=True)
        return
    train(tape, 100000, lambda step: print("step %d" % step, flush=True))


if __name__ == "__main__":
    main()
