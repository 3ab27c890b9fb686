#!/usr/bin/python3
"""Runs real torch.optim optimizers and records what they did, for the C++ contracts to
match bit for bit (tests/optim/test_optimizer_oracle.cpp).

usage: generate_optimizer_oracle.py OUTDIR [--only NAME]

For every case in optimizer_cases/*.py whose optimizer this torch has, writes
OUTDIR/<case>.safetensors holding:
  init/<i>                       the initial parameters
  grad/<s>/<i>                   the gradient fed at step s (absent: no gradient that step);
  grad/<s>/<i>/indices, /values  the same for sparse COO gradients
  param/<s>/<i>                  every parameter after step s
  state/<s>/<i>/<slot>           every state slot after step s (Python numbers as 0-d
                                 tensors: int as I64, float as F64; None slots left out)
and in __metadata__ "case" (JSON: optimizer, groups with parameter indexes and options,
dtype, steps, shapes) and "torch_version".
Cases whose optimizer this torch lacks are listed on stderr and skipped.

Also writes OUTDIR/torch_optimizers.json: every torch.optim optimizer class this torch has,
with its constructor's options and their defaults, so that the C++ test can demand a
contract and oracle cases for each, and an exercised or refused case for every option.
"""

import importlib
import inspect
import json
import os
import pathlib
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_writer  # noqa: E402

SHAPES = [(3, 4), (5,), (2, 3, 2), (1,)]
GROUP_MEMBERS = [[0, 2], [1, 3]]


def has_gradient(step, index):
    # Parameter 1 starts late (lazy state), and every parameter misses some steps.
    if index == 1 and step < 3:
        return False
    return (step + index) % 5 != 3


def make_gradient(generator, shape, dtype, sparse):
    dense = torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)
    if not sparse:
        return dense
    mask = torch.rand(shape, generator=generator) < 0.5
    return (dense * mask.to(dtype)).to_sparse().coalesce()


def state_tensor(value):
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64)
    raise TypeError("unexpected state value %r" % (value,))


def run_case(case, out_dir):
    optimizer_class = getattr(torch.optim, case["optimizer"], None)
    if optimizer_class is None:
        print("skipped %s: torch %s has no torch.optim.%s" % (case["name"], torch.__version__, case["optimizer"]), file=sys.stderr)
        return False
    dtype = {"float32": torch.float32, "float64": torch.float64}[case["dtype"]]
    shapes = case.get("shapes", SHAPES)
    members = case.get("members", GROUP_MEMBERS)
    generator = torch.Generator().manual_seed(case.get("seed", 1234))
    params = [torch.nn.Parameter(torch.randn(shape, generator=generator, dtype=torch.float64).to(dtype)) for shape in shapes]
    groups = [dict(params=[params[i] for i in group], **options) for group, options in zip(members, case["groups"])]
    optimizer = optimizer_class(groups, **case.get("constructor", {}))

    tensors = {}
    for i, p in enumerate(params):
        tensors["init/%d" % i] = p.detach().clone()
    sparse = case.get("sparse", False)
    for step in range(case["steps"]):
        for i, p in enumerate(params):
            if has_gradient(step, i):
                p.grad = make_gradient(generator, p.shape, dtype, sparse)
                if sparse:
                    tensors["grad/%d/%d/indices" % (step, i)] = p.grad.indices().clone()
                    tensors["grad/%d/%d/values" % (step, i)] = p.grad.values().clone()
                else:
                    tensors["grad/%d/%d" % (step, i)] = p.grad.detach().clone()
            else:
                p.grad = None
        optimizer.step()
        for i, p in enumerate(params):
            tensors["param/%d/%d" % (step, i)] = p.detach().clone()
            for slot, value in sorted(optimizer.state[p].items()):
                if value is not None:
                    tensors["state/%d/%d/%s" % (step, i, slot)] = state_tensor(value)

    # The options torch actually used, defaults filled in, as the contracts see them.
    recorded_groups = []
    for group, member in zip(optimizer.param_groups, members):
        options = {}
        for key, value in group.items():
            if key == "params":
                continue
            options[key] = list(value) if isinstance(value, tuple) else value
        recorded_groups.append({"parameters": member, "options": options})
    metadata = {
        "case": json.dumps({"name": case["name"], "optimizer": case["optimizer"], "dtype": case["dtype"],
                            "steps": case["steps"], "sparse": sparse, "shapes": [list(s) for s in shapes],
                            "groups": recorded_groups}),
        "torch_version": torch.__version__,
    }
    safetensors_writer.save(os.path.join(out_dir, case["name"] + ".safetensors"), tensors, metadata)
    return True


def all_cases():
    folder = pathlib.Path(__file__).resolve().parent / "optimizer_cases"
    cases = []
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        module = importlib.import_module("optimizer_cases." + path.stem)
        cases.extend(module.cases())
    names = [case["name"] for case in cases]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise SystemExit("duplicate case names: %s" % ", ".join(duplicates))
    return cases


def json_default(value):
    # torch.optim deletes its `optimizer` submodule's name; the module itself stays importable.
    if value is getattr(importlib.import_module("torch.optim.optimizer"), "required", None):
        return None  # torch 1.13's SGD: lr has no default (the contract's null)
    if isinstance(value, tuple):
        return [json_default(v) for v in value]
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def torch_optimizers():
    """Every optimizer class torch.optim exports, with its constructor options' defaults."""
    found = {}
    for name in sorted(dir(torch.optim)):
        cls = getattr(torch.optim, name)
        if not (isinstance(cls, type) and issubclass(cls, torch.optim.Optimizer)) or cls is torch.optim.Optimizer:
            continue
        options = {}
        for key, parameter in inspect.signature(cls.__init__).parameters.items():
            if key in ("self", "params") or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                continue
            options[key] = json_default(parameter.default) if parameter.default is not parameter.empty else None
        found[name] = options
    return found


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    out_dir = sys.argv[1]
    only = sys.argv[3] if len(sys.argv) > 3 and sys.argv[2] == "--only" else None
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)
    with open(os.path.join(out_dir, "torch_optimizers.json"), "w") as out:
        json.dump({"torch_version": torch.__version__, "optimizers": torch_optimizers()}, out, indent=1)
    written = 0
    for case in all_cases():
        if only and case["optimizer"] != only:
            continue
        written += run_case(case, out_dir)
    print("wrote %d oracle cases to %s (torch %s)" % (written, out_dir, torch.__version__))


if __name__ == "__main__":
    main()
