"""How a proof records: the sampling policy of spec section 5.2 and the run's metadata."""

import dataclasses
from typing import Any, Dict


@dataclasses.dataclass(frozen=True)
class SamplingPolicy:
    """The probability that a transaction carries a full-state digest or its full deltas.

    `seed` keys the draws together with the tape's hash chain (format 1.3), so the trainer
    cannot choose which transactions carry checks after seeing the draws of earlier ones.
    """

    state_check_probability: float = 0.0
    update_check_probability: float = 0.0
    seed: int = 0


@dataclasses.dataclass(frozen=True)
class ZKDVConfig:
    """A proof's configuration; `metadata` is free-form JSON stored in the tape's root."""

    sampling_policy: SamplingPolicy = dataclasses.field(default_factory=SamplingPolicy)
    metadata: Dict[str, Any] = dataclasses.field(default_factory=dict)
    overwrite: bool = False
    # The sealed program's kind (docs/tape-format.md section 4): "torchscript", or
    # "exported-graph" (torch.export, replayed in C++ under an operator allow-list; torch 2.x).
    program: str = "torchscript"
    # A PEM private key (ECDSA P-256 or Ed25519; `zkdv-audit keygen` makes one) to sign the
    # tape with (format 1.11, section 7.1): its seal then carries a signed in-toto statement
    # about the tape. A path; None: the tape is sealed unsigned.
    signing_key: Any = None
    # With a signing key, also write "<tape>.sig" when the tape is sealed: a Sigstore bundle in
    # OpenSSF model signing's format over the whole file (docs/signing.md), which
    # `model_signing verify key --signature TAPE.sig --public_key KEY.pub TAPE` checks (ECDSA
    # P-256 keys; model_signing does not take Ed25519).
    detached_signature: bool = False
    # A dataset commitment of samples (zkdv.dataset.commit_samples writes one) the batches are
    # drawn from (tape format 1.12, section 5.7): each transaction then names the committed
    # sample behind each batch row, proof.transaction(batch=..., samples=indices), and the
    # recorder checks and records them with their Merkle proofs. A path; None: not bound.
    dataset_commitment: Any = None
    # Training on CUDA, put torch's deterministic settings in force before the first step
    # (deterministic algorithms, warn-only; cuDNN deterministic, no benchmarking; no TF32;
    # CUBLAS_WORKSPACE_CONFIG=:4096:8 unless set, which holds only if cuBLAS has not run yet),
    # saying so on stderr, so that a replay on the same kind of GPU reproduces every step bit
    # for bit (tape format 1.13, section 3.5). False keeps yours; the tape records the settings
    # in force either way. On the CPU nothing is changed.
    deterministic: bool = True
