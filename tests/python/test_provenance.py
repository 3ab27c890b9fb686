"""zkdv.provenance: a dataset committed and checked, and a model's weights matched with a
tape's states, from Python through the same core calls as zkdv-audit (docs/python.md)."""

import json
import struct

import pytest
import torch

import zkdv.provenance
from conftest import fresh_mlp, train_with_zkdv


def write_safetensors(path, tensors):
    """A safetensors file of `tensors` (name -> tensor), written by hand: the format is a
    length, a JSON header and the tensors' bytes."""
    dtypes = {torch.float32: "F32", torch.float64: "F64", torch.int64: "I64"}
    header, blobs, offset = {"__metadata__": {"format": "pt"}}, [], 0
    for name, tensor in tensors.items():
        data = tensor.detach().contiguous().cpu().numpy().tobytes()
        header[name] = {"dtype": dtypes[tensor.dtype], "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_dataset(folder):
    (folder / "sub").mkdir(parents=True)
    (folder / "a.txt").write_bytes(b"alpha\n")
    (folder / "sub" / "b.bin").write_bytes(bytes(range(256)) * 40)
    (folder / "c.txt").write_bytes(b"gamma\n")


def test_commit_then_verify_names_the_changed_file(tmp_path):
    data = tmp_path / "data"
    make_dataset(data)
    commitment = tmp_path / "data.commit.json"
    made = zkdv.provenance.commit_dataset(data, commitment, threads=2)
    assert made.leaf_count == 3
    assert made.total_bytes == 6 + 10240 + 6
    assert json.loads(commitment.read_text())["root"] == made.root

    same = zkdv.provenance.verify_dataset(commitment, data)
    assert same.ok and same.root_matches and same.differences == []
    assert same.files_hashed == 3

    (data / "sub" / "b.bin").write_bytes(b"changed")
    (data / "c.txt").unlink()
    changed = zkdv.provenance.verify_dataset(commitment, data)
    assert not changed.ok
    assert changed.root_matches  # the document itself is intact
    assert [(d.path, d.finding) for d in changed.differences] == [("c.txt", "missing"), ("sub/b.bin", "changed")]

    # Without the folder only the document is checked.
    alone = zkdv.provenance.verify_dataset(commitment)
    assert alone.ok and alone.folder is None and alone.differences == []


def test_commit_of_listed_files_and_extra_files(tmp_path, monkeypatch):
    data = tmp_path / "data"
    make_dataset(data)
    monkeypatch.chdir(data)
    made = zkdv.provenance.commit_dataset(["a.txt", "sub/b.bin"], tmp_path / "two.json")
    assert made.leaf_count == 2
    extra = zkdv.provenance.verify_dataset(tmp_path / "two.json", data)
    assert [(d.path, d.finding) for d in extra.differences] == [("c.txt", "extra")]
    assert zkdv.provenance.verify_dataset(tmp_path / "two.json", data, ignore_extra=True).ok


def test_dataset_errors_carry_the_core_message(tmp_path):
    data = tmp_path / "data"
    make_dataset(data)
    commitment = tmp_path / "data.commit.json"
    zkdv.provenance.commit_dataset(data, commitment)
    with pytest.raises(ValueError, match="exists"):
        zkdv.provenance.commit_dataset(data, commitment)
    assert zkdv.provenance.commit_dataset(data, commitment, overwrite=True).leaf_count == 3
    with pytest.raises(OSError, match="nowhere.json"):
        zkdv.provenance.verify_dataset(tmp_path / "nowhere.json")
    edited = json.loads(commitment.read_text())
    edited["leaves"][0]["sha256"] = "zz"
    commitment.write_text(json.dumps(edited))
    with pytest.raises(ValueError, match=r"leaves\[0\]\.sha256"):
        zkdv.provenance.verify_dataset(commitment)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A tape of 8 steps of the MLP, with its starting and final weights."""
    folder = tmp_path_factory.mktemp("weights")
    model = fresh_mlp()
    start = {name: value.clone() for name, value in model.state_dict().items()}
    tape = folder / "run.zkdv"
    train_with_zkdv(str(tape), model, torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9), 8)
    final = {name: value.clone() for name, value in model.state_dict().items()}
    assert not torch.equal(start["out.bias"], final["out.bias"])
    return folder, tape, start, final


def test_match_weights_names_the_changed_tensor(trained):
    folder, tape, start, final = trained
    model = folder / "start.safetensors"
    write_safetensors(model, start)
    match = zkdv.provenance.match_weights(tape, model, snapshot=0)
    assert match.equal and match.failing == 0 and match.differing == []
    assert match.before_transaction == 0 and match.reference == "snapshot"
    assert {t.name for t in match.tensors} == set(start)
    assert {t.tape_name for t in match.tensors} == {"model." + name for name in start}  # the layout's names
    assert match.name_mapping["kind"] == "model-drops-prefix"

    edited = dict(start)
    edited["out.bias"] = start["out.bias"].clone()
    edited["out.bias"][1] += 0.25
    write_safetensors(model, edited)
    match = zkdv.provenance.match_weights(tape, model, snapshot=0)
    assert not match.equal
    assert match.differing == ["out.bias"]
    changed = next(t for t in match.tensors if t.name == "out.bias")
    assert changed.finding == "values" and changed.differing_elements == 1
    assert changed.max_abs_diff == pytest.approx(0.25, rel=1e-6)


def test_match_weights_final_state(trained):
    folder, tape, start, final = trained
    shipped = folder / "shipped.safetensors"
    write_safetensors(shipped, final)
    match = zkdv.provenance.match_weights(tape, shipped, final=True)
    assert match.equal and match.final_state and match.before_transaction == 8
    # The starting weights are not the final state: every tensor differs.
    write_safetensors(shipped, start)
    assert sorted(zkdv.provenance.match_weights(tape, shipped, final=True).differing) == sorted(start)


def test_match_weights_refusals(trained):
    folder, tape, start, final = trained
    model = folder / "refusals.safetensors"
    write_safetensors(model, start)
    with pytest.raises(ValueError, match="exactly one"):
        zkdv.provenance.match_weights(tape, model)
    with pytest.raises(ValueError, match="exactly one"):
        zkdv.provenance.match_weights(tape, model, snapshot=0, final=True)
    with pytest.raises(ValueError, match="snapshot"):
        zkdv.provenance.match_weights(tape, model, snapshot=3)
    (folder / "notes.safetensors").write_text("not a model")
    with pytest.raises(ValueError, match="notes.safetensors"):
        zkdv.provenance.match_weights(tape, folder / "notes.safetensors", final=True)
    with pytest.raises(OSError, match="nowhere.zkdv"):
        zkdv.provenance.match_weights(folder / "nowhere.zkdv", model, final=True)
