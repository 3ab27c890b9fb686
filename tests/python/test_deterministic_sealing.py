"""Sealing is deterministic: the same model code and initial state seal to the same program
digest in every process, whatever its string hashing (TorchScript lists a module's constants
in set order, which PYTHONHASHSEED changes). A resumed run, an auditor comparing two tapes'
programs, or a trainer re-running a seal can then tell one program from another by digest."""

import os
import subprocess
import sys
from pathlib import Path

import torch

from conftest import audit

HAS_EXPORT = hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2

# Records one step of each of the tests' models into DIRECTORY/<model>-<kind>.zkdv.
CHILD = r"""
import sys
import torch
import zkdv
from conftest import MODELS, OPTIMIZERS, train_with_zkdv
torch.set_num_threads(1)
directory, kinds = sys.argv[1], sys.argv[2:]
for kind in kinds:
    for name, (make, data) in sorted(MODELS.items()):
        model = make()
        train_with_zkdv("%s/%s-%s.zkdv" % (directory, name, kind), model, OPTIMIZERS["adam"](model.parameters()), 1,
                        zkdv.ZKDVConfig(program=kind), data=data)
"""


def test_the_same_code_seals_to_the_same_digest_in_every_process(tmp_path):
    kinds = ["torchscript"] + (["exported-graph"] if HAS_EXPORT else [])
    here = Path(__file__).resolve().parent
    digests = {}
    # Four hash seeds: under set order, three constant names (CrossEntropyLoss's) come out
    # alike in all four with a chance of 1 in 216.
    for seed in ("1", "2", "3", "4"):
        directory = tmp_path / seed
        directory.mkdir()
        environment = dict(os.environ, PYTHONHASHSEED=seed)
        done = subprocess.run([sys.executable, "-c", CHILD, str(directory), *kinds], cwd=here, env=environment,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        for tape in sorted(directory.glob("*.zkdv")):
            status, info = audit("info", str(tape))
            assert status == 0, info
            digests.setdefault(tape.stem, set()).add(info["root"]["program"]["sha256"])
    assert len(digests) == 3 * len(kinds), digests
    differing = {name: found for name, found in digests.items() if len(found) != 1}
    assert not differing, differing
    # Different code is a different program.
    assert len({next(iter(found)) for found in digests.values()}) == len(digests), digests
