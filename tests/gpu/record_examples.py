#!/usr/bin/env python3
"""Records the device check's three examples through zkdv.torch on one device, and times the
training step with and without recording (tests/gpu/device_check.sh, README "The GPU device
check").

For each model (an MLP, a small CNN with BatchNorm, a one-layer nn.TransformerEncoderLayer
model; pure torch, Adam, replay snapshots every 12 transactions) it writes
  OUT/NAME.zkdv        the check tape: --steps transactions, each with its state digest and
                       full deltas; replayed and tampered later;
  OUT/NAME-timed.zkdv  the recorded side of the timing loop (checks sampled at 1 %),
                       replayed for throughput;
and OUT/record.json with the environment and, per model, the unrecorded and the recorded
median step time and the recording overhead.

Timing (as tests/python/bench_overhead.py): a plain loop and a recorded loop of the same
model, from the same weights, over the same batches, stepped alternately (plain first in even
rounds), each step timed to the end of its GPU work (torch.cuda.synchronize). Each round's
ratio is recorded median / plain median; the overhead is the median ratio minus one.

usage: record_examples.py --device cuda:0|cpu --out DIR [--steps N] [--timing-steps N]
                          [--rounds R] [--warmup W] [--models mlp,cnn,transformer]
"""

import argparse
import copy
import json
import os
import statistics
import sys
import time
import traceback
import warnings

SNAPSHOT_INTERVAL = 12


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--out", required=True, help="folder for the tapes and record.json")
    parser.add_argument("--steps", type=int, default=36, help="transactions of each check tape")
    parser.add_argument("--timing-steps", type=int, default=96, help="timed steps per round and loop")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps of each loop first")
    parser.add_argument("--models", default="mlp,cnn,transformer")
    return parser.parse_args()


arguments = parse_arguments()
CUDA = arguments.device.startswith("cuda")
if CUDA:
    # cuBLAS is deterministic only with a fixed workspace, set before CUDA starts.
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")

import torch  # noqa: E402  (after the environment above)

import zkdv  # noqa: E402
import zkdv.torch  # noqa: E402


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(32, 128)
        self.out = torch.nn.Linear(128, 10)

    def forward(self, x):
        return self.out(torch.relu(self.hidden(x)))


