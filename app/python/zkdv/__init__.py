"""ZKDV: verification tapes of ordinary PyTorch training, recorded by the C++ core.

zkdv.torch.ZKDV wraps a training loop; zkdv.ZKDVConfig and zkdv.SamplingPolicy say how
much each transaction records for a sampled audit (docs/python.md).
"""

from zkdv import overlap
from zkdv.config import SamplingPolicy, ZKDVConfig

__all__ = ["SamplingPolicy", "ZKDVConfig", "overlap"]
