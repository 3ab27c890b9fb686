"""Datasets committed sample by sample, so that a tape's batches can be bound to them (tape
format 1.12, section 5.7; docs/python.md, "Batches bound to a dataset").

A commitment of samples is a Merkle root over each sample's zkdv-sample-v1 digest: the digest
of the tensors the training step receives for that sample, after the dataset's transforms, as
one row of a batch. The trainer publishes it before training and records with
`ZKDVConfig(dataset_commitment=path)`, naming in each transaction which samples made its batch;
the recorder checks each row against the commitment and writes its Merkle proof, and the
auditor's replay checks every replayed batch against the root in the tape.
"""

import os
from typing import Any, Iterable, Optional

__all__ = ["commit_samples", "sample_digest"]


def _collated(item: Any):
    # A sample as one row of a batch: what torch's default DataLoader collation makes of it.
    import torch
    from torch.utils import _pytree as pytree
    from torch.utils.data import default_collate

    batch = default_collate([item])
    tensors, _ = pytree.tree_flatten(batch)
    if not tensors or not all(isinstance(t, torch.Tensor) for t in tensors):
        raise ValueError("a committed sample is made of tensors (and numbers default_collate turns into tensors)")
    return tensors


def sample_digest(item: Any) -> bytes:
    """The zkdv-sample-v1 digest (32 bytes) of one dataset item, as a batch row."""
    from zkdv import _native

    return _native.sample_digest(_collated(item))[1]


def commit_samples(dataset: Iterable[Any], path, overwrite: bool = False, collated: bool = False) -> str:
    """Writes the commitment of every item of `dataset`, in its order (the indices a
    transaction names), to `path` and returns its root (hex). With `collated=True` the items
    are already lists of tensors holding one row each (a DataLoader with batch_size=1)."""
    from zkdv import _native

    samples = []
    for item in dataset:
        tensors = list(item) if collated else _collated(item)
        samples.append(_native.sample_digest(tensors))
    if not samples:
        raise ValueError("a dataset commitment holds at least one sample")
    return _native.write_sample_commitment(samples, os.fspath(path), overwrite)
