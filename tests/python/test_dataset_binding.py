"""Batches bound to a dataset commitment (tape format 1.12, section 5.7; docs/python.md,
"Batches bound to a dataset"): a commitment of samples made from a torch Dataset, a training
loop that names each batch's samples, a tape that verifies and replays exact; the recorder
refusing a batch that is not the samples it names before anything is written for it; a
forged tape (rows reordered, a row swapped for uncommitted data, a sample index changed, all
re-chained and re-sealed) refused by verify and ingest at exactly the forged transaction, saying
why (every transaction's rows are checked, not only the replayed ones'); and a tape claiming a
smaller count to pass sample 4 of 5 off as sample 1 of 2 (format 1.14: refused, the root commits
the count; format 1.13: the documented weaker kind, its count a claim)."""

import hashlib
import json
import struct
import subprocess

import pytest
import torch

import zkdv
import zkdv.dataset
import zkdv.torch
from zkdv import _native
from conftest import AUDIT, audit, fresh_mlp, replay_all
from tape_edit import ROOT, TRANSACTION, edited_metadata, rechain_records, rechain_with_edit

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
    assert status == 0 and verified["format"] == _native.TAPE_FORMAT, verified
    assert document["algorithm"] == "sha256-merkle-v2", document
    assert verified["dataset"] == {"algorithm": "sha256-merkle-v2", "root": document["root"], "leaf_count": 40, "count_committed": True}, verified
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


# The attack the counted root closes (issue 48, item 11; docs/dataset-commitment.md, "The root").
# RFC 6962's audit path of leaf 4 of 5 (one sibling, the tree over leaves 0-3, on the left) is
# also the path of leaf 1 of 2 to the same tree root. A forger, an independent writer, keeps the
# published root, claims 2 samples and renames every row of sample 4 as sample 1: the proofs'
# bytes stay as they are, only the claim changes.

def _tree_root(digests):
    """RFC 6962's Merkle Tree Hash over the digests (bytes), computed here with hashlib."""
    if len(digests) == 1:
        return hashlib.sha256(b"\x00" + digests[0]).digest()
    k = 1
    while k * 2 < len(digests):
        k *= 2
    return hashlib.sha256(b"\x01" + _tree_root(digests[:k]) + _tree_root(digests[k:])).digest()


def _counted_root(tree_root, count):
    """sha256-merkle-v2's root: SHA-256(0x02 || count as u64 little-endian || tree root)."""
    return hashlib.sha256(b"\x02" + struct.pack("<Q", count) + tree_root).digest()


def _rechained(source, target, minor=None, dataset=None, samples=None):
    """`source` re-chained and re-sealed as a forger's writer would: the header's and root's
    format minor set to `minor`, the root's dataset member updated with `dataset`, every
    transaction's samples metadata passed through `samples`."""
    data = bytearray(open(source, "rb").read())
    if minor is not None:
        struct.pack_into("<H", data, 10, minor)
    staged = str(target) + ".header"
    open(staged, "wb").write(bytes(data))

    def edit(kind, number, payload, last):
        if kind == ROOT:
            root = json.loads(payload)
            if minor is not None:
                root["format"]["minor"] = minor
            root["dataset"].update(dataset or {})
            return json.dumps(root).encode()
        if kind == TRANSACTION and samples:
            def change(metadata):
                metadata["samples"] = json.dumps(samples(json.loads(metadata["samples"])))
            return edited_metadata(payload, change)
        return payload

    rechain_records(staged, target, edit)
    return target


