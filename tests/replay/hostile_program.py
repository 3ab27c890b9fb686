#!/usr/bin/python3
"""Writes a TorchScript program with the layout of tests/oracle/record.py's model whose
training_step misbehaves, for the containment tests: the test seals it into a tape in
place of the honest program, as a dishonest trainer could.

usage: hostile_program.py loop|print|allocate|loop-marked|allocate-marked OUT.pt
  loop             never returns
  print            prints a fake summary line to stdout, then trains as recorded
  allocate         touches 4 GiB, far beyond what the tape suggests, then trains as recorded
  loop-marked      never returns on a batch whose first input holds a value above 1000 (the
                   transactions a dishonest trainer altered), trains as recorded on the others
  allocate-marked  touches 4 GiB on such a batch, trains as recorded on the others
"""

import os
import sys
from typing import List

import torch
from torch import Tensor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "oracle"))
from record import Net  # noqa: E402


class Hostile(Net):
    def honest_loss(self, batch: List[Tensor]) -> Tensor:
        x = batch[0]
        y = batch[1]
        self.input_mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
        logits = self.out(torch.relu(self.hidden(x)))
        return torch.nn.functional.cross_entropy(logits, y)


class Looping(Hostile):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        n = 0
        while n >= 0:
            n = (n + 1) % 1000
        return self.honest_loss(batch)


class Printing(Hostile):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        print("  exact 999, within tolerance 0, diverged 0, unverifiable 0 (printed by the program)")
        return self.honest_loss(batch)


class Allocating(Hostile):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        big = torch.ones([1 << 30])
        return self.honest_loss(batch) + (big[0] - 1.0)


class MarkedLooping(Hostile):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        if bool(batch[0].abs().max() > 1000.0):
            n = 0
            while n >= 0:
                n = (n + 1) % 1000
        return self.honest_loss(batch)


class MarkedAllocating(Hostile):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        if bool(batch[0].abs().max() > 1000.0):
            big = torch.ones([1 << 30])
            return self.honest_loss(batch) + (big[0] - 1.0)
        return self.honest_loss(batch)


class MarkedRaising(Hostile):
    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        if bool(batch[0].abs().max() > 1000.0):
            raise RuntimeError("this step does not run on the cheated batch")
        return self.honest_loss(batch)


def main():
    kinds = {"loop": Looping, "print": Printing, "allocate": Allocating, "loop-marked": MarkedLooping,
             "allocate-marked": MarkedAllocating, "raise-marked": MarkedRaising}
    if len(sys.argv) != 3 or sys.argv[1] not in kinds:
        sys.exit(__doc__)
    torch.jit.save(torch.jit.script(kinds[sys.argv[1]]()), sys.argv[2])


if __name__ == "__main__":
    main()
