#!/usr/bin/env python3
"""What binding batches to a dataset commitment costs the training loop (tape format 1.12,
section 5.7): the demo CNN of bench_overhead.py recorded through zkdv.torch, each step's batch
of 32 drawn from a 4,096-sample dataset, once with ZKDVConfig(dataset_commitment=...) and
samples= (the recorder hashes every row and cuts its Merkle proof) and once without, in one
process, the two proofs alternating step by step so that a drifting machine slows both alike.
Prints the median step times and their ratio per round and the median ratio over rounds
(docs/performance.md, "Batches bound to a dataset").

usage: bench_dataset_binding.py [--steps N] [--rounds R]"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zkdv
import zkdv.dataset
import zkdv.torch
from bench_overhead import DemoCnn

SAMPLES, BATCH = 4096, 32


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    torch.set_num_threads(1)
    generator = torch.Generator().manual_seed(5)
    images = torch.randn(SAMPLES, 1, 12, 12, generator=generator)
    labels = torch.randint(0, 4, (SAMPLES,), generator=generator)
    dataset = [(images[i], int(labels[i])) for i in range(SAMPLES)]
    folder = tempfile.mkdtemp(prefix="zkdv-bench-binding-")
    commitment = os.path.join(folder, "samples.json")
    started = time.perf_counter()
    zkdv.dataset.commit_samples(dataset, commitment)
    commit_seconds = time.perf_counter() - started
    ratios = []
    for round_ in range(arguments.rounds):
        proofs = {}
        for name, config in (("plain", zkdv.ZKDVConfig()), ("bound", zkdv.ZKDVConfig(dataset_commitment=commitment))):
            torch.manual_seed(1)
            model, loss_fn = DemoCnn(), torch.nn.CrossEntropyLoss()
            proof = zkdv.torch.ZKDV(os.path.join(folder, "%s-%d.zkdv" % (name, round_)), config)
            model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.Adam(model.parameters(), lr=0.001))
            proofs[name] = (proof, model, loss_fn, optimizer, [])
        order = ("plain", "bound") if round_ % 2 == 0 else ("bound", "plain")
        for step in range(arguments.steps):
            indices = torch.randint(0, SAMPLES, (BATCH,), generator=generator).tolist()
            x, y = torch.utils.data.default_collate([dataset[i] for i in indices])
            for name in order:
                proof, model, loss_fn, optimizer, times = proofs[name]
                begin = time.perf_counter()
                with proof.transaction(batch=(x, y), samples=indices if name == "bound" else None):
                    optimizer.zero_grad()
                    proof.backward(loss_fn(proof.forward(model, x), y))
                    optimizer.step()
                times.append(time.perf_counter() - begin)
        for proof, *_ in proofs.values():
            proof.close()
        plain, bound = (statistics.median(proofs[n][4]) for n in ("plain", "bound"))
        ratios.append(bound / plain)
        print("round %d: plain %.3f ms/step, bound %.3f ms/step, ratio %.3f" % (round_, plain * 1e3, bound * 1e3, bound / plain), flush=True)
    print(json.dumps({"samples": SAMPLES, "batch": BATCH, "steps": arguments.steps, "rounds": arguments.rounds,
                      "commit_seconds": round(commit_seconds, 3), "median_ratio": round(statistics.median(ratios), 4)}))


if __name__ == "__main__":
    main()