class SmallCNN(torch.nn.Module):
    """Convolutions with BatchNorm (running statistics: buffers the step mutates); strided,
    not max-pooled, so that every backward kernel is a deterministic one on CUDA."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.norm = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = torch.relu(self.norm(self.conv1(x)))
        h = torch.relu(self.conv2(h))
        return self.head(h.mean([2, 3]))


class SmallTransformer(torch.nn.Module):
    """One nn.TransformerEncoderLayer (dropout 0: deterministic, so sealable), mean-pooled."""

    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Linear(8, 32)
        self.encoder = torch.nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.0, batch_first=True)
        self.head = torch.nn.Linear(32, 4)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(1))


def mlp_batches(count, generator):
    centers = torch.randn(10, 32, generator=generator) * 2
    out = []
    for _ in range(count):
        y = torch.randint(0, 10, (64,), generator=generator)
        out.append((centers[y] + torch.randn(64, 32, generator=generator), y))
    return out


def image_batches(count, generator):
    out = []
    for _ in range(count):
        y = torch.randint(0, 4, (32,), generator=generator)
        x = torch.randn(32, 1, 16, 16, generator=generator)
        x[torch.arange(32), 0, 3 * y + 2, :] += 3.0  # a bright row whose position is the class
        out.append((x, y))
    return out


def sequence_batches(count, generator):
    out = []
    for _ in range(count):
        y = torch.randint(0, 4, (16,), generator=generator)
        x = torch.randn(16, 12, 8, generator=generator)
        x[torch.arange(16), :, y] += 2.0  # the class is the feature that is high all along
        out.append((x, y))
    return out


MODELS = {
    "mlp": (MLP, mlp_batches),
    "cnn": (SmallCNN, image_batches),
    "transformer": (SmallTransformer, sequence_batches),
}


def synchronize():
    if CUDA:
        torch.cuda.synchronize()


def config(check_probability):
    return zkdv.ZKDVConfig(
        sampling_policy=zkdv.SamplingPolicy(state_check_probability=check_probability, update_check_probability=check_probability, seed=7),
        metadata={"device_check": True})


def adam(model):
    # The single-tensor rule (foreach=False), which the replay's optimizer contract runs: on
    # CUDA torch would pick its foreach kernels, which the replay judges across environments
    # (docs/replay.md, "Determinism profile"), and a bit-for-bit replay is what is checked.
    return torch.optim.Adam(model.parameters(), lr=1e-3, foreach=False)


class PlainLoop:
    def __init__(self, model):
        self.model = model
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.optimizer = adam(model)

    def step(self, x, y):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()
        return loss

    def close(self):
        pass


class RecordedLoop:
    def __init__(self, model, path, check_probability):
        self.proof = zkdv.torch.ZKDV(path, config(check_probability), replay_snapshot_interval=SNAPSHOT_INTERVAL)
        self.model, self.loss_fn, self.optimizer = self.proof.prepare(
            model, torch.nn.CrossEntropyLoss(), adam(model))

    def step(self, x, y):
        proof = self.proof
        with proof.transaction(batch=(x, y)):
            self.optimizer.zero_grad()
            loss = self.loss_fn(proof.forward(self.model, x), y)
            proof.backward(loss)
            self.optimizer.step()
        return loss

    def close(self):
        self.proof.seal()


def timed_step(loop, x, y):
    start = time.perf_counter()
    loop.step(x, y)
    synchronize()
    return time.perf_counter() - start


def record_model(name, out):
    make_model, make_batches = MODELS[name]
    device = torch.device(arguments.device)
    generator = torch.Generator().manual_seed(sorted(MODELS).index(name) + 3)
    total = arguments.steps + arguments.warmup + arguments.rounds * arguments.timing_steps
    batches = [(x.to(device), y.to(device)) for x, y in make_batches(total, generator)]
    torch.manual_seed(11)
    initial = make_model().to(device)

    # The check tape.
    tape = os.path.join(out, name + ".zkdv")
    # Every transaction carries its state digest and full deltas: the strongest replay, and
    # sampling draws that an edit of one transaction cannot change for the ones after it
    # (they are bound to the hash chain, docs/tape-format.md), so the tampered copy stays
    # readable and only the edited transaction can fail.
    loop = RecordedLoop(copy.deepcopy(initial), tape, check_probability=1.0)
    losses = [float(loop.step(x, y)) for x, y in batches[:arguments.steps]]
    counted = loop.proof.statistics
    loop.close()
    figures = {"tape": tape, "transactions": arguments.steps, "first_loss": losses[0], "last_loss": losses[-1],
               "snapshots": counted["snapshots"], "side_stream_copies": counted["snapshot_side_stream_copies"],
               "training_stream_copies": counted["snapshot_training_stream_copies"]}
    try:
        figures.update(time_model(initial, batches[arguments.steps:], os.path.join(out, name + "-timed.zkdv")))
    except Exception as e:  # noqa: BLE001  (the check tape stands; the table says why no figures)
        traceback.print_exc()
        figures["timing_error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return figures


def time_model(initial, timing, timed_tape):
    """The timing loops, alternating step by step."""
    # Sampled checks as a real run would use them (as tests/python/bench_overhead.py does).
    plain, recorded = PlainLoop(copy.deepcopy(initial)), RecordedLoop(copy.deepcopy(initial), timed_tape, check_probability=0.01)
    for x, y in timing[:arguments.warmup]:  # the first recorded step seals the program
        timed_step(plain, x, y)
        timed_step(recorded, x, y)
    rounds = []
    at = arguments.warmup
    for r in range(arguments.rounds):
        times = ([], [])
        for x, y in timing[at:at + arguments.timing_steps]:
            order = ((0, plain), (1, recorded)) if r % 2 == 0 else ((1, recorded), (0, plain))
            for side, each in order:
                times[side].append(timed_step(each, x, y))
        at += arguments.timing_steps
        rounds.append((statistics.median(times[0]), statistics.median(times[1])))
    start = time.perf_counter()
    recorded.close()
    seal_seconds = time.perf_counter() - start
    plain_step = statistics.median(r[0] for r in rounds)
    ratios = [r[1] / r[0] for r in rounds]
    return {
        "timed_tape": timed_tape,
        "timed_transactions": arguments.warmup + arguments.rounds * arguments.timing_steps,
        "plain_ms_per_step": round(plain_step * 1e3, 4),
        "recorded_ms_per_step": round(statistics.median(r[1] for r in rounds) * 1e3, 4),
        "plain_steps_per_second": round(1.0 / plain_step, 2),
        "ratios": [round(x, 4) for x in ratios],
        "overhead_percent": round((statistics.median(ratios) - 1) * 100, 2),
        "seal_seconds": round(seal_seconds, 3),
    }


def environment():
    env = {
        "torch": torch.__version__,
        "device": arguments.device,
        "cuda": torch.version.cuda,
        "python": sys.version.split()[0],
        "intra_op_threads": torch.get_num_threads(),
    }
    if CUDA:
        env.update({
            "device_name": torch.cuda.get_device_name(torch.device(arguments.device)),
            "cudnn": torch.backends.cudnn.version(),
            "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
            "cudnn_deterministic": torch.backends.cudnn.deterministic,
            "cudnn_benchmark": torch.backends.cudnn.benchmark,
            "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
            "tf32_cudnn": torch.backends.cudnn.allow_tf32,
            "CUBLAS_WORKSPACE_CONFIG": os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        })
    return env


def main():
    os.makedirs(arguments.out, exist_ok=True)
    if CUDA:
        if not torch.cuda.is_available():
            print("record_examples: --device %s, but this torch (%s) sees no CUDA device" % (arguments.device, torch.__version__),
                  file=sys.stderr)
            return 2
        # The deterministic profile (issue 32): kernels that are nondeterministic only warn,
        # and the warnings are counted in record.json, so a replay that is not bit for bit
        # can be read against them.
        torch.use_deterministic_algorithms(True, warn_only=True)
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
    result = {"environment": environment(), "snapshot_interval": SNAPSHOT_INTERVAL, "models": {}}
    failed = False
    for name in arguments.models.split(","):
        if name not in MODELS:
            print("record_examples: no model %r (%s)" % (name, ", ".join(MODELS)), file=sys.stderr)
            return 2
        started = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                figures = record_model(name, arguments.out)
            except Exception as e:  # noqa: BLE001  (one model's failure leaves the others to check)
                traceback.print_exc()
                figures = {"error": "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")}
                failed = True
        notes = sorted({str(w.message).splitlines()[0][:200] for w in caught if "determinis" in str(w.message)})
        figures["nondeterminism_warnings"] = notes
        figures["seconds"] = round(time.perf_counter() - started, 2)
        result["models"][name] = figures
        if "error" in figures:
            print("record_examples: %s: %s" % (name, figures["error"]), file=sys.stderr)
        else:
            print("record_examples: %s: %d transactions, loss %.4f -> %.4f; %s" % (
                name, figures["transactions"], figures["first_loss"], figures["last_loss"],
                figures.get("timing_error") or "step %.3f ms plain, %.3f ms recorded (%+.1f %%)" % (
                    figures["plain_ms_per_step"], figures["recorded_ms_per_step"], figures["overhead_percent"])), file=sys.stderr)
    with open(os.path.join(arguments.out, "record.json"), "w") as f:
        json.dump(result, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
