"""Ctrl-C and a killed process leave a tape that reads as unsealed or truncated up to its
last whole record, and those records replay exact."""

import os
import signal
import subprocess
import sys

import pytest

from conftest import audit

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crash_child.py")


def run_until(tape, steps, sig):
    """Starts a recording run, waits until it committed `steps` steps, sends `sig`; returns
    (the last step it reported, its exit status)."""
    child = subprocess.Popen([sys.executable, CHILD, str(tape)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last = 0
    try:
        for line in child.stdout:
            last = int(line.split()[1])
            if last >= steps:
                child.send_signal(sig)
                break
        for line in child.stdout:  # steps it finished before the signal landed
            last = int(line.split()[1])
        status = child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert last >= steps, "the run stopped after %d steps: %s" % (last, child.stderr.read())
    return last, status


def replays_exact_up_to_the_cut(tmp_path, tape, reported, in_flight):
    status, verified = audit("verify", str(tape))
    assert status == 1, verified
    whole = verified["transactions"]
    # Steps still queued for the background writer (max_in_flight) may not have reached the file.
    assert reported - in_flight - 1 <= whole <= reported + 1, (reported, verified)
    case = tmp_path / (tape.stem + ".zkaudit")
    status, ingested = audit("ingest", str(tape), "--case", str(case), "--allow-incomplete")
    assert status == 0, ingested
    status, replayed = audit("replay", str(case), "--select", "all")
    assert status == 0 and replayed["passed"] and replayed["verdicts"]["exact"] == whole, replayed
    return verified


def test_ctrl_c_leaves_an_unsealed_tape_of_whole_records(tmp_path):
    tape = tmp_path / "sigint.zkdv"
    reported, status = run_until(tape, 12, signal.SIGINT)
    assert status == -signal.SIGINT, "KeyboardInterrupt ends the run (exit status %d)" % status
    verified = replays_exact_up_to_the_cut(tmp_path, tape, reported, 0)
    # The proof closed the tape on the exception: every committed step reached the file.
    assert verified["status"] == "unsealed", verified
    assert verified["transactions"] >= reported


def test_a_killed_run_leaves_a_tape_readable_up_to_its_last_whole_record(tmp_path):
    tape = tmp_path / "sigkill.zkdv"
    reported, status = run_until(tape, 12, signal.SIGKILL)
    assert status == -signal.SIGKILL
    verified = replays_exact_up_to_the_cut(tmp_path, tape, reported, 2)
    assert verified["status"] in ("unsealed", "truncated"), verified
