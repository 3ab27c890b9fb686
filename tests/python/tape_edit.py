"""A dishonest trainer's edit: change one transaction's recorded loss, then recompute every
digest after it and the seal (docs/tape-format.md section 2), so the tape still reads as a
sealed, intact chain. Only replay can catch it."""

import hashlib
import json
import struct
import zlib

HEADER = 16
FRAME_HEADER = 56
TRANSACTION, SEAL = 4, 5


def _records(data):
    offset = HEADER
    while offset < len(data):
        kind, flags, length = struct.unpack_from("<IIQ", data, offset)
        padded = length + (8 - length % 8) % 8
        yield kind, flags, bytes(data[offset + FRAME_HEADER:offset + FRAME_HEADER + length])
        offset += FRAME_HEADER + padded + 32


def _frame(kind, flags, payload, previous):
    head = struct.pack("<IIQ", kind, flags, len(payload))
    frame = head + struct.pack("<II", zlib.crc32(head), 0) + previous + payload + b"\0" * ((8 - len(payload) % 8) % 8)
    digest = hashlib.sha256(frame).digest()
    return frame + digest, digest


def _scaled_loss(payload, factor):
    """The transaction blob with its `loss` scalar (F32) multiplied by factor."""
    (header_length,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + header_length])
    start, end = header["loss"]["data_offsets"]
    assert header["loss"]["dtype"] == "F32" and end - start == 4, header["loss"]
    at = 8 + header_length + start
    (value,) = struct.unpack_from("<f", payload, at)
    edited = bytearray(payload)
    struct.pack_into("<f", edited, at, value * factor)
    return bytes(edited)


def scaled_scalar(payload, name, factor):
    """The transaction blob with its F32 scalar tensor `name` multiplied by factor."""
    (header_length,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + header_length])
    start, end = header[name]["data_offsets"]
    assert header[name]["dtype"] == "F32" and end - start == 4, header[name]
    at = 8 + header_length + start
    (value,) = struct.unpack_from("<f", payload, at)
    edited = bytearray(payload)
    struct.pack_into("<f", edited, at, value * factor)
    return bytes(edited)


def edited_metadata(payload, edit):
    """The blob with its __metadata__ passed through edit(dict) (the tensors' bytes unchanged)."""
    (header_length,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + header_length])
    edit(header["__metadata__"])
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + payload[8 + header_length:]


def rechain_with_scaled_loss(source, target, transaction, factor=0.5):
    """Writes `target`: `source` with transaction number `transaction`'s loss scaled."""
    rechain_with_edit(source, target, transaction, lambda payload: _scaled_loss(payload, factor))


def rechain_with_edit(source, target, transaction, edit):
    """Writes `target`: `source` with transaction number `transaction`'s blob passed through edit."""
    data = open(source, "rb").read()
    out = bytearray(data[:HEADER])
    previous = hashlib.sha256(data[:HEADER]).digest()
    seen = 0
    for kind, flags, payload in _records(data):
        if kind == TRANSACTION:
            if seen == transaction:
                payload = edit(payload)
            seen += 1
        if kind == SEAL:
            seal = json.loads(payload)
            seal["chain_head"] = previous.hex()
            payload = json.dumps(seal).encode()
        frame, previous = _frame(kind, flags, payload, previous)
        out += frame
    assert seen > transaction, "the tape has %d transactions" % seen
    open(target, "wb").write(bytes(out))


ROOT, SNAPSHOT = 1, 3


def rechain_records(source, target, edit):
    """Writes `target`: `source` with every record's payload passed through
    edit(kind, number, payload, last), where number counts the records of that kind from 0 and
    last says whether it is the last of its kind; the chain and the seal's head recomputed."""
    data = open(source, "rb").read()
    records = list(_records(data))
    counts, totals = {}, {}
    for kind, _, _ in records:
        totals[kind] = totals.get(kind, 0) + 1
    out = bytearray(data[:HEADER])
    previous = hashlib.sha256(data[:HEADER]).digest()
    for kind, flags, payload in records:
        number = counts.get(kind, 0)
        counts[kind] = number + 1
        if kind == SEAL:
            seal = json.loads(payload)
            seal["chain_head"] = previous.hex()
            payload = json.dumps(seal).encode()
        else:
            payload = edit(kind, number, payload, number + 1 == totals[kind])
        frame, previous = _frame(kind, flags, payload, previous)
        out += frame
    open(target, "wb").write(bytes(out))


def edited_f32_tensor(payload, name, edit):
    """The safetensors blob with the F32 tensor `name`'s values passed through edit(list)."""
    (header_length,) = struct.unpack_from("<Q", payload, 0)
    header = json.loads(payload[8:8 + header_length])
    start, end = header[name]["data_offsets"]
    assert header[name]["dtype"] == "F32", header[name]
    at = 8 + header_length + start
    count = (end - start) // 4
    values = edit(list(struct.unpack_from("<%df" % count, payload, at)))
    edited = bytearray(payload)
    struct.pack_into("<%df" % count, edited, at, *values)
    return bytes(edited)


def edited_root(payload, edit):
    """The root record's JSON passed through edit(dict)."""
    root = json.loads(payload)
    edit(root)
    return json.dumps(root).encode()
