#!/usr/bin/python3
"""The PyTorch eager baseline of bench_replay: replays the given transactions of a tape the
way a Python auditor would (load each segment's snapshot into the scripted model and a real
torch.optim optimizer, then step through to the selected transactions), checking the loss,
the update fingerprints and the recorded deltas. Prints the replay loop's wall time as JSON.

usage: python_replay.py TAPE --ids 3,17,40 [--threads N]
"""

import argparse
import inspect
import io
import json
import struct
import sys
import time

import torch

DTYPES = {"F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
          "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool}


def records(data):
    """(type, payload) of every record: frames of docs/tape-format.md section 2.2."""
    offset = 16
    while offset + 56 <= len(data):
        kind, _flags, length = struct.unpack_from("<IIQ", data, offset)
        yield kind, offset + 56, length
        offset += 56 + length + (8 - length % 8) % 8 + 32


def safetensors(data, start, length):
    size = struct.unpack_from("<Q", data, start)[0]
    header = json.loads(bytes(data[start + 8:start + 8 + size]))
    metadata = header.pop("__metadata__", {})
    base = start + 8 + size
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        raw = bytearray(data[base + begin:base + end])
        tensor = torch.frombuffer(raw, dtype=DTYPES[entry["dtype"]]) if raw else torch.empty(0, dtype=DTYPES[entry["dtype"]])
        tensors[name] = tensor.reshape(entry["shape"])
    return metadata, tensors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tape")
    parser.add_argument("--ids", required=True)
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    selected = sorted({int(i) for i in args.ids.split(",")})

    with open(args.tape, "rb") as f:
        data = memoryview(f.read())
    root, program, snapshots, transactions = None, None, {}, {}
    for kind, start, length in records(data):
        if kind == 1:
            root = json.loads(bytes(data[start:start + length]))
        elif kind == 2:
            program = bytes(data[start:start + length])
        elif kind == 3:
            metadata, _ = safetensors(data, start, length)
            snapshots[int(metadata["before_transaction"])] = (start, length)
        elif kind == 4:
            transactions[len(transactions)] = (start, length)

    started = time.perf_counter()
    model = torch.jit.load(io.BytesIO(program))
    model.train()
    parameters = dict(model.named_parameters())
    buffers = dict(model.named_buffers())
    names = [p["name"] for p in root["model"]["parameters"]]
    group = root["optimizer"]["groups"][0]["options"]
    optimizer_class = getattr(torch.optim, root["optimizer"]["contract"])
    accepted = inspect.signature(optimizer_class).parameters
    options = {k: (tuple(v) if isinstance(v, list) else v) for k, v in group.items() if k in accepted}
    interval = root["replay_snapshot_interval"]

    checked = mismatches = 0
    segments = {}
    for index in selected:
        segments.setdefault(index // interval, []).append(index)
    for segment, chosen in sorted(segments.items()):
        _, state = safetensors(data, *snapshots[segment * interval])
        with torch.no_grad():
            for name in names:
                parameters[name].copy_(state["param/" + name])
            for name, buffer in buffers.items():
                buffer.copy_(state["buffer/" + name])
        optimizer = optimizer_class([parameters[n] for n in names], **options)
        for name in names:
            slots = {k.rsplit("/", 1)[1]: v.clone() for k, v in state.items() if k.startswith("state/" + name + "/")}
            if slots:
                optimizer.state[parameters[name]] = slots
        for index in range(segment * interval, chosen[-1] + 1):
            metadata, record = safetensors(data, *transactions[index])
            batch = [record["batch/%d" % i] for i in range(len([k for k in record if k.startswith("batch/")]))]
            before = [parameters[n].detach().clone() for n in names]
            loss = model.training_step(batch)
            loss.backward()
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            deltas = [parameters[n].detach() - b for n, b in zip(names, before)]
            l2 = torch.tensor([d.double().norm().item() for d in deltas], dtype=torch.float64)
            ok = torch.equal(loss.detach(), record["loss"]) and torch.equal(l2, record["update/l2"])
            if "delta/" + names[0] in record:
                ok = ok and all(torch.equal(d, record["delta/" + n]) for n, d in zip(names, deltas))
            checked += 1
            mismatches += 0 if ok else 1
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "replayed": checked, "mismatches": mismatches, "selected": len(selected),
                      "torch": torch.__version__, "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    sys.exit(main())
