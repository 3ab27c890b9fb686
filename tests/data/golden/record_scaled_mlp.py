"""Writes the golden float16, GradScaler tape (README.md): the MLP of tests/python/conftest.py
through zkdv.torch with AdamW in two parameter groups, every forward under
torch.autocast("cpu", dtype=torch.float16), each loss scaled by a prepared
torch.amp.GradScaler("cpu", init_scale=2**20, growth_interval=3), the gradients unscaled with
scaler.unscale_ and clipped with proof.clip_grad_norm_(1.0), stepped with scaler.step and the
scale moved with scaler.update (tape format 1.8: grad_scaler; the first steps overflow and are
skipped). Needs torch 2.3 or later (the PyPI lane). Run once, in the tree root:
PYTHONPATH=build-pypi/python $VENV/bin/python tests/data/golden/record_scaled_mlp.py OUT."""

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
with zkdv.torch.ZKDV(sys.argv[1], config, replay_snapshot_interval=6) as proof:
    model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
    scaler = proof.prepare(torch.amp.GradScaler("cpu", init_scale=2.0 ** 20, growth_interval=3))
    for x, y in batches(14):
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            with torch.autocast("cpu", dtype=torch.float16):
                loss = loss_fn(proof.forward(model, x), y)
            proof.backward(scaler.scale(loss))
            scaler.unscale_(optimizer)
            proof.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(optimizer)
        scaler.update()
