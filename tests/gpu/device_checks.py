#!/usr/bin/env python3
"""The checks of tests/gpu/device_check.sh, after the build: records the examples
(record_examples.py), ingests and replays them with zkdv-audit on the device and on the CPU,
replays a tampered tape, measures replay throughput against the unrecorded training step,
and prints one table, also written as JSON. Exit status 1 when a correctness check fails or
could not run (the time budget included); the speed figures never decide it.

usage: device_checks.py --audit ZKDV_AUDIT --device DEV --work DIR --out RESULT.json
                        --deadline EPOCH_SECONDS [--quick]
"""

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))
from tape_edit import rechain_with_scaled_loss  # noqa: E402

OVERHEAD_TARGET_PERCENT = 10.0
THROUGHPUT_TARGET_RATIO = 0.9
# Verdict details of an honest cross-environment replay that no tolerance could decide
# (docs/replay.md, "Regimes").
CROSS_ENVIRONMENT_UNVERIFIABLE = "unverifiable across"


class OutOfTime(Exception):
    pass


class Checks:
    def __init__(self, arguments):
        self.arguments = arguments
        self.rows = []
        self.deadline = arguments.deadline

    # ------------------------------------------------------------------ running

    def remaining(self):
        return self.deadline - time.time()

    def run(self, command, what):
        """Runs command within the time budget; returns the CompletedProcess."""
        left = self.remaining()
        if left < 5:
            raise OutOfTime("%s: not run, the time budget is spent" % what)
        try:
            return subprocess.run(command, capture_output=True, text=True, timeout=left)
        except subprocess.TimeoutExpired:
            raise OutOfTime("%s: stopped after %.0f s, when the time budget ran out" % (what, left))

    def audit(self, *arguments_):
        """zkdv-audit ARGUMENTS --json: (exit status, parsed JSON or None, stderr)."""
        command = [self.arguments.audit, *arguments_, "--json"]
        if arguments_[0] == "replay":
            # Verdicts, not the time budget, are under test: a worker that starts libtorch on a
            # loaded machine may take longer than the 5 s default.
            command += ["--time-budget-floor", "120", "--seed", "1"]
        done = self.run(command, "zkdv-audit " + " ".join(arguments_))
        try:
            parsed = json.loads(done.stdout)
        except json.JSONDecodeError:
            parsed = None
        return done.returncode, parsed, done.stderr.strip()

    def row(self, check, expected, got, result, kind="correctness", **extra):
        self.rows.append({"check": check, "kind": kind, "expected": expected, "got": got, "result": result, **extra})
        print("device_check: %-6s %s: %s" % (result, check, got), file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ helpers

    def ingest(self, tape, case):
        status, parsed, stderr = self.audit("ingest", tape, "--case", case)
        if status != 0 or parsed is None:
            raise RuntimeError("ingest %s: exit %d: %s" % (tape, status, (parsed and parsed["files"][0].get("error")) or stderr[-300:]))

    def replay(self, case, device):
        status, parsed, stderr = self.audit("replay", case, "--select", "all", "--device", device)
        if parsed is None:
            raise RuntimeError("replay on %s: exit %d, no JSON: %s" % (device, status, stderr[-400:]))
        return parsed

    @staticmethod
    def run_verdicts(case, replayed):
        """Every verdict and its detail and time of the run: from the case (sqlite3), else the
        JSON's first failures (at most 20)."""
        try:
            db = sqlite3.connect(case)
            rows = db.execute("SELECT idx, verdict, detail, coalesce(replay_ns, 0) FROM verdicts WHERE run_id = ? ORDER BY idx",
                              (replayed["run_id"],)).fetchall()
            db.close()
            return [{"index": i, "verdict": v, "detail": d, "replay_ns": ns} for i, v, d, ns in rows]
        except sqlite3.Error:
            return None

    @staticmethod
    def counts(replayed):
        v = replayed["verdicts"]
        text = "%d exact, %d within-tolerance, %d diverged, %d unverifiable of %d" % (
            v["exact"], v["within_tolerance"], v["diverged"], v["unverifiable"], replayed["replayed"])
        if replayed.get("status") != "finished":
            text += " (run %s)" % replayed.get("status")
        if replayed.get("problem"):
            text += "; problem: %s" % replayed["problem"]
        return text

    @staticmethod
    def first_failure(replayed):
        failures = replayed.get("first_failures") or []
        if not failures:
            return ""
        f = failures[0]
        return "; first: #%d %s: %s" % (f["index"], f["verdict"], f["detail"][:160])

    # ------------------------------------------------------------------ the checks

    def record(self, work):
        a = self.arguments
        command = [sys.executable, os.path.join(HERE, "record_examples.py"), "--device", a.device, "--out", work]
        if a.quick:
            command += ["--steps", "24", "--timing-steps", "12", "--rounds", "1", "--warmup", "2"]
        done = self.run(command, "record_examples.py")
        sys.stderr.write(done.stderr[-4000:])
        path = os.path.join(work, "record.json")
        if not os.path.exists(path):  # a failing model is in record.json, with its error
            raise RuntimeError("record_examples.py exited %d: %s" % (done.returncode, done.stderr.strip()[-600:]))
        with open(path) as f:
            return json.load(f)

    def check_recorded(self, name, figures):
        status, parsed, stderr = self.audit("verify", figures["tape"])
        n = figures["transactions"]
        if parsed is None:
            self.row("record %s on %s" % (name, self.arguments.device), "sealed, %d transactions" % n,
                     "verify exit %d: %s" % (status, stderr[-200:]), "FAIL")
            return False
        ok = status == 0 and parsed.get("status") == "sealed" and parsed.get("transactions") == n
        self.row("record %s on %s" % (name, self.arguments.device), "sealed, %d transactions" % n,
                 "%s, %s transactions" % (parsed.get("status"), parsed.get("transactions")), "pass" if ok else "FAIL")
        # Snapshots of device state leave the training stream: a side stream copies them to
        # pinned host buffers (core/recorder/snapshot_pool.cpp); CPU state has none to copy.
        snapshots, side, training = figures.get("snapshots"), figures.get("side_stream_copies"), figures.get("training_stream_copies")
        on_device = self.arguments.device.startswith("cuda")
        expected = "%s of %s snapshots on a side stream" % (snapshots if on_device else 0, snapshots)
        got = "%s on a side stream, %s on the training stream (no device memory to stage)" % (side, training)
        copied_right = snapshots is not None and snapshots > 0 and side == (snapshots if on_device else 0) and training == 0
        self.row("snapshot copies of %s" % name, expected, got, "pass" if copied_right else "FAIL")
        return ok and copied_right

    def check_same_device(self, name, case, n):
        device = self.arguments.device
        replayed = self.replay(case, device)
        v = replayed["verdicts"]
        ok = replayed["status"] == "finished" and replayed["replayed"] == n and v["exact"] == n
        self.row("replay %s on %s" % (name, device), "all %d exact (same environment%s)" % (n, ", deterministic profile" if device != "cpu" else ""),
                 self.counts(replayed) + ("" if ok else self.first_failure(replayed)) + "; regime %s" % replayed.get("numeric_regime"),
                 "pass" if ok else "FAIL")

    def check_cpu(self, name, case, n):
        """The tape replayed on the CPU: exact in its own environment (recorded on the CPU),
        else graded across environments: never diverged, unverifiable only for the documented reason."""
        replayed = self.replay(case, "cpu")
        v = replayed["verdicts"]
        same = self.arguments.device == "cpu"
        finished = replayed["status"] == "finished" and replayed["replayed"] == n
        if same:
            ok = finished and v["exact"] == n
            expected = "all %d exact (same environment)" % n
        else:
            verdicts = self.run_verdicts(case, replayed)
            if verdicts is None:
                verdicts = replayed.get("first_failures") or []
            stray = [x for x in verdicts if x["verdict"] == "unverifiable" and not x["detail"].startswith(CROSS_ENVIRONMENT_UNVERIFIABLE)]
            ok = finished and v["diverged"] == 0 and not stray
            expected = "none diverged (exact, within-tolerance or \"%s numerical environments\")" % CROSS_ENVIRONMENT_UNVERIFIABLE
        got = self.counts(replayed) + "; regime %s" % replayed.get("numeric_regime")
        if not ok:
            got += self.first_failure(replayed)
        self.row("replay %s on cpu (%s)" % (name, "same environment" if same else "graded"), expected, got,
                 "pass" if ok else "FAIL")

    def check_tampered(self, name, tape, n, work):
        index = n // 2 + 1  # inside a segment, neither its first nor the tape's last
        edited = os.path.join(work, name + "-tampered.zkdv")
        rechain_with_scaled_loss(tape, edited, index, factor=0.5)
        case = os.path.join(work, name + "-tampered.zkaudit")
        self.ingest(edited, case)
        device = self.arguments.device
        replayed = self.replay(case, device)
        failures = [(f["index"], f["verdict"]) for f in replayed.get("first_failures") or []]
        v = replayed["verdicts"]
        ok = replayed["status"] == "finished" and failures == [(index, "diverged")] and v["exact"] == n - 1
        got = self.counts(replayed) + "; failures at %s" % (", ".join("#%d %s" % f for f in failures) or "none")
        self.row("tampered %s (loss of #%d halved) on %s" % (name, index, device), "diverged at #%d only" % index, got,
                 "pass" if ok else "FAIL")

    def speed(self, name, figures, work):
        a = self.arguments
        on_gpu = a.device.startswith("cuda")
        if "timing_error" in figures:
            self.row("speed of %s on %s" % (name, a.device), "figures", figures["timing_error"], "info", kind="speed")
            return

        def judged(met):
            return ("met" if met else "not met") if on_gpu else "info"

        overhead = figures["overhead_percent"]
        self.row("recording overhead %s on %s" % (name, a.device), "<= %.0f %% (target, on GPU)" % OVERHEAD_TARGET_PERCENT,
                 "%+.1f %% (step %.3f ms plain, %.3f ms recorded)" % (overhead, figures["plain_ms_per_step"], figures["recorded_ms_per_step"]),
                 judged(overhead <= OVERHEAD_TARGET_PERCENT), kind="speed", value=overhead, target=OVERHEAD_TARGET_PERCENT)

        case = os.path.join(work, name + "-timed.zkaudit")
        self.ingest(figures["timed_tape"], case)
        replayed = self.replay(case, a.device)
        n = replayed["replayed"]
        wall = n / replayed["seconds"] if replayed["seconds"] > 0 else 0.0
        verdicts = self.run_verdicts(case, replayed) or []
        busy_ns = sum(x["replay_ns"] for x in verdicts)
        steady = n / (busy_ns / 1e9) if busy_ns > 0 else 0.0
        plain = figures["plain_steps_per_second"]
        # Judged: a worker's steady rate, transactions over the summed replay time of each
        # (the case's verdicts.replay_ns: replay and checks), against one training process's
        # step rate. Beside it the whole run's rate from replay --json, worker start included,
        # which on a tape of a few hundred steps is mostly the start.
        ratio = steady / plain
        self.row("replay throughput %s on %s" % (name, a.device), ">= %.1fx the unrecorded step rate (target, on GPU)" % THROUGHPUT_TARGET_RATIO,
                 "%.2fx: %.1f tx/s per worker vs %.1f steps/s unrecorded; whole run %.1f tx/s (%d in %.2f s, replay --json: %.2fx); %s" % (
                     ratio, steady, plain, wall, n, replayed["seconds"], wall / plain, self.counts(replayed)),
                 judged(ratio >= THROUGHPUT_TARGET_RATIO), kind="speed", value=round(ratio, 4), target=THROUGHPUT_TARGET_RATIO,
                 whole_run_ratio=round(wall / plain, 4), replayed_transactions=n, replay_seconds=replayed["seconds"])

    def model_checks(self, name, figures, work):
        label = "%s on %s" % (name, self.arguments.device)
        if "error" in figures:
            self.row("record %s on %s" % (name, self.arguments.device), "a sealed tape", figures["error"], "FAIL")
            return
        try:
            if not self.check_recorded(name, figures):
                return
            case = os.path.join(work, name + ".zkaudit")
            self.ingest(figures["tape"], case)
            n = figures["transactions"]
            self.check_same_device(name, case, n)
            if self.arguments.device != "cpu":  # on the CPU the replay above is the CPU's, same environment
                self.check_cpu(name, case, n)
            self.check_tampered(name, figures["tape"], n, work)
        except OutOfTime as e:
            self.row("checks of %s" % label, "run within the time budget", str(e), "FAIL")
            return
        except Exception as e:  # noqa: BLE001  (the table says what broke; the rest still runs)
            self.row("checks of %s" % label, "no error", "%s: %s" % (type(e).__name__, e), "FAIL")
        try:
            self.speed(name, figures, work)
        except OutOfTime as e:
            self.row("speed of %s" % label, "run within the time budget", str(e), "info", kind="speed")
        except Exception as e:  # noqa: BLE001
            self.row("speed of %s" % label, "no error", "%s: %s" % (type(e).__name__, e), "info", kind="speed")


def table(rows):
    headers = ("check", "expected", "got", "result")
    widths = [max(len(h), *(len(str(r[h])) for r in rows)) if rows else len(h) for h in headers]
    widths[1] = min(widths[1], 60)
    widths[2] = min(widths[2], 110)
    lines = ["  ".join(h.ljust(w) for h, w in zip(headers, widths))]
    lines.append("  ".join("-" * w for w in widths))
    for r in rows:
        cells = [str(r[h]) for h in headers]
        cells = [c if len(c) <= w else c[:w - 3] + "..." for c, w in zip(cells, widths)]
        lines.append("  ".join(c.ljust(w) for c, w in zip(cells, widths)))
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--audit", required=True)
    parser.add_argument("--device", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--out")
    parser.add_argument("--deadline", type=float, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--build-seconds", type=float, default=0.0)
    arguments = parser.parse_args()

    started = time.time()
    checks = Checks(arguments)
    recorded = None
    try:
        recorded = checks.record(arguments.work)
    except (OutOfTime, RuntimeError) as e:
        checks.row("record the examples on %s" % arguments.device, "three sealed tapes", str(e), "FAIL")
    if recorded:
        for name, figures in recorded["models"].items():
            checks.model_checks(name, figures, arguments.work)

    correctness = [r for r in checks.rows if r["kind"] == "correctness"]
    passed = bool(correctness) and all(r["result"] == "pass" for r in correctness)
    result = {
        "device": arguments.device,
        "quick": arguments.quick,
        "environment": recorded["environment"] if recorded else None,
        "build_seconds": round(arguments.build_seconds, 1),
        "check_seconds": round(time.time() - started, 1),
        "targets": {"recording_overhead_percent_max": OVERHEAD_TARGET_PERCENT, "replay_throughput_ratio_min": THROUGHPUT_TARGET_RATIO,
                    "speed_decides_exit_status": False},
        "rows": checks.rows,
        "records": recorded["models"] if recorded else None,
        "passed": passed,
    }
    print(table(checks.rows))
    env = result["environment"] or {}
    print("device check on %s (%s, torch %s): correctness %s; %d checks, %.0f s (build %.0f s)%s" % (
        arguments.device, env.get("device_name", arguments.device), env.get("torch", "?"), "PASSED" if passed else "FAILED",
        len(correctness), result["check_seconds"], arguments.build_seconds,
        "" if arguments.device.startswith("cuda") else "; speed figures are for information off the GPU"))
    if arguments.out:
        with open(arguments.out, "w") as f:
            json.dump(result, f, indent=1)
        print("device check: table written to %s" % arguments.out)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
