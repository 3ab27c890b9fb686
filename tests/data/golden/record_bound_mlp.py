"""Writes the golden tape of batches bound to a dataset (README.md; tape format 1.12, section
5.7): the MLP of tests/python/conftest.py through zkdv.torch with Adam, trained on batches of 4
samples drawn from a 40-sample dataset whose commitment of samples (zkdv.dataset.commit_samples)
is written beside the tape, each transaction naming its samples. Run once per format, in the tree
root (mlp-bound-adam-1.12 by the writers of 1.12, sha256-merkle-v1; mlp-bound-adam-1.14 by those of
1.14, sha256-merkle-v2, whose root commits the count):
PYTHONPATH=build/python /usr/bin/python3 tests/data/golden/record_bound_mlp.py OUT.zkdv OUT.samples.commit.json"""

import sys

import torch

import zkdv
import zkdv.dataset
import zkdv.torch

sys.path.insert(0, "tests/python")
from conftest import fresh_mlp

torch.set_num_threads(1)
generator = torch.Generator().manual_seed(37)
x = torch.randn(40, 6, generator=generator)
y = torch.randint(0, 3, (40,), generator=generator)
dataset = [(x[i], int(y[i])) for i in range(40)]
zkdv.dataset.commit_samples(dataset, sys.argv[2])
model = fresh_mlp()
config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.3, update_check_probability=0.4, seed=37),
                         metadata={"golden": sys.argv[1].rsplit("/", 1)[-1]}, dataset_commitment=sys.argv[2])
loss_fn = torch.nn.CrossEntropyLoss()
with zkdv.torch.ZKDV(sys.argv[1], config, replay_snapshot_interval=6) as proof:
    model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.Adam(model.parameters(), lr=0.01))
    for step in range(14):
        indices = torch.randperm(40, generator=generator)[:4].tolist()
        bx, by = torch.utils.data.default_collate([dataset[i] for i in indices])
        with proof.transaction(batch=(bx, by), samples=indices):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, bx), by))
            optimizer.step()
