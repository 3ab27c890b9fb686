#!/usr/bin/python3
"""The torch.optim side of bench_optimizers: one persistent process that steps Python's own
optimizers on request, so that the C++ bench can interleave their steps with its own and
drift hits every side alike. Only the step is timed, here, not the pipe round trip.

usage: torch_optim_stepper.py --parameters N --tensors T --threads K

Requests on stdin, one reply line each on stdout:
  setup NAME OPTIONS   OPTIONS is JSON. Builds two sets of T float32 tensors of N/T elements
                       with gradients, torch.optim.NAME(**OPTIONS) on one with foreach left
                       at its default (None) and with foreach=True on the other, and steps
                       each once, untimed, so that their state exists -> "ok"
  step default|foreach one step of that optimizer -> its wall time and the CPU time of
                       this process meanwhile, in seconds, and the page faults it took
  free                 drops both optimizers and their tensors -> "ok"
On start it replies "ready" with torch's version, its intra-op threads and the path that
foreach=None takes for these tensors.
"""

import argparse
import gc
import json
import resource
import sys
import time

import torch


def default_path(tensors):
    """What torch.optim picks when foreach and fused are None (torch 2.x decides per call;
    torch 1.13 has no such default: None means the single-tensor loop)."""
    try:
        from torch.optim.optimizer import _default_to_fused_or_foreach
    except ImportError:
        return "single-tensor"
    _, foreach = _default_to_fused_or_foreach(tensors, differentiable=False, use_fused=False)
    return "foreach" if foreach else "single-tensor"


def make_parameters(total, count):
    each = total // count
    parameters = []
    for _ in range(count):
        p = torch.randn(each, requires_grad=True)
        p.grad = torch.randn(each)
        parameters.append(p)
    return parameters


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parameters", type=int, required=True)
    parser.add_argument("--tensors", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    def reply(text):
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    reply(f"ready torch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"foreach=None takes the {default_path([torch.zeros(1)])} path")
    optimizers = {}
    for line in sys.stdin:
        words = line.split(maxsplit=2)
        if words[0] == "setup":
            optimizers.clear()
            gc.collect()
            make = getattr(torch.optim, words[1])
            options = json.loads(words[2])
            for variant, foreach in (("default", None), ("foreach", True)):
                optimizer = make(make_parameters(args.parameters, args.tensors), **options, foreach=foreach)
                optimizer.step()
                optimizers[variant] = optimizer
            reply("ok")
        elif words[0] == "step":
            optimizer = optimizers[words[1]]
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.perf_counter()
            optimizer.step()
            wall = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_SELF)
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            faults = after.ru_minflt + after.ru_majflt - before.ru_minflt - before.ru_majflt
            reply(f"{wall!r} {cpu!r} {faults}")
        elif words[0] == "free":
            optimizers.clear()
            gc.collect()
            reply("ok")
        else:
            raise SystemExit(f"torch_optim_stepper: unknown request {line!r}")


if __name__ == "__main__":
    main()
