"""The Torch frontend: zkdv.torch.ZKDV around an ordinary PyTorch training loop."""

from zkdv.torch.optimizers import OptimizerContract
from zkdv.torch.proof import ZKDV

__all__ = ["OptimizerContract", "ZKDV"]
