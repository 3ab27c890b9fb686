"""Writes the golden exported-graph tape (README.md): the MLP of tests/python/conftest.py
through zkdv.torch with ZKDVConfig(program="exported-graph"). Run once, in the tree root, on
the PyPI lane: PYTHONPATH=build-pypi/python $VENV/bin/python tests/data/golden/record_exported_mlp.py OUT."""

import sys

import torch

import zkdv
import zkdv.torch

sys.path.insert(0, "tests/python")
from conftest import fresh_mlp, batches
torch.set_num_threads(1)
model = fresh_mlp()
config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.4, update_check_probability=0.4, seed=11),
                         program="exported-graph", metadata={"golden": "mlp-exported-torch2.15-1.4"})
loss_fn = torch.nn.CrossEntropyLoss()
with zkdv.torch.ZKDV(sys.argv[1], config, replay_snapshot_interval=6) as proof:
    model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9))
    for x, y in batches(7):
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x), y))
            optimizer.step()
