"""Writes the golden plateau tape (README.md): the MLP of tests/python/conftest.py through
zkdv.torch with AdamW in two parameter groups and a prepared ReduceLROnPlateau stepped with a
held-out loss after every second step (tape format 1.9: schedule/metrics, schedule/state).
Run once, in the tree root:
PYTHONPATH=build/python /usr/bin/python3 tests/data/golden/record_plateau_mlp.py OUT."""

import sys

import torch

import zkdv
import zkdv.torch

sys.path.insert(0, "tests/python")
from conftest import fresh_mlp, batches
torch.set_num_threads(1)
model = fresh_mlp()
weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
optimizer = torch.optim.AdamW([{"params": weights, "weight_decay": 0.01}, {"params": biases, "weight_decay": 0.0}], lr=0.02)
config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.0, update_check_probability=0.4, seed=23),
                         metadata={"golden": sys.argv[1].rsplit("/", 1)[-1]})
loss_fn = torch.nn.CrossEntropyLoss()
held_out = next(batches(1, seed=99))
with zkdv.torch.ZKDV(sys.argv[1], config, replay_snapshot_interval=6) as proof:
    model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
    scheduler = proof.prepare(torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=0, threshold=0.02, cooldown=1,
                                                                         min_lr=[1e-4, 0.0]))
    for step, (x, y) in enumerate(batches(14)):
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x), y))
            optimizer.step()
        if step % 2 == 0:
            with torch.no_grad():
                scheduler.step(loss_fn(model(held_out[0]), held_out[1]))
