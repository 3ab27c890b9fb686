"""Which exported form replays bit for bit against eager training (docs/compatibility.md,
"Exported-graph programs"): for the MLP, the CNN with BatchNorm and the Transformer encoder of
conftest.py, one step's loss and parameter gradients from eager PyTorch against (a) the
training-IR graph of torch.export differentiated by autograd (what the replay does), (b) a joint
forward-backward graph (aot_export_module(trace_joint=True)) and (c) the graph decomposed to
core ATen (run_decompositions) differentiated by autograd. Run with the PyPI lane's Python:
`$VENV/bin/python tests/python/measure_gradient_source.py`. Not a test: it prints a table."""

import copy
import os

import torch
from torch._functorch.aot_autograd import aot_export_module

HERE = os.path.dirname(os.path.abspath(__file__))
# conftest.py without the zkdv import (this needs no build).
_source = open(os.path.join(HERE, "conftest.py")).read().replace("import zkdv\nimport zkdv.torch\n", "")
_conftest = {}
exec(compile(_source, "conftest.py", "exec"), _conftest)


class Step(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.loss = torch.nn.CrossEntropyLoss()

    def forward(self, x, y):
        return (self.loss(self.model(x), y),)


def same(a, b):
    return sum(torch.equal(p, q) for p, q in zip(a, b)), len(b)


def main():
    torch.set_num_threads(1)
    for kind in ("mlp", "cnn", "transformer"):
        make, data = _conftest["MODELS"][kind]
        x, y = next(iter(data(1)))
        step = Step(make())
        eager = copy.deepcopy(step)
        (loss,) = eager(x, y)
        loss.backward()
        reference = [p.grad for p in eager.parameters()]

        traced = copy.deepcopy(step)
        exported = torch.export.export(traced, (x, y), strict=False)
        calls = sum(n.op == "call_function" for n in exported.graph.nodes)
        module = exported.module()
        (l1,) = module(x, y)
        l1.backward()
        print("%-12s training IR + autograd (%3d calls): loss %s, gradients %d/%d bit for bit"
              % (kind, calls, torch.equal(l1, loss), *same([p.grad for p in module.parameters()], reference)))

        joint = copy.deepcopy(step)
        graph, signature = aot_export_module(joint, (x, y), trace_joint=True, output_loss_index=0)
        calls = sum(n.op == "call_function" for n in graph.graph.nodes)
        outputs = graph(*joint.parameters(), *joint.buffers(), x, y)
        mutated = len(signature.buffers_to_mutate)
        print("%-12s joint forward-backward (%3d calls): loss %s, gradients %d/%d bit for bit"
              % (kind, calls, torch.equal(outputs[mutated], loss), *same(outputs[mutated + 1:], reference)))

        try:
            decomposed = torch.export.export(copy.deepcopy(step), (x, y), strict=False).run_decompositions().module()
            (l3,) = decomposed(x, y)
            l3.backward()
            print("%-12s core ATen + autograd: loss %s, gradients %d/%d bit for bit"
                  % (kind, torch.equal(l3, loss), *same([p.grad for p in decomposed.parameters()], reference)))
        except RuntimeError as error:
            print("%-12s core ATen + autograd: fails (%s)" % (kind, str(error).split(":")[0]))


if __name__ == "__main__":
    main()
