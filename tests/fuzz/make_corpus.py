#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets (tests/fuzz/corpus/<target>/) from a real tape.

Usage: make_corpus.py [--only TARGET,...] TAPE [CORPUS_DIR]

TAPE is a small sealed tape, e.g. from `zkdv-audit demo --synthetic --steps 3 --out t.zkdv`.
The tape target gets the tape itself and variants that once crashed the reader; the
safetensors target the payloads of its first snapshot and transaction records; the record
JSON target its root and seal payloads and too-deep variants; the selection and tolerance
targets every documented form of their specs. The worker-protocol target gets one valid
message of each type (encoded here as core/replay/worker_protocol.cpp encodes it, the job
carrying the tape's root), behind the byte that chooses its decoder, and streams of frames;
the display-filter target the filters of docs/display-filters.md and hostile ones; the
record-dissection target the tape's first records whole, cut and damaged.
Regression inputs are named regression-*. --only writes the named targets' folders alone
(tests/fuzz/corpus/fuzz_tape/synthetic-3-steps.tape serves as TAPE for the last three).
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


# The worker protocol (core/include/zkdv/replay/worker_protocol.h): little-endian fields,
# length-prefixed text; frames of u32 type, u32 length, payload.
JOB, SEGMENT, HELLO, READY, LOAD_FAILED, OUTCOME, SEGMENT_DONE, MEMORY_EXHAUSTED = 1, 2, 9, 10, 11, 12, 13, 14
# The first byte of an input chooses the decoder (tests/fuzz/fuzz_worker_protocol.cpp).
PICK = {"hello": 0, "job": 1, "segment": 2, "outcome": 3, "load-failure": 4, "count": 5, "text": 6, "frames": 7,
        "read-frames": 8}


def u8(v):
    return struct.pack("<B", v)


def u64(v):
    return struct.pack("<Q", v & (2**64 - 1))


def f64(v):
    return struct.pack("<d", v)


def text(s):
    b = s.encode() if isinstance(s, str) else s
    return u64(len(b)) + b


def frame(kind, payload):
    return struct.pack("<II", kind, len(payload)) + payload


NUMERICS = ('{"blas":"mkl","cpu":{"flags":["avx2","fma"],"model":"Fuzz CPU","vendor":"GenuineIntel"},"intra_op_threads":4,'
            '"mkl":"","onednn":"","settings":{"MKL_CBWR":"AUTO"},"torch_cpu_capability":"AVX2"}')


def hello(numerics=NUMERICS):
    return text("2.5.1") + text("12.4") + u64(1) + u64(4) + text(numerics)


def refs(entries):
    out = u64(len(entries))
    for key, index, offset, size in entries:
        out += u64(key) + u64(index) + u64(offset) + u64(size) + bytes(range(32))
    return out


def job(root, transactions=((0, 3, 4096, 512), (1, 4, 4608, 512)), snapshots=((0, 2, 1024, 3072),)):
    return (text(root) + text(b"\x7fprogram") + text("cpu") + u64(2) + f64(16) + f64(1e-6) + f64(1e-5) + f64(4) + u64(1 << 30)
            + u8(0) + text("/cases/seed.zkdv") + text("/cases/seed.zkaudit") + u64(1) + u64(2) + bytes(32)
            + refs(transactions) + refs(snapshots))


def segment(first, last, selected, capture=(), reaches=1):
    out = u64(first) + u64(last) + u8(reaches) + u64(len(selected))
    for t in selected:
        out += u64(t)
    out += u64(len(capture))
    for t in capture:
        out += u64(t)
    return out


def comparison(tensor, slot, verdict, histogram=(3, 1)):
    return (text(tensor) + text(slot) + u8(verdict) + text("") + u64(4) + u8(1 if verdict == 0 else 0) + f64(0.5) + f64(1e-7)
            + f64(0.999) + f64(12) + f64(3.5) + u64(0) + u64(0) + u8(len(histogram)) + b"".join(u64(h) for h in histogram))


def values(tensor, dtype, shape, recorded, replayed):
    out = text(tensor) + text("delta") + text(dtype) + u64(len(shape))
    for d in shape:
        out += u64(d)
    return out + text(recorded) + text(replayed)


def outcome(index=5, verdict=2, cause=0, comparisons=(), value_list=(), omitted=""):
    out = u64(index) + u64(0) + u8(1) + u8(verdict) + u8(cause) + text("fc.weight diverged") + u64(123456)
    out += u64(len(comparisons)) + b"".join(comparisons)
    out += u64(len(value_list)) + b"".join(value_list)
    return out + text(omitted)


def traced(name, phase, depth, finished, outputs):
    """A traced operator (zkdv-audit explain); outputs are (kind, dtype, shape, values)."""
    out = text(name) + text(phase) + struct.pack("<I", depth) + u64(finished) + u64(len(outputs))
    for kind, dtype, shape, data in outputs:
        out += u8(kind) + text(dtype) + u64(len(shape)) + b"".join(u64(d) for d in shape) + text(data) + bytes(32)
    return out


def worker_protocol(target, root):
    def put(name, pick, payload):
        write(target, name, u8(PICK[pick]) + payload)

    diverged = outcome(comparisons=[comparison("loss", "loss", 0, ()), comparison("fc.weight", "delta", 2, (5, 0, 2, 7))])
    captured = outcome(index=3, verdict=1, comparisons=[comparison("fc.bias", "delta", 1)],
                       value_list=[values("fc.bias", "F32", [2], f64(1.0), f64(1.5)), values("fc.weight", "BF16", [2, 1], b"\x80\x3f\x00\x40", b"")])
    put("hello.bin", "hello", hello())
    put("hello-bad-numerics.bin", "hello", hello('{"cpu":{}}'))
    put("job.bin", "job", job(root))
    put("segment.bin", "segment", segment(0, 9, [3, 7, 9], [7]))
    put("outcome-diverged.bin", "outcome", diverged)
    put("outcome-values.bin", "outcome", captured)
    put("outcome-unverifiable.bin", "outcome", outcome(verdict=3, cause=5, omitted="fc.weight: 96 MB of values past the bound"))
    # The optional last parts of zkdv-audit explain: the transactions to trace, the operators traced.
    put("segment-trace.bin", "segment", segment(0, 9, [7], []) + u64(1) + u64(7))
    put("outcome-operators.bin", "outcome",
        outcome(index=7, verdict=0) + u64(3)
        + traced("aten::conv2d", "forward", 0, 1, [(0, "F32", [2], f64(1.0))])
        + traced("aten::convolution", "forward", 1, 0, [(1, "F32", [1 << 20], b""), (2, "U8", [3], b"")])
        + traced("gradient fc.weight", "stage", 0, 2, [(0, "I64", [], u64(3))])
        + text("1 outputs past the 96 MiB value cap came back as digests only"))
    put("load-failure.bin", "load-failure", u8(6) + text("the program does not load: unknown operator aten::foo"))
    put("count.bin", "count", u64(1 << 33))
    put("text.bin", "text", text("ready"))
    # A worker's whole conversation, as the parent's frame splitter and the blocking reader get it.
    conversation = (frame(HELLO, hello()) + frame(READY, b"") + frame(OUTCOME, diverged) + frame(OUTCOME, captured)
                    + frame(SEGMENT_DONE, b"") + frame(LOAD_FAILED, u8(1) + text("no libtorch")) + frame(MEMORY_EXHAUSTED, u64(4096)))
    put("frames-worker.bin", "frames", conversation)
    put("frames-parent.bin", "frames", frame(JOB, job(root)) + frame(SEGMENT, segment(10, 19, [12])))
    put("read-frames-worker.bin", "read-frames", conversation)
    put("read-frames-cut.bin", "read-frames", conversation[: len(conversation) // 2])
    # Regressions. A shape of 2^62 F32 elements needs 2^64 bytes, which wrapped to 0 and let
    # empty values through; a header that promised 256 MB made the reader allocate them
    # before one byte came; a job's record list with one key twice lost an entry silently.
    put("regression-wrapped-shape.bin", "outcome", outcome(value_list=[values("w", "F32", [1 << 62], b"", b"")]))
    put("regression-promised-frame.bin", "read-frames", struct.pack("<II", OUTCOME, 256 << 20) + b"\x00" * 8)
    put("regression-repeated-ref.bin", "job", job(root, transactions=((1, 3, 4096, 512), (1, 4, 4608, 512))))


DISPLAY_FILTERS = [
    # docs/display-filters.md
    "loss > 0.1 && verdict == diverged",
    "sampled && !replayed",
    'tensor contains "fc" || worst_ulp >= 1000',
    "(index >= 100 and index < 200) or verdict == unverifiable",
    'flag == suspicious || note contains "lr"',
    "verdict = 'within-tolerance' and not disagree",
    "run < 5 && verdict == diverged",
    "lr <= 1e-3 && update_norm > -0.5 && max_update != 0 && segment == 2 && worst_rel > 1e-6",
    "deltas || state_digest || flagged",
    'worst_tensor == conv1.bias && flag != "none"',
    # Refused ones, and values that must stay values.
    "loss >",
    "10-19",
    'tensor == "fc',
    "worst_tensor == \"x') OR 1=1 --\" || loss > 1e300",
    "note == \"'; DROP TABLE transactions; --\"",
    "tensor contains '\"; DELETE FROM verdicts; SELECT \"'",
    "note contains ';' && note contains '--' && note contains '/*'",
    "worst_tensor == 'ß∂ƒ©.权重' || note contains \"😀\"",
    "index > 0x10 || loss < 1e400 || loss > -.5",
    "sampled == 1",
]


def display_filter(target):
    for i, text_ in enumerate(DISPLAY_FILTERS):
        write(target, "filter-%02d.txt" % i, text_)
    # Regressions: SQLite (3.40) parses with a stack of 100 symbols, and the compiler nested
    # its SQL one level per && and ||, so 100 terms failed with "parser stack overflow";
    # `not` escaped the nesting limit; `!=` counted towards it.
    write(target, "regression-long-chain.txt", " || ".join(["sampled"] * 100))
    write(target, "regression-not-chain.txt", "not " * 1000 + "sampled")
    write(target, "regression-deep-groups.txt", '(flag == none || note contains "a" && (' * 32 + 'tensor contains "fc"' + "))" * 32)
    write(target, "regression-deep-negations.txt", "!(disagree || flagged && " * 32 + "replayed" + ")" * 32)
    write(target, "regression-not-equal.txt", " && ".join(["index != 1"] * 70))
    write(target, "deep-65.txt", "(" * 65 + "replayed" + ")" * 65)


def record_dissection(target, tape):
    """The tape up to its first transaction (the dissector reads record after record from byte
    16), then that transaction cut, and damaged where the dissector reads lengths."""
    offset, kind = FILE_HEADER, None
    while kind != TRANSACTION:
        start = offset
        kind, _, length = struct.unpack_from("<IIQ", tape, offset)
        offset += FRAME_HEADER + length + padding(length) + DIGEST
    head = tape[:offset]
    write(target, "first-records.tape", head)
    write(target, "cut-transaction.tape", head[: start + FRAME_HEADER + 100])
    payload = start + FRAME_HEADER
    write(target, "huge-safetensors-header.tape", head[:payload] + u64(2**63) + head[payload + 8:])
    write(target, "damaged-header-check.tape", head[: start + 16] + bytes([head[start + 16] ^ 1]) + head[start + 17:])
    # A payload length no file holds, which the header check vouches for.
    frame = struct.pack("<IIQ", TRANSACTION, 1, 2**64 - 4)
    frame += struct.pack("<II", zlib.crc32(frame), 0)
    write(target, "huge-payload-length.tape", head[:start] + frame + head[start + 24:])


def main():
    args = sys.argv[1:]
    only = None
    if args and args[0] == "--only":
        only = set(args[1].split(","))
        args = args[2:]
    tape = open(args[0], "rb").read()
    corpus = args[1] if len(args) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    records = list(frames(tape))
    first = {}
    for kind, _, payload in records:
        first.setdefault(kind, payload)
    root, seal = first[ROOT].decode(), first[SEAL].decode()
    if only is not None:
        if "fuzz_worker_protocol" in only:
            worker_protocol(os.path.join(corpus, "fuzz_worker_protocol"), root)
        if "fuzz_display_filter" in only:
            display_filter(os.path.join(corpus, "fuzz_display_filter"))
        if "fuzz_record_dissection" in only:
            record_dissection(os.path.join(corpus, "fuzz_record_dissection"), tape)
        return
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

    worker_protocol(os.path.join(corpus, "fuzz_worker_protocol"), root)
    display_filter(os.path.join(corpus, "fuzz_display_filter"))
    record_dissection(os.path.join(corpus, "fuzz_record_dissection"), tape)


if __name__ == "__main__":
    main()
