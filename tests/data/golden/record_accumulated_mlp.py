"""Writes the golden bfloat16, accumulated, clipped tape (README.md): the MLP of
tests/python/conftest.py through zkdv.torch with AdamW in two parameter groups, every step
accumulated over 3 micro-batches whose forwards run under torch.autocast("cpu",
dtype=torch.bfloat16) (each loss / 3), its gradients clipped with proof.clip_grad_norm_(0.5),
then proof.clip_grad_value_(0.05) (tape format 1.7: micro-batches, loss scales, autocast,
gradient transforms).
Run once, in the tree root:
PYTHONPATH=build/python /usr/bin/python3 tests/data/golden/record_accumulated_mlp.py OUT."""

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
config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.0, update_check_probability=0.4, seed=19),
                         metadata={"golden": sys.argv[1].rsplit("/", 1)[-1]})
loss_fn = torch.nn.CrossEntropyLoss()
with zkdv.torch.ZKDV(sys.argv[1], config, replay_snapshot_interval=6) as proof:
    model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
    data = list(batches(14 * 3))
    for step in range(14):
        micro = data[3 * step:3 * step + 3]
        with proof.transaction(batch=micro):
            optimizer.zero_grad()
            for x, y in micro:
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    loss = loss_fn(proof.forward(model, x), y)
                proof.backward(loss / 3)
            proof.clip_grad_norm_(model.parameters(), 0.5)
            proof.clip_grad_value_(model.parameters(), 0.05)
            optimizer.step()
