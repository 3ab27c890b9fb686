"""Replay cost of an exported-graph program against the TorchScript program of the same model,
same run (docs/performance.md, "Exported-graph programs"): each model is recorded once per
program kind from identical initial weights and batches, both tapes are ingested, and replays of
every transaction alternate between the two cases (which goes first alternates too). Each
replay's figure is the median per-transaction `replay_ns` the case stores; the ratio of a round
is exported / TorchScript of its two adjacent replays, and the model's ratio the median over
the rounds (a loaded machine moves both replays of a round together). Target: ratio <= 1.1."""

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zkdv  # noqa: E402
from conftest import MODELS, audit, train_with_zkdv  # noqa: E402


def per_transaction_ns(case, run_id):
    with sqlite3.connect(case) as db:
        return [row[0] for row in db.execute("SELECT replay_ns FROM verdicts WHERE run_id = ?", (run_id,))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--models", default="mlp,cnn,transformer")
    parser.add_argument("--max-ratio", type=float, default=1.1)
    args = parser.parse_args()
    torch.set_num_threads(1)
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for kind in args.models.split(","):
            make, data = MODELS[kind]
            cases = {}
            for program in ("torchscript", "exported-graph"):
                tape = os.path.join(folder, "%s-%s.zkdv" % (kind, program))
                model = make()
                train_with_zkdv(tape, model, torch.optim.Adam(model.parameters(), lr=0.01), args.steps,
                                zkdv.ZKDVConfig(program=program), data=data)
                case = os.path.join(folder, "%s-%s.zkaudit" % (kind, program))
                status, ingested = audit("ingest", tape, "--case", case)
                assert status == 0, ingested
                cases[program] = case
            medians = {program: [] for program in cases}
            ratios = []
            for round_index in range(args.rounds):
                order = list(cases) if round_index % 2 == 0 else list(reversed(list(cases)))
                for program in order:
                    case = cases[program]
                    status, replayed = audit("replay", case, "--select", "all")
                    assert status == 0 and replayed["verdicts"]["exact"] == args.steps, replayed
                    medians[program].append(statistics.median(per_transaction_ns(case, replayed["run_id"])))
                ratios.append(medians["exported-graph"][-1] / medians["torchscript"][-1])
            scripted = statistics.median(medians["torchscript"])
            exported = statistics.median(medians["exported-graph"])
            ratio = statistics.median(ratios)
            worst = max(worst, ratio)
            print("%-12s torchscript %8.3f ms  exported-graph %8.3f ms  ratio %.3f" % (kind, scripted / 1e6, exported / 1e6, ratio))
    print("worst ratio %.3f (target <= %.2f)" % (worst, args.max_ratio))
    return 0 if worst <= args.max_ratio else 1


if __name__ == "__main__":
    sys.exit(main())
