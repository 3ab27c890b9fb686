#!/usr/bin/env python3
"""Per-step time of a small CNN training loop recorded through zkdv.torch against the same
loop in plain PyTorch, on the CPU, in one process: the two loops alternate step by step
(the plain loop first in even rounds, the recorded one first in odd ones), so a machine
whose load drifts slows both alike; each round's figure is the ratio of the two loops'
median step times, and the result is the median over rounds. docs/performance.md
("Recording from Python") has the figures.

usage: overhead.py [--steps N] [--rounds R] [--threads T] [--profile] [--target PERCENT]

Exit status 1 when the median overhead exceeds --target (default: report only)."""

import argparse
import cProfile
import json
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time

import torch

import zkdv
import zkdv.torch


class DemoCnn(torch.nn.Module):
    """The C++ demo's CNN (core/cnn_demo/cnn_demo.cpp): 12x12 images, BatchNorm, four classes."""

    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 8, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(8)
        self.conv2 = torch.nn.Conv2d(8, 16, 3, padding=1)
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, x):
        h = torch.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2)
        h = torch.relu(self.conv2(h))
        return self.fc(h.mean([2, 3]))


def make_batches(count, batch_size=32, seed=3):
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        y = torch.randint(0, 4, (batch_size,), generator=generator)
        x = torch.randn(batch_size, 1, 12, 12, generator=generator) * 0.5
        x[torch.arange(batch_size), 0, 3 + 5 * (y % 2), :] += 1.0
        out.append((x, y))
    return out


class PlainLoop:
    def __init__(self):
        torch.manual_seed(1)
        self.model = DemoCnn()
        self.loss_fn = torch.nn.CrossEntropyLoss()
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=1e-3)

    def step(self, x, y):
        self.optimizer.zero_grad()
        loss = self.loss_fn(self.model(x), y)
        loss.backward()
        self.optimizer.step()


class RecordedLoop:
    def __init__(self, path):
        torch.manual_seed(1)
        model = DemoCnn()
        config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.01, update_check_probability=0.01, seed=7))
        self.proof = zkdv.torch.ZKDV(path, config)
        self.model, self.loss_fn, self.optimizer = self.proof.prepare(
            model, torch.nn.CrossEntropyLoss(), torch.optim.Adam(model.parameters(), lr=1e-3))

    def step(self, x, y):
        proof, model, loss_fn, optimizer = self.proof, self.model, self.loss_fn, self.optimizer
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            loss = loss_fn(proof.forward(model, x), y)
            proof.backward(loss)
            optimizer.step()


def time_block(loop, batches):
    times = []
    for x, y in batches:
        start = time.perf_counter()
        loop.step(x, y)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def time_round(first, second, batches):
    """Steps the two loops alternately: for each, the median wall time of a step, and its mean
    CPU time per step in the training thread and in the whole process (the recorder's
    background writer included)."""
    wall, thread, process = ([], []), [0.0, 0.0], [0.0, 0.0]
    for x, y in batches:
        for side, loop in enumerate((first, second)):
            start, start_thread, start_process = time.perf_counter(), time.thread_time(), time.process_time()
            loop.step(x, y)
            wall[side].append(time.perf_counter() - start)
            thread[side] += time.thread_time() - start_thread
            process[side] += time.process_time() - start_process
    return tuple((statistics.median(wall[side]), thread[side] / len(batches), process[side] / len(batches)) for side in (0, 1))


def round_figures(rounds):
    """What every side-by-side benchmark reports of its rounds (time_round's pairs, plain first):
    the median step times, each round's ratio, and the median overheads."""
    ratios = [r[1][0] / r[0][0] for r in rounds]
    return {
        "plain_ms_per_step": round(statistics.median(r[0][0] for r in rounds) * 1e3, 3),
        "recorded_ms_per_step": round(statistics.median(r[1][0] for r in rounds) * 1e3, 3),
        "ratios": [round(x, 3) for x in ratios],
        "overhead_percent": round((statistics.median(ratios) - 1) * 100, 1),
        "training_thread_cpu_overhead_percent": round((statistics.median(r[1][1] / r[0][1] for r in rounds) - 1) * 100, 1),
        "process_cpu_overhead_percent": round((statistics.median(r[1][2] / r[0][2] for r in rounds) - 1) * 100, 1),
    }


def report(result, target):
    """Prints the result as JSON; exit status 1 when its overhead exceeds `target` (a percentage, or None)."""
    print(json.dumps(result))
    if target is not None and result["overhead_percent"] > target:
        print("overhead %.1f %% exceeds the target %.1f %%" % (result["overhead_percent"], target), file=sys.stderr)
        return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="steps of each loop per round")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads (both loops)")
    parser.add_argument("--profile", action="store_true", help="profile the recorded loop's steps (cProfile) and print the top")
    parser.add_argument("--target", type=float, default=None, help="fail when the median overhead exceeds this percentage")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)

    batches = make_batches(arguments.steps)
    with tempfile.TemporaryDirectory() as folder:
        plain, recorded = PlainLoop(), RecordedLoop(os.path.join(folder, "bench.zkdv"))
        for loop in (plain, recorded):  # warm-up: the first step seals the program
            time_block(loop, batches[:20])
        if arguments.profile:
            profiler = cProfile.Profile()
            profiler.enable()
            time_block(recorded, batches)
            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(18)
        # The batches exist before the rounds start, so what the peak RSS gains during the
        # rounds is the loops' own memory: bounded, whatever the number of steps.
        rss_before_rounds = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        rounds = []
        for r in range(arguments.rounds):
            if r % 2 == 0:
                rounds.append(time_round(plain, recorded, batches))
            else:
                rounds.append(time_round(recorded, plain, batches)[::-1])
        recorded.proof.seal()
        tape_bytes = os.path.getsize(os.path.join(folder, "bench.zkdv"))
    result = {
        "torch": torch.__version__,
        "threads": arguments.threads,
        "steps_per_round": arguments.steps,
        "rounds": arguments.rounds,
        "load_average": round(os.getloadavg()[0], 2),
        **round_figures(rounds),
        "tape_bytes": tape_bytes,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_rss_growth_during_rounds_mb": round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before_rounds) / 1024, 1),
    }
    return report(result, arguments.target)


if __name__ == "__main__":
    sys.exit(main())
