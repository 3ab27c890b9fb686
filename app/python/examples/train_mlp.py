"""An ordinary PyTorch training loop recorded with zkdv.torch (docs/python.md).

usage: train_mlp.py OUT.zkdv
"""
import sys

import torch
import zkdv
import zkdv.torch

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
loss_fn = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
data = [(torch.randn(32, 8), torch.randint(0, 3, (32,))) for _ in range(40)]

config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.2, update_check_probability=0.2))
with zkdv.torch.ZKDV(sys.argv[1], config) as proof:
    model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
    # A prepared scheduler: each step's learning rate is recorded, and the auditor checks it
    # against the cosine schedule (docs/python.md, "Learning-rate schedules").
    scheduler = proof.prepare(torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=len(data)))
    for x, y in data:
        with proof.transaction(batch=(x, y)):
            optimizer.zero_grad()
            loss = loss_fn(proof.forward(model, x), y)
            proof.backward(loss)
            # Clipping inside the step: recorded, and re-applied by the replay (tape format 1.7).
            proof.clip_grad_norm_(model.parameters(), max_norm=1.0)
            optimizer.step()
        scheduler.step()
print("%s: %d steps, final loss %.4f" % (sys.argv[1], len(data), loss.item()))
