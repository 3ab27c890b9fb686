"""Detached tape signatures and OpenSSF model signing, both ways (docs/signing.md, "Detached
signatures"), with the real `model_signing` from PyPI (packaging/pypi-test-extras.txt): the
bundle the recorder writes beside a tape verifies with `model_signing verify key`, a bundle
`model_signing sign key` makes over the same tape verifies with `zkdv-audit verify`, and a
changed tape fails both. The PyPI lane's test (ctest python_model_signing); model_signing
missing there is a failure, not a skip."""

import shutil
import subprocess
import sys

import torch

import zkdv
import zkdv.torch
from conftest import AUDIT, audit, fresh_mlp, train_with_zkdv

import model_signing  # noqa: F401  pinned for the PyPI lane: missing, the test fails


def model_signing_cli(*arguments):
    return subprocess.run([sys.executable, "-m", "model_signing", *arguments], capture_output=True, text=True, timeout=300)


def keygen(path):
    done = subprocess.run([AUDIT, "keygen", "--out", str(path), "--algorithm", "ecdsa-p256"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return path


def recorded_tape(tmp_path, key):
    tape = tmp_path / "signed.zkdv"
    model = fresh_mlp()
    config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(update_check_probability=0.5, seed=4), signing_key=key,
                             detached_signature=True)
    train_with_zkdv(tape, model, torch.optim.Adam(model.parameters(), lr=0.01), 5, config)
    return tape


def test_the_recorders_bundle_verifies_with_model_signing(tmp_path):
    key = keygen(tmp_path / "trainer.pem")
    tape = recorded_tape(tmp_path, key)
    bundle = tape.with_name(tape.name + ".sig")
    assert bundle.exists()
    done = model_signing_cli("verify", "key", "--signature", str(bundle), "--public_key", str(key) + ".pub", str(tape))
    assert done.returncode == 0, done.stdout + done.stderr
    status, verified = audit("verify", str(tape), "--trusted-key", str(key) + ".pub", "--require-trusted", "--quiet")
    assert status == 0, verified
    assert verified["detached_signature"]["signature_trust"] == "trusted", verified
    assert verified["detached_signature"]["valid"] is True

    # One byte of the tape changed: model_signing refuses it, and so does zkdv-audit.
    changed = tmp_path / "changed.zkdv"
    data = bytearray(tape.read_bytes())
    data[len(data) // 2] ^= 0x01
    changed.write_bytes(bytes(data))
    done = model_signing_cli("verify", "key", "--signature", str(bundle), "--public_key", str(key) + ".pub", str(changed))
    assert done.returncode != 0, done.stdout
    status, verified = audit("verify", str(changed), "--signature", str(bundle), "--trusted-key", str(key) + ".pub", "--quiet")
    assert status == 1 and verified["detached_signature"]["valid"] is False, verified
    assert "other content" in verified["detached_signature"]["problem"]

    # Another trainer's key: model_signing refuses, and here the bundle proves nothing.
    other = keygen(tmp_path / "other.pem")
    done = model_signing_cli("verify", "key", "--signature", str(bundle), "--public_key", str(other) + ".pub", str(tape))
    assert done.returncode != 0, done.stdout
    status, verified = audit("verify", str(tape), "--trusted-key", str(other) + ".pub", "--require-trusted", "--quiet")
    assert status == 1 and verified["detached_signature"]["signature_trust"] == "unknown-key", verified


def test_a_bundle_model_signing_made_verifies_here(tmp_path):
    key = keygen(tmp_path / "trainer.pem")
    tape = tmp_path / "unsigned.zkdv"
    model = fresh_mlp()
    train_with_zkdv(tape, model, torch.optim.SGD(model.parameters(), lr=0.05), 4)
    bundle = tmp_path / "by-model-signing.sig"
    done = model_signing_cli("sign", "key", "--private_key", str(key), "--signature", str(bundle), str(tape))
    assert done.returncode == 0, done.stdout + done.stderr

    status, verified = audit("verify", str(tape), "--signature", str(bundle), "--trusted-key", str(key) + ".pub", "--require-trusted",
                             "--quiet")
    assert status == 0, verified
    assert verified["signer"] is None and verified["signature_trust"] == "trusted", verified
    assert verified["detached_signature"]["key_id"], verified

    # zkdv-audit sign over the same tape writes what model_signing accepts, too.
    done = subprocess.run([AUDIT, "sign", str(tape), "--key", str(key)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    done = model_signing_cli("verify", "key", "--signature", str(tape) + ".sig", "--public_key", str(key) + ".pub", str(tape))
    assert done.returncode == 0, done.stdout + done.stderr

    # The bundle of one tape is not a signature of another.
    other = tmp_path / "other.zkdv"
    shutil.copy(tape, other)
    with open(other, "ab") as out:
        out.write(b"\0")
    status, verified = audit("verify", str(other), "--signature", str(bundle), "--trusted-key", str(key) + ".pub", "--quiet")
    assert status == 1 and verified["detached_signature"]["valid"] is False, verified
