"""Batches bound to a dataset commitment (tape format 1.12, section 5.7; docs/python.md,
"Batches bound to a dataset"): a commitment of samples made from a torch Dataset, a training
loop that names each batch's samples, a tape that verifies and replays exact; the recorder
refusing a batch that is not the samples it names before anything is written for it; and a
forged tape (rows reordered, a row swapped for uncommitted data, a sample index changed, all
re-chained and re-sealed) refused by verify and ingest at exactly the forged transaction, saying
why (every transaction's rows are checked, not only the replayed ones')."""

import json
import struct
import subprocess

import pytest
import torch

import zkdv
import zkdv.dataset
import zkdv.torch
from conftest import AUDIT, audit, fresh_mlp, replay_all
from tape_edit import edited_metadata, rechain_with_edit

STEPS, BATCH = 8, 4


class Points(torch.utils.data.Dataset):
    def __init__(self, n=40, seed=5):
        generator = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 6, generator=generator)
        self.y = torch.randint(0, 3, (n,), generator=generator)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], int(self.y[i])


def schedule(n, steps=STEPS, seed=9):
    generator = torch.Generator().manual_seed(seed)
    return [torch.randperm(n, generator=generator)[:BATCH].tolist() for _ in range(steps)]


def record(tmp_path, name="bound.zkdv", tamper=None):
    data = Points()
    commitment = tmp_path / "samples.commit.json"
    if not commitment.exists():
        zkdv.dataset.commit_samples(data, commitment)
    tape = tmp_path / name
    model = fresh_mlp()
    loss_fn = torch.nn.CrossEntropyLoss()
    config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(update_check_probability=0.5, seed=2), dataset_commitment=commitment)
    with zkdv.torch.ZKDV(tape, config) as proof:
        model, loss_fn, optimizer = proof.prepare(model, loss_fn, torch.optim.Adam(model.parameters(), lr=0.01))
        for step, indices in enumerate(schedule(len(data))):
            x, y = torch.utils.data.default_collate([data[i] for i in indices])
            named = tamper(step, indices) if tamper else indices
            with proof.transaction(batch=(x, y), samples=named):
                optimizer.zero_grad()
                loss = loss_fn(proof.forward(model, x), y)
                proof.backward(loss)
                optimizer.step()
    return tape, commitment


def test_a_bound_tape_verifies_and_replays_exact(tmp_path):
    tape, commitment = record(tmp_path)
    document = json.loads(commitment.read_text())
    assert document["unit"] == "sample" and document["leaf_count"] == 40
    status, verified = audit("verify", str(tape))
    assert status == 0 and verified["format"] == "1.13", verified
    assert verified["dataset"] == {"root": document["root"], "leaf_count": 40}, verified
    status, replayed = replay_all(tmp_path, tape)
    assert status == 0 and replayed["verdicts"]["exact"] == STEPS, replayed
    # A folder check of a commitment of samples is refused by name: it commits no files.
    done = subprocess.run([AUDIT, "dataset", "verify", str(commitment), str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "commits samples" in done.stderr, done.stderr


def test_the_recorder_refuses_a_batch_that_is_not_the_samples_it_names(tmp_path):
    # The loop names the wrong sample for row 2 of step 3: refused before that step is taken.
    def wrong(step, indices):
        return indices[:2] + [(indices[2] + 1) % 40] + indices[3:] if step == 3 else indices

    with pytest.raises(Exception, match="row 2 of the batch is not committed sample"):
        record(tmp_path, "refused.zkdv", tamper=wrong)
    # Without the samples, or with samples but no commitment: refused at the transaction.
    model = fresh_mlp()
    proof = zkdv.torch.ZKDV(tmp_path / "nosamples.zkdv", zkdv.ZKDVConfig(dataset_commitment=tmp_path / "samples.commit.json"))
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(ValueError, match="name the committed sample"):
        proof.transaction(batch=(torch.zeros(4, 6), torch.zeros(4, dtype=torch.long)))
    proof = zkdv.torch.ZKDV(tmp_path / "nodataset.zkdv")
    model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.1))
    with pytest.raises(ValueError, match="needs a dataset commitment"):
        proof.transaction(batch=(torch.zeros(4, 6), torch.zeros(4, dtype=torch.long)), samples=[0, 1, 2, 3])


def _row_replaced(payload, row, value):
    """The blob with row `row` of batch/0 (F32 [B, 6]) set to `value`: a sample not committed."""
    (header_length,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + header_length])
    start, _ = header["batch/0"]["data_offsets"]
    assert header["batch/0"]["dtype"] == "F32"
    edited = bytearray(payload)
    for k in range(6):
        struct.pack_into("<f", edited, 8 + header_length + start + 4 * (row * 6 + k), value)
    return bytes(edited)


def _samples_edited(change):
    def edit(metadata):
        samples = json.loads(metadata["samples"])
        change(samples[0])
        metadata["samples"] = json.dumps(samples)
    return lambda payload: edited_metadata(payload, edit)


@pytest.mark.parametrize("forgery", ["reordered", "uncommitted-row", "other-index"])
def test_a_forged_batch_is_refused_at_its_transaction(tmp_path, forgery):
    honest, _ = record(tmp_path)
    forged = tmp_path / "forged.zkdv"
    edits = {
        # The rows stay, their names are swapped: the numerics replay exact, the binding does not.
        "reordered": _samples_edited(lambda rows: rows.reverse()),
        "uncommitted-row": lambda payload: _row_replaced(payload, 1, 0.25),
        # An index the commitment holds, but another sample's: its proof (still sample 0's
        # path length or not) does not lead to the root.
        "other-index": _samples_edited(lambda rows: rows.__setitem__(0, (rows[0] + 7) % 40)),
    }
    # The last transaction: an edit changes its record's digest, which draws the sampled checks
    # of the transaction after it (spec 5.2); a forger of an earlier one redraws those too.
    victim = STEPS - 1
    rechain_with_edit(honest, forged, victim, edits[forgery])
    # The reader checks every transaction's rows (spec 5.7), replayed or not: verify and ingest
    # refuse the tape at the forged transaction, so no selection can miss it.
    status, verified = audit("verify", str(forged))
    assert status == 1 and verified["status"] == "corrupt", verified
    assert verified["transactions"] == victim and verified["problem"]["transaction"] == victim, verified
    message = verified["problem"]["message"]
    if forgery == "other-index" and "samples/proofs" in message:
        return  # the new index's proof has another length than the recorded proofs
    assert "is not committed sample" in message, message
    status, ingested = audit("ingest", str(forged), "--case", str(tmp_path / "forged.zkaudit"))
    assert status == 1 and ingested["files"][0]["result"] == "rejected", ingested
    assert "is not committed sample" in ingested["files"][0]["error"], ingested