def test_a_smaller_count_cannot_pass_sample_4_off_as_sample_1(tmp_path):
    data = Points(n=5)
    commitment = tmp_path / "five.commit.json"
    zkdv.dataset.commit_samples(data, commitment)
    document = json.loads(commitment.read_text())
    assert document["algorithm"] == "sha256-merkle-v2" and document["leaf_count"] == 5, document
    tree_root = _tree_root([bytes.fromhex(leaf["sha256"]) for leaf in document["leaves"]])
    assert _counted_root(tree_root, 5).hex() == document["root"]
    # The honest tape: three steps on batches of sample 4 twice (no sampled checks, so re-chaining
    # redraws nothing).
    honest = tmp_path / "honest.zkdv"
    model = fresh_mlp()
    with zkdv.torch.ZKDV(honest, zkdv.ZKDVConfig(dataset_commitment=commitment)) as proof:
        model, loss_fn, optimizer = proof.prepare(model, torch.nn.CrossEntropyLoss(), torch.optim.SGD(model.parameters(), lr=0.05))
        for _ in range(3):
            x, y = torch.utils.data.default_collate([data[4], data[4]])
            with proof.transaction(batch=(x, y), samples=[4, 4]):
                optimizer.zero_grad()
                proof.backward(loss_fn(proof.forward(model, x), y))
                optimizer.step()
    status, verified = audit("verify", str(honest))
    assert status == 0 and verified["dataset"]["root"] == document["root"] and verified["dataset"]["count_committed"], verified

    def as_sample_1(samples):
        return [[1 for _ in rows] for rows in samples]

    # Format 1.14: the published root kept, the count claimed as 2. Each row's proof still
    # reaches the tree root, which counted with 2 is not the root: refused at transaction 0,
    # naming the row and the sample, by verify and ingest.
    forged = _rechained(honest, tmp_path / "claimed.zkdv", dataset={"leaf_count": 2}, samples=as_sample_1)
    status, verified = audit("verify", str(forged))
    assert status == 1 and verified["status"] == "corrupt", verified
    problem = verified["problem"]
    assert problem["transaction"] == 0, verified
    assert "row 0 is not committed sample 1 of 2" in problem["message"] and "with the count 2" in problem["message"], problem
    status, ingested = audit("ingest", str(forged), "--case", str(tmp_path / "claimed.zkaudit"))
    assert status == 1 and ingested["files"][0]["result"] == "rejected", ingested
    error = ingested["files"][0]["error"]
    assert "transaction 0" in error and "row 0 is not committed sample 1 of 2" in error, error
    # The forger who counts the root with the claim gets a tape that verifies, but no longer
    # names the published root: comparing the root is all the auditor needs.
    recounted = _rechained(honest, tmp_path / "recounted.zkdv", dataset={"leaf_count": 2, "root": _counted_root(tree_root, 2).hex()},
                           samples=as_sample_1)
    status, verified = audit("verify", str(recounted))
    assert status == 0 and verified["dataset"]["root"] != document["root"], verified
    # A 1.14 root naming the first algorithm is refused at the root.
    weaker = _rechained(honest, tmp_path / "v1-in-1.14.zkdv", dataset={"algorithm": "sha256-merkle-v1", "root": tree_root.hex()})
    status, verified = audit("verify", str(weaker))
    assert status == 1 and verified["problem"]["record_type"] == "root", verified
    assert "sha256-merkle-v2" in verified["problem"]["message"], verified

    # Format 1.13 (sha256-merkle-v1, the tree root): the documented weaker kind. The honest
    # binding reads as such, and the same claim passes verify: the count is the tape's claim
    # (spec 5.7), which only a comparison with the published commitment's count catches.
    v1 = {"algorithm": "sha256-merkle-v1", "root": tree_root.hex()}
    honest_v1 = _rechained(honest, tmp_path / "honest-1.13.zkdv", minor=13, dataset=v1)
    status, verified = audit("verify", str(honest_v1))
    assert status == 0 and verified["format"] == "1.13", verified
    assert verified["dataset"] == {"algorithm": "sha256-merkle-v1", "root": tree_root.hex(), "leaf_count": 5, "count_committed": False}, verified
    claimed_v1 = _rechained(honest, tmp_path / "claimed-1.13.zkdv", minor=13, dataset=dict(v1, leaf_count=2), samples=as_sample_1)
    status, verified = audit("verify", str(claimed_v1))
    assert status == 0 and verified["status"] == "sealed", verified
    assert verified["dataset"]["leaf_count"] == 2 and not verified["dataset"]["count_committed"], verified
    assert verified["dataset"]["leaf_count"] != document["leaf_count"]  # what the auditor must compare under v1
    done = subprocess.run([AUDIT, "verify", str(claimed_v1)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "the root does not commit the count, which is the tape's claim" in done.stdout, done.stdout
