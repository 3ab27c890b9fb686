#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/) from a real tape.

Usage: make_corpus.py TAPE [CORPUS_DIR]

TAPE is a small sealed tape, e.g. from `zkdv-audit demo --synthetic --steps 3 --out t.zkdv`.
The tape target gets the tape itself and variants that once crashed the reader; the
safetensors target the payloads of its first snapshot and transaction records; the record
JSON target its root and seal payloads and too-deep variants; the selection and tolerance
targets every documented form of their specs. Regression inputs are named regression-*.
"""

import hashlib
import os
import struct
import sys
import zlib

FILE_HEADER = 16
FRAME_HEADER = 56
DIGEST = 32
ROOT, PROGRAM, SNAPSHOT, TRANSACTION, SEAL = 1, 2, 3, 4, 5
DEEP = 100  # past the JSON depth limit of 64 (core/include/zkdv/util/json_text.h)


def padding(length):
    return (8 - length % 8) % 8


def frames(tape):
    """(type, flags, payload) of every record."""
    offset = FILE_HEADER
    while offset < len(tape):
        kind, flags, length = struct.unpack_from("<IIQ", tape, offset)
        payload = tape[offset + FRAME_HEADER:offset + FRAME_HEADER + length]
        yield kind, flags, payload
        offset += FRAME_HEADER + length + padding(length) + DIGEST


def framed(header, records):
    """A tape of these records, hash-chained as the writer chains them (spec section 2)."""
    out = bytearray(header)
    previous = hashlib.sha256(header).digest()
    for kind, flags, payload in records:
        head = struct.pack("<IIQ", kind, flags, len(payload))
        head += struct.pack("<II", zlib.crc32(head), 0) + previous
        body = head + payload + bytes(padding(len(payload)))
        previous = hashlib.sha256(body).digest()
        out += body + previous
    return bytes(out)


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    tape = open(sys.argv[1], "rb").read()
    corpus = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    records = list(frames(tape))
    first = {}
    for kind, _, payload in records:
        first.setdefault(kind, payload)
    root, seal = first[ROOT].decode(), first[SEAL].decode()
    deep = "[" * DEEP + "]" * DEEP
    deep_root = root.replace('"metadata":{', '"metadata":{"deep":' + deep + ",", 1)
    assert deep_root != root, "the root has no metadata object"

    target = os.path.join(corpus, "fuzz_tape")
    write(target, "synthetic-3-steps.tape", tape)
    write(target, "regression-empty.tape", b"")
    write(target, "regression-deep-root.tape", framed(tape[:FILE_HEADER], [(ROOT, records[0][1], deep_root.encode())] + records[1:]))

    target = os.path.join(corpus, "fuzz_safetensors")
    write(target, "snapshot.safetensors", first[SNAPSHOT])
    write(target, "transaction.safetensors", first[TRANSACTION])
    write(target, "regression-empty.safetensors", b"")

    target = os.path.join(corpus, "fuzz_record_json")
    write(target, "root.json", root)
    write(target, "seal.json", seal)
    write(target, "regression-deep-metadata.json", deep_root)
    write(target, "regression-deep-signature.json", seal.replace('"signature":null', '"signature":' + deep))

    target = os.path.join(corpus, "fuzz_selection")
    for i, spec in enumerate(["all", "ids:3,17,40", "range:100-199", "random:50", "random:5%", "stratified:50",
                              "stratified:5%", "topq:10", "topq:1%", "sampled"]):
        write(target, "spec-%02d.txt" % i, spec)

    target = os.path.join(corpus, "fuzz_tolerance")
    for i, spec in enumerate(["exact", "ulp=16,rel=1e-6,fingerprint=1e-5", "ulp=64", "rel=0.0001", "fingerprint=1e-4,ulp=0"]):
        write(target, "spec-%02d.txt" % i, spec)

    # Exported-graph programs: the committed ones (tests/data/programs), cut and deepened.
    target = os.path.join(corpus, "fuzz_exported_graph")
    programs = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "programs")
    for name in sorted(os.listdir(programs)):
        if name.endswith(".json"):
            graph = open(os.path.join(programs, name), "rb").read()
            write(target, name, graph)
            write(target, "regression-cut-" + name, graph[: len(graph) // 2])
    # The write check's alias chains and the sizes resolved against an input (both checks of
    # ExportedGraph::parse): one refused, one read.
    head = '{"format":"zkdv-exported-graph","version":1,"inputs":[{"kind":"parameter","name":"w","dtype":"F32","shape":[4,1]},{"kind":"batch","index":0,"dtype":"F32","shape":[4,1]}],"nodes":['
    write(target, "alias-write-chain.json", head + '{"op":"aten::t","args":[{"input":0}]},{"op":"aten::view","args":[{"node":0},{"list":[{"int":-1}]}]},{"op":"aten::relu_","args":[{"node":1}]}],"loss":{"node":2}}')
    write(target, "resolved-sizes.json", head + '{"op":"aten::expand","args":[{"input":1},{"list":[{"int":3},{"int":-1},{"int":8}]}]},{"op":"aten::constant_pad_nd","args":[{"input":1},{"list":[{"int":1},{"int":1}]}]},{"op":"aten::sum","args":[{"node":0}]}],"loss":{"node":2}}')
    write(target, "regression-deep-list.json", '{"format":"zkdv-exported-graph","version":1,"inputs":[],"nodes":[{"op":"aten::cat","args":[' + '{"list":[' * 8 + ']}' * 8 + ']}],"loss":{"node":0}}')


if __name__ == "__main__":
    main()
