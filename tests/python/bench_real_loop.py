#!/usr/bin/env python3
"""Per-step time of a real training loop — a small Transformer, AdamW in two parameter groups
(no weight decay on biases and norms), a cosine learning-rate schedule, gradient accumulation
over 4 micro-batches, gradient clipping at 1.0 and, with --autocast, bfloat16 autocast — recorded through zkdv.torch against the same loop in plain PyTorch, alternating step
by step in one process as bench_overhead.py does (its timing, its rounds). Issue 27's target
is an overhead of at most 10 %; docs/performance.md ("A real loop") has the figures.

usage: bench_real_loop.py [--steps N] [--rounds R] [--threads T] [--width W] [--layers L] [--micro M] [--autocast] [--target PERCENT]

Exit status 1 when the median overhead exceeds --target (default: report only)."""

import argparse
import os
import sys
import tempfile

import torch

import contextlib

import zkdv
import zkdv.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_overhead import report, round_figures, time_block, time_round  # noqa: E402

MAX_NORM = 1.0


class SmallTransformer(torch.nn.Module):
    """Encoder layers (dropout 0, so the step is sealable) over a sequence, mean-pooled into a classifier."""

    def __init__(self, width, layers):
        super().__init__()
        self.embed = torch.nn.Linear(8, width)
        self.encoder = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(width, 4, dim_feedforward=4 * width, dropout=0.0, batch_first=True), layers)
        self.head = torch.nn.Linear(width, 4)

    def forward(self, x):
        return self.head(self.encoder(self.embed(x)).mean(1))


def sequence_batches(count, batch=16, length=32, seed=5):
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        y = torch.randint(0, 4, (batch,), generator=generator)
        x = torch.randn(batch, length, 8, generator=generator)
        x[torch.arange(batch), :, y] += 1.0
        out.append((x, y))
    return out


def groups(model):
    decayed = [p for n, p in model.named_parameters() if p.dim() >= 2]
    plain = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decayed, "weight_decay": 0.01}, {"params": plain, "weight_decay": 0.0}], lr=3e-3)


# bfloat16 autocast around the forwards (--autocast); torch 1.13 cannot run a Transformer
# layer under it, so it is off unless asked.
AUTOCAST = [contextlib.nullcontext]


class PlainLoop:
    def __init__(self, steps, width, layers):
        torch.manual_seed(1)
        self.model = SmallTransformer(width, layers)
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.optimizer = groups(self.model)
        self.scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=steps, eta_min=1e-5)

    def step(self, micro, _unused=None):
        self.optimizer.zero_grad()
        for x, y in micro:
            with AUTOCAST[0]():
                loss = self.loss_fn(self.model(x), y)
            (loss / len(micro)).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), MAX_NORM)
        self.optimizer.step()
        self.scheduler.step()


class RecordedLoop:
    def __init__(self, path, steps, width, layers):
        torch.manual_seed(1)
        model = SmallTransformer(width, layers)
        config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.01, update_check_probability=0.01, seed=7))
        self.proof = zkdv.torch.ZKDV(path, config)
        self.model, self.loss_fn, self.optimizer = self.proof.prepare(model, torch.nn.CrossEntropyLoss(), groups(model))
        self.scheduler = self.proof.prepare(torch.optim.lr_scheduler.CosineAnnealingLR(self.optimizer, T_max=steps, eta_min=1e-5))

    def step(self, micro, _unused=None):
        proof = self.proof
        with proof.transaction(batch=micro):
            self.optimizer.zero_grad()
            for x, y in micro:
                with AUTOCAST[0]():
                    loss = self.loss_fn(proof.forward(self.model, x), y)
                proof.backward(loss / len(micro))
            proof.clip_grad_norm_(self.model.parameters(), MAX_NORM)
            self.optimizer.step()
        self.scheduler.step()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps of each loop per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--width", type=int, default=64, help="the Transformer's model width (4 heads, feed-forward 4x)")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--micro", type=int, default=4, help="micro-batches per optimizer step")
    parser.add_argument("--autocast", action="store_true", help="run the forwards under torch.autocast(\"cpu\", dtype=torch.bfloat16)")
    parser.add_argument("--target", type=float, default=None, help="fail when the median overhead exceeds this percentage")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    if arguments.autocast:
        AUTOCAST[0] = lambda: torch.autocast("cpu", dtype=torch.bfloat16)
    data = sequence_batches(arguments.steps * arguments.micro)
    # bench_overhead's timing calls loop.step(x, y): here x is a step's micro-batches.
    batches = [(data[i:i + arguments.micro], None) for i in range(0, len(data), arguments.micro)]
    total_steps = (arguments.rounds + 1) * arguments.steps
    with tempfile.TemporaryDirectory() as folder:
        shape = (arguments.width, arguments.layers)
        plain, recorded = PlainLoop(total_steps, *shape), RecordedLoop(os.path.join(folder, "bench.zkdv"), total_steps, *shape)
        for loop in (plain, recorded):  # warm-up: the first step seals the program
            time_block(loop, batches[:20])
        rounds = []
        for r in range(arguments.rounds):
            rounds.append(time_round(plain, recorded, batches) if r % 2 == 0 else time_round(recorded, plain, batches)[::-1])
        recorded.proof.seal()
        tape_bytes = os.path.getsize(os.path.join(folder, "bench.zkdv"))
    result = {
        "torch": torch.__version__,
        "threads": arguments.threads,
        "width": arguments.width,
        "layers": arguments.layers,
        "micro_batches": arguments.micro,
        "autocast": arguments.autocast,
        "parameters": sum(p.numel() for p in SmallTransformer(arguments.width, arguments.layers).parameters()),
        "steps_per_round": arguments.steps,
        "rounds": arguments.rounds,
        "load_average": round(os.getloadavg()[0], 2),
        **round_figures(rounds),
        "tape_bytes": tape_bytes,
    }
    return report(result, arguments.target)

if __name__ == "__main__":
    sys.exit(main())
