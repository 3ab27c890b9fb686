"""Signed tapes from Python (format 1.11, section 7.1): ZKDVConfig(signing_key=...) seals the
tape with the trainer's signature, which zkdv-audit verifies against the trainer's public key;
an exported-graph program is signed the same way on torch 2.x; a key that cannot sign stops the
proof before any tape exists."""

import dataclasses

import pytest
import torch

import zkdv
import zkdv.torch
from zkdv import _native
from conftest import AUDIT, assert_replays_exact, audit, fresh_mlp, train_with_zkdv

import subprocess

HAS_EXPORT = hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2


def keygen(path, algorithm):
    done = subprocess.run([AUDIT, "keygen", "--out", str(path), "--algorithm", algorithm, "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return path


@pytest.mark.parametrize("program", ["torchscript"] + (["exported-graph"] if HAS_EXPORT else []))
@pytest.mark.parametrize("algorithm", ["ecdsa-p256", "ed25519"])
def test_a_signed_tape_verifies_with_the_trainers_key_and_replays(tmp_path, algorithm, program):
    key = keygen(tmp_path / "trainer.pem", algorithm)
    tape = tmp_path / "signed.zkdv"
    model = fresh_mlp()
    config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(update_check_probability=0.5, seed=3), signing_key=key,
                             program=program)
    train_with_zkdv(tape, model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), 7, config)

    status, verified = audit("verify", str(tape), "--trusted-key", str(key) + ".pub", "--require-trusted")
    assert status == 0, verified
    assert verified["format"] == _native.TAPE_FORMAT and verified["signature_trust"] == "trusted", verified
    assert verified["signer"]["algorithm"] == ("ed25519" if algorithm == "ed25519" else "ecdsa-p256-sha256")
    # Another trainer's key does not vouch for it.
    other = keygen(tmp_path / "other.pem", algorithm)
    status, verified = audit("verify", str(tape), "--trusted-key", str(other) + ".pub", "--require-trusted")
    assert status == 1 and verified["signature_trust"] == "unknown-key", verified
    assert_replays_exact(tmp_path, tape, 7)


def test_a_key_that_cannot_sign_stops_the_proof_before_the_tape_exists(tmp_path):
    public_only = keygen(tmp_path / "trainer.pem", "ecdsa-p256").with_suffix(".pem.pub")
    tape = tmp_path / "never.zkdv"
    for key in (public_only, tmp_path / "missing.pem"):
        with pytest.raises(Exception, match=str(key.name)):
            zkdv.torch.ZKDV(tape, zkdv.ZKDVConfig(signing_key=key))
        assert not tape.exists()


def test_the_config_keeps_the_key_path_not_the_key(tmp_path):
    key = keygen(tmp_path / "trainer.pem", "ed25519")
    config = zkdv.ZKDVConfig(signing_key=key)
    assert dataclasses.asdict(config)["signing_key"] == key
    assert "PRIVATE" not in repr(config)
