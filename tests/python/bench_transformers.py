#!/usr/bin/env python3
"""Per-step time of a Hugging Face loop — a tiny Llama from transformers (2 layers, width 64),
dict batches, the model's own loss, AdamW in two parameter groups, transformers' warm-up cosine
schedule, accumulation over 4 micro-batches, clipping at 1.0 — recorded through zkdv.torch
(exported-graph program) against the same loop in plain PyTorch, alternating step by step in
one process as bench_overhead.py does. Issue 28's targets: at most 10 % overhead per optimizer
step, and peak memory that does not grow with the number of steps (the process's peak RSS
after the warm-up and after every round are reported). docs/performance.md ("Hugging Face
models") has the figures. PyPI lane only (torch 2.x, transformers).

usage: bench_transformers.py [--steps N] [--rounds R] [--threads T] [--target PERCENT]"""

import argparse
import os
import resource
import sys
import tempfile

import torch
import transformers

import zkdv
import zkdv.torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_overhead import report, round_figures, time_block, time_round  # noqa: E402

MICRO, LENGTH, VOCAB = 4, 32, 256


def llama():
    torch.manual_seed(1)
    config = transformers.LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=172, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=64, bos_token_id=0, eos_token_id=1, pad_token_id=2)
    return transformers.LlamaForCausalLM(config)


def groups(model):
    decayed = [p for n, p in model.named_parameters() if p.dim() >= 2]
    plain = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decayed, "weight_decay": 0.01}, {"params": plain, "weight_decay": 0.0}], lr=1e-3)


def token_batches(count, seed=5):
    generator = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(count):
        ids = torch.randint(3, VOCAB, (8, LENGTH), generator=generator)
        out.append({"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids})
    return out


class PlainLoop:
    def __init__(self, steps):
        self.model = llama()
        self.optimizer = groups(self.model)
        self.scheduler = transformers.get_cosine_schedule_with_warmup(self.optimizer, 10, steps)

    def step(self, micro, _unused=None):
        self.optimizer.zero_grad()
        for part in micro:
            (self.model(**part, use_cache=False).loss / len(micro)).backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.optimizer.step()
        self.scheduler.step()


class RecordedLoop:
    def __init__(self, path, steps):
        model = llama()
        config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.01, update_check_probability=0.01, seed=7),
                                 program="exported-graph")
        self.proof = zkdv.torch.ZKDV(path, config)
        self.model, self.optimizer = self.proof.prepare(model, groups(model))
        self.scheduler = self.proof.prepare(transformers.get_cosine_schedule_with_warmup(self.optimizer, 10, steps))

    def step(self, micro, _unused=None):
        proof = self.proof
        with proof.transaction(batch=micro):
            self.optimizer.zero_grad()
            for part in micro:
                proof.backward(proof.forward(self.model, **part, use_cache=False).loss / len(micro))
            proof.clip_grad_norm_(self.model.parameters(), 1.0)
            self.optimizer.step()
        self.scheduler.step()


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="steps of each loop per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--target", type=float, default=None, help="fail when the median overhead exceeds this percentage")
    arguments = parser.parse_args()
    torch.set_num_threads(arguments.threads)
    data = token_batches(arguments.steps * MICRO)
    batches = [(data[i:i + MICRO], None) for i in range(0, len(data), MICRO)]
    total_steps = (arguments.rounds + 1) * arguments.steps
    with tempfile.TemporaryDirectory() as folder:
        tape = os.path.join(folder, "bench.zkdv")
        plain, recorded = PlainLoop(total_steps), RecordedLoop(tape, total_steps)
        for loop in (plain, recorded):  # warm-up: the first step seals the program
            time_block(loop, batches[:5])
        peaks = [peak_rss_mb()]
        rounds = []
        for r in range(arguments.rounds):
            rounds.append(time_round(plain, recorded, batches) if r % 2 == 0 else time_round(recorded, plain, batches)[::-1])
            peaks.append(peak_rss_mb())
        recorded.proof.seal()
        tape_bytes = os.path.getsize(tape)
    result = {
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "threads": arguments.threads,
        "parameters": sum(p.numel() for p in llama().parameters()),
        "micro_batches": MICRO,
        "steps_per_round": arguments.steps,
        "rounds": arguments.rounds,
        "load_average": round(os.getloadavg()[0], 2),
        **round_figures(rounds),
        "peak_rss_mb_after_warmup_and_each_round": [round(p, 1) for p in peaks],
        "tape_bytes": tape_bytes,
    }
    return report(result, arguments.target)

if __name__ == "__main__":
    sys.exit(main())
