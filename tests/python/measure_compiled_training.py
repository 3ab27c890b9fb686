"""Measures whether torch.compile trains the tests' models (conftest.MODELS) bit for bit like
eager torch: per model, Adam steps from one initial state, eager and compiled, then the
tensors of the two state_dicts that differ. Not a test (inductor compiles for minutes); its
result is why the frontend refuses compiled modules (docs/python.md, "Compiled models").

    cd tests/python && PYTHONPATH=../../build-pypi/python $VENV/bin/python measure_compiled_training.py [steps]
"""

import copy
import sys

import torch

from conftest import MODELS, OPTIMIZERS, train_plain


def main() -> None:
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    torch.set_num_threads(1)
    print("torch %s, %d Adam steps, 1 thread" % (torch.__version__, steps))
    for kind, (make, data) in MODELS.items():
        eager = make()
        compiled = copy.deepcopy(eager)
        train_plain(eager, OPTIMIZERS["adam"](eager.parameters()), steps, data)
        train_plain(torch.compile(compiled), OPTIMIZERS["adam"](compiled.parameters()), steps, data)
        ours, theirs = eager.state_dict(), compiled.state_dict()
        differing = [name for name in ours if not torch.equal(ours[name], theirs[name])]
        largest = max((float((ours[n].double() - theirs[n].double()).abs().max()) for n in differing), default=0.0)
        print("%-12s %s" % (kind, "bit-identical" if not differing else
                            "differs in %d of %d tensors (largest difference %.3g): %s" % (len(differing), len(ours), largest, ", ".join(differing[:4]))),
              flush=True)


if __name__ == "__main__":
    main()
