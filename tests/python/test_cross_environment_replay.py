"""Honest tapes replayed in another numerical environment (here: another intra-op thread
count) are never called diverged (docs/replay.md, "Amplified rounding" and "A state digest
across environments"). The Transformer encoder of tests/gpu/record_examples.py, recorded with
one thread and replayed with two, once had transactions called diverged for both reasons."""

import os
import subprocess
import sys

from conftest import audit

RECORD_EXAMPLES = os.path.join(os.path.dirname(__file__), "..", "gpu", "record_examples.py")


def test_a_transformer_recorded_with_one_thread_is_never_diverged_with_two(tmp_path):
    steps = 120
    environment = dict(os.environ, OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, RECORD_EXAMPLES, "--device", "cpu", "--out", str(tmp_path), "--models", "transformer",
                           "--steps", str(steps), "--timing-steps", "2", "--rounds", "1", "--warmup", "1"],
                          env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    case = tmp_path / "transformer.zkaudit"
    status, ingested = audit("ingest", str(tmp_path / "transformer.zkdv"), "--case", str(case))
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all", "--intra-op-threads", "2")
    assert status in (0, 1), replayed
    assert replayed["numeric_regime"] == "cross-environment", replayed
    assert replayed["replayed"] == steps
    assert replayed["verdicts"]["diverged"] == 0, replayed["first_failures"]
    assert replayed["trainers_failures"] == 0
    # What is not within tolerance is unverifiable for rounding, and says so.
    for failure in replayed["first_failures"]:
        assert failure["detail"].startswith("unverifiable across numerical environments"), failure
