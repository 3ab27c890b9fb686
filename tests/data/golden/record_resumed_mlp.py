"""Writes the golden resumed tapes (README.md): a run of 14 steps of the MLP of
tests/python/conftest.py through zkdv.torch (AdamW in two parameter groups, a prepared
StepLR) stopped after 7 steps and resumed from its checkpoint in a second process (tape format
1.10, root member resumes). Run once, in the tree root:
PYTHONPATH=build/python /usr/bin/python3 tests/data/golden/record_resumed_mlp.py FIRST SECOND
(it runs itself again for the second half, with CHECKPOINT as a third argument)."""

import os
import subprocess
import sys
import tempfile

import torch

import zkdv
import zkdv.torch

sys.path.insert(0, "tests/python")
from conftest import fresh_mlp, batches

torch.set_num_threads(1)
first, second = sys.argv[1], sys.argv[2]
resuming = len(sys.argv) > 3
model = fresh_mlp()
weights = [p for n, p in model.named_parameters() if n.endswith("weight")]
biases = [p for n, p in model.named_parameters() if n.endswith("bias")]
optimizer = torch.optim.AdamW([{"params": weights, "weight_decay": 0.01}, {"params": biases, "weight_decay": 0.0}], lr=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=3, gamma=0.5)
if resuming:
    saved = torch.load(sys.argv[3])
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    scheduler.load_state_dict(saved["scheduler"])
out = second if resuming else first
config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.3, update_check_probability=0.4, seed=29),
                         metadata={"golden": out.rsplit("/", 1)[-1]})
loss_fn = torch.nn.CrossEntropyLoss()
data = list(batches(14))
with zkdv.torch.ZKDV(out, config, replay_snapshot_interval=6, resume_from=first if resuming else None) as proof:
    model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
    proof.prepare(scheduler)
    for x, y in data[7:] if resuming else data[:7]:
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            proof.backward(loss_fn(proof.forward(model, x), y))
            optimizer.step()
        scheduler.step()
if not resuming:
    with tempfile.TemporaryDirectory() as folder:
        checkpoint = os.path.join(folder, "checkpoint.pt")
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, checkpoint)
        subprocess.run([sys.executable, __file__, first, second, checkpoint], check=True)
