"""One eager training transaction, from before the forward to after the optimizer step."""

from contextvars import ContextVar
from typing import Optional

import torch

from zkdv import overlap as overlap_policy

# One transaction at a time in a thread or task, across every proof (as the seed).
_CURRENT: ContextVar[Optional["EagerTransaction"]] = ContextVar("zkdv_torch_transaction", default=None)


def current_transaction() -> Optional["EagerTransaction"]:
    return _CURRENT.get()


class EagerTransaction:
    """Keeps a proof transaction open from eager forward through optimizer step.

    Leaving it without an optimizer step aborts it: nothing is written for it. When the
    transaction changed the model all the same (a raw optimizer's step, buffers its forward
    moved), leaving it raises the recorder's refusal, and the tape ends at the last transaction.
    """

    def __init__(self, proof, batch, overlap=overlap_policy.UNCHECKED, samples=None) -> None:
        if _CURRENT.get() is not None:
            raise RuntimeError("nested ZKDV Torch transactions are unsupported")
        if overlap is not overlap_policy.UNCHECKED:
            raise ValueError("the only overlap policy is zkdv.overlap.UNCHECKED")
        self.proof = proof
        # A list of batches is gradient accumulation: one step over several micro-batches, each
        # through proof.forward() and proof.backward() in order (docs/python.md).
        if isinstance(batch, list) and batch and all(isinstance(micro, (tuple, list, dict)) for micro in batch):
            self.micro_batches = tuple(_micro_batch(micro) for micro in batch)
        else:
            self.micro_batches = (_micro_batch(batch),)
        self.batch = self.micro_batches[0]  # the micro-batch of the next (or last) forward
        # The committed sample of each batch row, one list per micro-batch (tape format 5.7).
        self.samples = _sample_lists(samples, len(self.micro_batches))
        self.forwards = 0
        self.overlap = overlap
        self.loss = None  # the sealed program's loss of the last forward
        # With the loss written as code: each micro-batch's tensors in pytree order (what the
        # tape records), and, in the first transaction, the capture of the code (loss_code.py)
        # until the recorder begins the transaction at the first proof.backward().
        self.leaves = None
        self.batch_form = None  # their pytree form, one for all micro-batches
        self.capture = None
        self.saved_buffers = {}  # the model's buffers before the capture's eager forward
        self.begun = False
        proof._open_transaction(self)
        self._token = _CURRENT.set(self)

    def __enter__(self) -> "EagerTransaction":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self._end(failing=exc_type is not None)

    def close(self) -> None:
        self._end(failing=False)

    def _end(self, failing: bool) -> None:
        if self._token is None:
            return
        _CURRENT.reset(self._token)
        self._token = None
        self.proof._close_transaction(self, failing)


def _micro_batch(batch):
    # A dict is a batch of named tensors (model(**batch)); a lone tensor is a batch of one.
    if isinstance(batch, dict):
        return batch
    if isinstance(batch, torch.Tensor):
        return (batch,)
    return tuple(batch)


def _sample_lists(samples, micro_batches):
    # One micro-batch's samples may be given as a flat list (or a tensor) of indices.
    if samples is None:
        return None
    if isinstance(samples, torch.Tensor):
        samples = samples.tolist()
    samples = [micro.tolist() if isinstance(micro, torch.Tensor) else micro for micro in samples]
    if micro_batches == 1 and all(isinstance(index, int) for index in samples):
        samples = [samples]
    if len(samples) != micro_batches or not all(isinstance(micro, (list, tuple)) and all(isinstance(i, int) and i >= 0 for i in micro)
                                                for micro in samples):
        raise ValueError(
            "samples= names the committed sample of each batch row: a list of non-negative indices, or with %d micro-batches "
            "one such list per micro-batch" % micro_batches
        )
    return [list(micro) for micro in samples]
