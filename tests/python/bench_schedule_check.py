"""What the schedule check adds to a replay (docs/performance.md, "Schedule check"): the same
training (tests/oracle/record.py, SGD, StepLR stepped every transaction) written twice, once
with its StepLR described (checked at every replayed transaction) and once with the schedule
as recorded (scheduler null: the same recorded rates, no check), each replayed in full,
alternating, in one run. Prints the median replay time of each and their ratio.

usage: bench_schedule_check.py [--steps N] [--rounds R]
"""

import argparse
import hashlib
import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import tape_edit  # noqa: E402

AUDIT = os.environ["ZKDV_AUDIT"]


def as_recorded(source, target):
    """The tape with its root's scheduler replaced by null and every schedule_epoch dropped,
    re-chained: the same rates, recorded but checked against nothing."""
    data = open(source, "rb").read()
    out = bytearray(data[:tape_edit.HEADER])
    previous = hashlib.sha256(data[:tape_edit.HEADER]).digest()
    for kind, flags, payload in tape_edit._records(data):
        if kind == 1:
            root = json.loads(payload)
            root["optimizer"]["schedule"] = {"options": ["lr"], "scheduler": None}
            payload = json.dumps(root).encode()
        elif kind == tape_edit.TRANSACTION:
            (length,) = struct.unpack_from("<Q", payload, 0)
            header = json.loads(payload[8:8 + length])
            header["__metadata__"].pop("schedule_epoch")
            text = json.dumps(header).encode()
            text += b" " * ((8 - (8 + len(text)) % 8) % 8)
            payload = struct.pack("<Q", len(text)) + text + payload[8 + length:]
        elif kind == tape_edit.SEAL:
            seal = json.loads(payload)
            seal["chain_head"] = previous.hex()
            payload = json.dumps(seal).encode()
        frame, previous = tape_edit._frame(kind, flags, payload, previous)
        out += frame
    open(target, "wb").write(bytes(out))


def run(*arguments):
    done = subprocess.run([AUDIT, *arguments, "--json"], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise SystemExit("zkdv-audit %s failed: %s %s" % (arguments, done.stdout[-2000:], done.stderr[-2000:]))
    return json.loads(done.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=240)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        checked, unchecked = folder / "checked.zkdv", folder / "as-recorded.zkdv"
        scheduler = json.dumps({"kind": "StepLR", "arguments": {"step_size": 1, "gamma": 0.999}})
        subprocess.run([sys.executable, str(HERE.parent / "oracle" / "record.py"), str(checked), "--optimizer", "SGD", "--steps",
                        str(args.steps), "--update-check", "0", "--state-check", "0", "--scheduler", scheduler], check=True,
                       capture_output=True)
        as_recorded(checked, unchecked)
        cases = {}
        for name, tape in (("checked", checked), ("as recorded", unchecked)):
            cases[name] = folder / (tape.stem + ".zkaudit")
            run("ingest", str(tape), "--case", str(cases[name]))
        times = {name: [] for name in cases}
        for _ in range(args.rounds):
            for name, case in cases.items():
                started = time.perf_counter()
                replayed = run("replay", str(case), "--select", "all", "--time-budget-floor", "600")
                times[name].append(time.perf_counter() - started)
                assert replayed["verdicts"]["exact"] == args.steps, (name, replayed["verdicts"])
        medians = {name: statistics.median(values) for name, values in times.items()}
        for name, value in medians.items():
            print("%-12s median %.3f s over %d rounds (%s)" % (name, value, args.rounds, ", ".join("%.3f" % t for t in times[name])))
        print("ratio checked / as recorded: %.4f" % (medians["checked"] / medians["as recorded"]))


if __name__ == "__main__":
    main()
