"""Dataset commitments and weight matching from Python: what `zkdv-audit dataset commit|verify`
and `zkdv-audit match-weights` do, through the same C++ calls (docs/python.md, "Provenance").

Each function returns a dataclass whose fields are the members of the command's --json output
(docs/cli-json.md). A file that cannot be read or written raises OSError; input the core
refuses (an invalid commitment, a tape without the state asked for, a model that is not
safetensors) raises ValueError; both carry the core's message.
"""

import json
import os
from dataclasses import dataclass, field, fields
from typing import List, Optional, Sequence, Union

import torch  # noqa: F401  (zkdv._native links libtorch_python: torch must be loaded first)

from zkdv import _native

Path = Union[str, "os.PathLike[str]"]

__all__ = [
    "DatasetCommitment",
    "DatasetDifference",
    "DatasetVerification",
    "TensorComparison",
    "WeightMatch",
    "commit_dataset",
    "match_weights",
    "verify_dataset",
]


def _build(cls, document):
    """`cls` from the JSON members it names (the JSON may carry more)."""
    return cls(**{f.name: document[f.name] for f in fields(cls) if f.name in document})


@dataclass(frozen=True)
class DatasetCommitment:
    output: str
    leaf_count: int
    total_bytes: int
    root: str  # hex
    algorithm: str = "sha256-merkle-v2"  # the root commits the count (docs/dataset-commitment.md)


@dataclass(frozen=True)
class DatasetDifference:
    path: str
    finding: str  # "changed", "missing" or "extra"
    detail: str


@dataclass(frozen=True)
class DatasetVerification:
    commitment: str
    ok: bool
    leaf_count: int
    stated_root: str
    computed_root: str
    root_matches: bool
    folder: Optional[str]
    files_hashed: Optional[int]
    differences: List[DatasetDifference] = field(default_factory=list)  # empty without a folder
    algorithm: str = "sha256-merkle-v2"  # or "sha256-merkle-v1", whose root does not commit the count


@dataclass(frozen=True)
class TensorComparison:
    tape_name: Optional[str]  # None for a tensor only the model holds
    model_name: Optional[str]  # None for a tensor the model lacks
    role: Optional[str]  # "parameter", "buffer"
    finding: str  # "equal", "values", "dtype", "shape", "missing", "extra", "unchecked"
    fails: bool
    tape_dtype: Optional[str]
    model_dtype: Optional[str]
    tape_shape: Optional[List[int]]
    model_shape: Optional[List[int]]
    elements: int
    differing_elements: int
    max_abs_diff: Optional[float]
    non_finite_differences: int

    @property
    def name(self):
        """The name in the model file; the tape's for a tensor the model lacks."""
        return self.model_name if self.model_name is not None else self.tape_name


@dataclass(frozen=True)
class WeightMatch:
    tape: str
    model: str
    model_files: List[str]
    equal: bool
    tape_status: str
    transactions: int
    reference: str  # "snapshot" or "final-state-digest"
    before_transaction: int
    final_state: bool
    name_mapping: dict
    failing: int
    recorded_state_digest: Optional[str]
    model_state_digest: Optional[str]
    tensors: List[TensorComparison] = field(default_factory=list)

    @property
    def differing(self):
        """The names (the model file's, where it has the tensor) of the tensors that count against
        the match, in the tape's layout order, then the model's extras."""
        return [t.name for t in self.tensors if t.fails]


def _paths(paths):
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    return [os.fspath(p) for p in paths]


def commit_dataset(paths: Union[Path, Sequence[Path]], output: Path, threads: Optional[int] = None, overwrite: bool = False) -> DatasetCommitment:
    """Hashes a dataset's files and writes its commitment to `output`: one folder commits every
    file under it (`output` left out), several paths commit those files under their relative
    paths. `threads`: hashing threads (None: the machine's, at most 8). An existing `output` is
    replaced only with `overwrite`."""
    if threads is not None and threads < 1:
        raise ValueError("threads must be at least 1, or None")
    document = json.loads(_native.provenance.commit_dataset(_paths(paths), os.fspath(output), overwrite, threads or 0))
    return _build(DatasetCommitment, document)


def verify_dataset(commitment: Path, folder: Optional[Path] = None, ignore_extra: bool = False) -> DatasetVerification:
    """Checks a commitment's root against its leaves and, given `folder`, every file there
    against it: each file that changed, is missing or is extra (unless `ignore_extra`) is a
    DatasetDifference."""
    document = json.loads(_native.provenance.verify_dataset(os.fspath(commitment), None if folder is None else os.fspath(folder), ignore_extra))
    document["differences"] = [_build(DatasetDifference, d) for d in document["differences"] or []]
    return _build(DatasetVerification, document)


def match_weights(tape: Path, model: Path, snapshot: Optional[int] = None, final: bool = False, require_buffers: bool = False) -> WeightMatch:
    """Compares a model's weights (a .safetensors file, or a folder of shards) with the state
    the tape records before transaction `snapshot` (0: the starting weights) or, with
    `final`, its final state, tensor by tensor and bit for bit. Give exactly one of them."""
    if final == (snapshot is not None):
        raise ValueError("give exactly one of snapshot=N and final=True")
    if snapshot is not None and snapshot < 0:
        raise ValueError("snapshot is a transaction index, at least 0")
    document = json.loads(_native.provenance.match_weights(os.fspath(tape), os.fspath(model), snapshot, final, require_buffers))
    document["tensors"] = [_build(TensorComparison, t) for t in document["tensors"]]
    return _build(WeightMatch, document)
