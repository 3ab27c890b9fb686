"""Shared pieces of the Python frontend's tests: a small MLP task, the two training loops
(through zkdv.torch and plain torch.optim), and the auditor run on a tape."""

import json
import os
import subprocess

import pytest
import torch

import zkdv
import zkdv.torch

AUDIT = os.environ.get("ZKDV_AUDIT")


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(6, 16)
        self.out = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


class SmallCNN(torch.nn.Module):
    """Convolution, BatchNorm (running statistics: buffers the step mutates) and a head."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(4)
        self.head = torch.nn.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = torch.relu(self.norm(self.conv(x)))
        return self.head(torch.nn.functional.max_pool2d(x, 2).flatten(1))


class TinyTransformer(torch.nn.Module):
    """One nn.TransformerEncoderLayer (dropout 0: deterministic, so sealable) over a short
    sequence, mean-pooled into a classifier."""

    def __init__(self, dropout=0.0):
        super().__init__()
        self.embed = torch.nn.Linear(4, 16)
        self.encoder = torch.nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=dropout, batch_first=True)
        self.head = torch.nn.Linear(16, 3)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(1))


def sequence_batches(steps, seed=5):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        y = torch.randint(0, 3, (8,), generator=generator)
        x = torch.randn(8, 5, 4, generator=generator)
        x[torch.arange(8), :, y] += 2.0  # the class is the feature that is high all along
        yield x, y


def image_batches(steps, seed=4):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        y = torch.randint(0, 3, (8,), generator=generator)
        x = torch.randn(8, 1, 8, 8, generator=generator)
        x[torch.arange(8), 0, 2 * y + 1, :] += 3.0  # a bright row whose position is the class
        yield x, y


def batches(steps, seed=3):
    generator = torch.Generator().manual_seed(seed)
    centers = torch.randn(3, 6, generator=generator) * 2
    for _ in range(steps):
        y = torch.randint(0, 3, (16,), generator=generator)
        yield centers[y] + torch.randn(16, 6, generator=generator), y


def fresh_mlp(seed=11):
    torch.manual_seed(seed)
    return MLP()


def fresh_cnn(seed=12):
    torch.manual_seed(seed)
    return SmallCNN()


def fresh_transformer(seed=13):
    torch.manual_seed(seed)
    return TinyTransformer()


# The real models of issue 16, each with the batches it trains on.
MODELS = {
    "mlp": (fresh_mlp, batches),
    "cnn": (fresh_cnn, image_batches),
    "transformer": (fresh_transformer, sequence_batches),
}


# The optimizers the tests train with, as an ordinary loop would construct them.
OPTIMIZERS = {
    "sgd_momentum": lambda parameters: torch.optim.SGD(parameters, lr=0.05, momentum=0.9),
    "adam": lambda parameters: torch.optim.Adam(parameters, lr=0.01),
    "adamw": lambda parameters: torch.optim.AdamW(parameters, lr=0.01),
    "rmsprop": lambda parameters: torch.optim.RMSprop(parameters, lr=0.01),
    "adagrad": lambda parameters: torch.optim.Adagrad(parameters, lr=0.05),
}


def train_with_zkdv(path, model, optimizer, steps, config=None, data=batches, **proof_options):
    """The ordinary loop, changed where the seed's API asks."""
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    with zkdv.torch.ZKDV(path, config, **proof_options) as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
        for x, y in data(steps):
            with proof.transaction(batch=(x, y)):
                optimizer.zero_grad()
                loss = loss_fn(proof.forward(model, x), y)
                proof.backward(loss)
                optimizer.step()
            losses.append(loss.item())
    return losses


def train_plain(model, optimizer, steps, data=batches):
    loss_fn = torch.nn.CrossEntropyLoss()
    losses = []
    for x, y in data(steps):
        optimizer.zero_grad(set_to_none=True)
        loss = loss_fn(model(x), y)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


def audit(*arguments):
    """Runs zkdv-audit ARGUMENTS --json; returns (exit status, parsed output)."""
    assert AUDIT, "ZKDV_AUDIT names the zkdv-audit to test with (ctest sets it)"
    if arguments[0] == "replay" and "--time-budget-floor" not in arguments:
        # These tests are about verdicts, not the time budget: a replay worker that starts
        # libtorch on a loaded machine (CI building beside it) may take longer than the 5 s
        # default, and would make its transactions unverifiable.
        arguments = (*arguments, "--time-budget-floor", "120")
    done = subprocess.run([AUDIT, *arguments, "--json"], capture_output=True, text=True, timeout=300)
    try:
        output = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise AssertionError("zkdv-audit %s printed no JSON: %s %s" % (arguments, done.stdout, done.stderr))
    return done.returncode, output


def replay_all(tmp_path, tape):
    """Ingests `tape` into a case of its own and replays every transaction: (exit status, JSON)."""
    case = tmp_path / (tape.stem + ".zkaudit")
    status, ingested = audit("ingest", str(tape), "--case", str(case))
    assert status == 0, ingested
    return audit("replay", str(case), "--select", "all")


def independent_tape(tmp_path, name, *options, steps=14, interval=6):
    """A tape of tests/oracle/record.py, which writes the format from the spec alone with real
    torch.optim, torch's own schedulers, clipping and accumulation, and no zkdv (SGD)."""
    import sys
    from pathlib import Path

    tape = tmp_path / name
    script = Path(__file__).resolve().parents[1] / "oracle" / "record.py"
    subprocess.run([sys.executable, str(script), str(tape), "--optimizer", "SGD", "--steps", str(steps), "--interval", str(interval), *options],
                   check=True, capture_output=True, timeout=300)
    return tape


def assert_example_replays_exact(tmp_path, example, steps):
    """Runs app/python/examples/EXAMPLE OUT.zkdv, as the README does, and replays its tape."""
    import sys

    script = os.path.join(os.path.dirname(__file__), "..", "..", "app", "python", "examples", example)
    tape = tmp_path / (os.path.splitext(example)[0] + ".zkdv")
    done = subprocess.run([sys.executable, script, str(tape)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert_replays_exact(tmp_path, tape, steps)


def assert_replays_exact(tmp_path, tape, steps):
    status, verified = audit("verify", str(tape))
    assert status == 0 and verified["status"] == "sealed", verified
    assert verified["transactions"] == steps

    case = tmp_path / (tape.stem + ".zkaudit")
    status, ingested = audit("ingest", str(tape), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all")
    assert status == 0 and replayed["passed"], replayed
    assert replayed["replayed"] == steps
    assert replayed["verdicts"]["exact"] == steps, replayed["verdicts"]


@pytest.fixture(autouse=True)
def one_thread():
    # The tape records the intra-op thread count, and the replay uses the recorded one.
    torch.set_num_threads(1)


def pytest_sessionfinish(session, exitstatus):
    # For ctest's SKIP_RETURN_CODE: a run whose tests were all skipped exits with the code
    # ZKDV_ALL_SKIPPED_EXIT names, so it never reads as passed.
    code = os.environ.get("ZKDV_ALL_SKIPPED_EXIT")
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if code and exitstatus == 0 and reporter is not None:
        if reporter.stats.get("skipped") and not reporter.stats.get("passed"):
            session.exitstatus = int(code)
