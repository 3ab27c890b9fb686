#!/usr/bin/python3
"""A Python producer of ZKDV tapes (docs/tape-format.md): an ordinary PyTorch eager training
loop with the real torch.optim optimizer and a scripted model with training_step, written
in the same format as the C++ recorder, so the test suite holds tapes made by real PyTorch.

usage: record.py OUT.zkdv [--optimizer NAME] [--steps N] [--seed S] [--interval K]
                          [--update-check P] [--state-check P] [--options JSON] [--format-minor 2|3|5|6|7|8]
                          [--scheduler JSON] [--clip-grad-norm MAX] [--clip-grad-value V] [--forge-clip STEP] [--accumulate M]
                          [--grad-scaler INIT_SCALE] [--backoff-factor B] [--growth-interval N] [--forge-skip STEP]
                          [--number-dtype I64|F64|F32]
"""

import argparse
import hashlib
import io
import json
import os
import struct
import sys
import time
import zlib
from typing import List

import torch
from torch import Tensor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_writer  # noqa: E402

MASK64 = (1 << 64) - 1
RECORD_TYPES = {"root": 1, "program": 2, "snapshot": 3, "transaction": 4, "seal": 5}
DTYPE_NAMES = {torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
               torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
               torch.uint8: "U8", torch.bool: "BOOL"}


class SplitMix64:
    """The sampling generator of spec section 5.2."""

    def __init__(self, seed):
        self.state = seed & MASK64

    def uniform(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK64
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
        z = z ^ (z >> 31)
        return (z >> 11) * 2.0 ** -53


def sampled_checks(generator, update_probability, state_probability):
    """The (update, state) checks one transaction's draws select (spec section 5.2)."""
    return generator.uniform() < update_probability, generator.uniform() < state_probability


def chain_bound_generator(seed, anchor):
    """Format 1.3: the draws of a transaction are keyed by the digest of the transaction record
    before it (the root record's for transaction 0)."""
    return SplitMix64(seed ^ int.from_bytes(anchor[:8], "little"))


class TapeWriter:
    """Framing and hash chain of spec section 2."""

    def __init__(self, path, minor):
        self.out = open(path, "xb")
        header = b"ZKDVTAPE" + struct.pack("<HHI", 1, minor, 0)
        self.out.write(header)
        self.head = hashlib.sha256(header).digest()
        self.counts = {"records": 0, "transactions": 0, "snapshots": 0}

    def append(self, kind, payload):
        frame = struct.pack("<IIQ", RECORD_TYPES[kind], 1, len(payload))
        frame += struct.pack("<II", zlib.crc32(frame), 0) + self.head
        frame += payload + b"\0" * ((8 - len(payload) % 8) % 8)
        digest = hashlib.sha256(frame).digest()
        self.out.write(frame + digest)
        self.head = digest
        self.counts["records"] += 1
        if kind in ("transaction", "snapshot"):
            self.counts[kind + "s"] += 1
        return digest

    def seal(self):
        seal = dict(self.counts, chain_head=self.head.hex(), signature=None)
        self.append("seal", json.dumps(seal).encode())
        self.out.close()


def blob(tensors, metadata):
    header = {"__metadata__": metadata}
    chunks, offset = [], 0
    for name, tensor in tensors:
        data = safetensors_writer.tensor_bytes(tensor)
        header[name] = {"dtype": DTYPE_NAMES[tensor.dtype], "shape": list(tensor.shape), "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - (8 + len(text)) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


class Net(torch.nn.Module):
    """A small MLP with a running-mean buffer that training_step updates."""

    def __init__(self):
        super().__init__()
        self.hidden = torch.nn.Linear(6, 16)
        self.out = torch.nn.Linear(16, 3)
        self.register_buffer("input_mean", torch.zeros(6))

    @torch.jit.export
    def training_step(self, batch: List[Tensor]) -> Tensor:
        x = batch[0]
        y = batch[1]
        self.input_mean.mul_(0.9).add_(x.mean(0), alpha=0.1)
        logits = self.out(torch.relu(self.hidden(x)))
        return torch.nn.functional.cross_entropy(logits, y)


NUMBER_DTYPES = {"I64": torch.int64, "F64": torch.float64, "F32": torch.float32}


class SpecGradScaler:
    """torch.amp.GradScaler's arithmetic as spec 5.6 states it, for a torch without a CPU
    GradScaler (1.13): the loss times a float32 scale of shape [1], the gradients times its
    float32 reciprocal in their opmath type, a skip on an inf or NaN, the rule after each step."""

    def __init__(self, init_scale, backoff_factor, growth_interval, growth_factor=2.0):
        self.scale_value = torch.tensor(init_scale, dtype=torch.float32).item()
        self.tracker, self.found = 0, False
        self.growth_factor, self.backoff_factor, self.growth_interval = growth_factor, backoff_factor, growth_interval

    def get_growth_factor(self):
        return self.growth_factor

    def get_backoff_factor(self):
        return self.backoff_factor

    def get_growth_interval(self):
        return self.growth_interval

    def state(self):
        return self.scale_value, self.tracker

    def scale(self, loss):
        return loss * torch.full((1,), self.scale_value, dtype=torch.float32)

    def unscale_(self, optimizer):
        inverse = torch.tensor(self.scale_value, dtype=torch.float64).reciprocal().float()
        self.found = False
        for group in optimizer.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                self.found = self.found or not bool(torch.isfinite(p.grad).all())
                if inverse.item() != 1.0:
                    opmath = torch.float32 if p.grad.dtype == torch.bfloat16 else p.grad.dtype
                    p.grad.copy_(p.grad.to(opmath) * inverse.to(opmath))

    def step(self, optimizer):
        if not self.found:
            optimizer.step()

    def update(self):
        if self.found:
            self.scale_value = torch.tensor(self.scale_value * self.backoff_factor, dtype=torch.float32).item()
            self.tracker = 0
        elif self.tracker + 1 == self.growth_interval:
            grown = torch.tensor(self.scale_value * self.growth_factor, dtype=torch.float32).item()
            self.scale_value = grown if grown != float("inf") else self.scale_value
            self.tracker = 0
        else:
            self.tracker += 1


class TorchGradScaler:
    """torch's own torch.amp.GradScaler("cpu") (torch 2.3 and later), read as the tape records it."""

    def __init__(self, init_scale, backoff_factor, growth_interval):
        self.scaler = torch.amp.GradScaler("cpu", init_scale=init_scale, backoff_factor=backoff_factor, growth_interval=growth_interval)
        self.get_growth_factor, self.get_backoff_factor = self.scaler.get_growth_factor, self.scaler.get_backoff_factor
        self.get_growth_interval, self.scale, self.step, self.update = (self.scaler.get_growth_interval, self.scaler.scale,
                                                                        self.scaler.step, self.scaler.update)
        self.optimizer = None

    def state(self):
        state = self.scaler.state_dict()
        return torch.tensor(state["scale"], dtype=torch.float32).item(), state["_growth_tracker"]

    def unscale_(self, optimizer):
        self.scaler.unscale_(optimizer)
        self.optimizer = optimizer

    @property
    def found(self):
        return bool(sum(v.item() for v in self.scaler._per_optimizer_states[id(self.optimizer)]["found_inf_per_device"].values()))

    @found.setter
    def found(self, value):
        for v in self.scaler._per_optimizer_states[id(self.optimizer)]["found_inf_per_device"].values():
            v.fill_(1.0 if value else 0.0)


def canonical_state(model, optimizer, names, number_dtype="I64"):
    tensors = [("param/" + n, p.detach()) for n, p in model.named_parameters()]
    tensors += [("buffer/" + n, b.detach()) for n, b in model.named_buffers()]
    parameters = dict(model.named_parameters())
    for name in names:
        state = optimizer.state.get(parameters[name], {})
        for slot in sorted(state):
            value = state[slot]
            if value is None:
                continue
            if not isinstance(value, torch.Tensor):
                # A slot torch keeps as a Python number (RMSprop's step): I64 is what the C++
                # recorder writes; F64 and F32 are the other encodings the spec allows (6.1).
                dtype = NUMBER_DTYPES[number_dtype] if isinstance(value, int) else torch.float64
                value = torch.tensor(value, dtype=dtype)
            tensors.append(("state/%s/%s" % (name, slot), value.detach()))
    return tensors


def state_digest(tensors):
    h = hashlib.sha256()
    for name, tensor in tensors:
        data = safetensors_writer.tensor_bytes(tensor)
        h.update(name.encode() + b"\0" + DTYPE_NAMES[tensor.dtype].encode() + b"\0")
        h.update(struct.pack("<I", tensor.dim()) + b"".join(struct.pack("<q", d) for d in tensor.shape))
        h.update(struct.pack("<Q", len(data)) + data)
    return h.hexdigest()


def make_scheduler(optimizer, described):
    """torch's scheduler from the spec's description (docs/schedules.md); a composite's
    schedulers are made first, on the same optimizer, as a training loop makes them."""
    arguments = dict(described["arguments"])
    S = torch.optim.lr_scheduler
    if described["kind"] == "SequentialLR":
        children = [make_scheduler(optimizer, child) for child in arguments.pop("schedulers")]
        return S.SequentialLR(optimizer, children, **arguments)
    if described["kind"] == "ChainedScheduler":
        return S.ChainedScheduler([make_scheduler(optimizer, child) for child in arguments.pop("schedulers")])
    return getattr(S, described["kind"])(optimizer, **arguments)


def scheduler_epoch(scheduler):
    # A ChainedScheduler keeps no last_epoch of its own: its schedulers step together.
    if isinstance(scheduler, torch.optim.lr_scheduler.ChainedScheduler):
        return scheduler._schedulers[0].last_epoch
    return scheduler.last_epoch


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--optimizer", default="Adam")
    parser.add_argument("--options", default=None, help="JSON object of optimizer options (default: lr per optimizer)")
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--interval", type=int, default=12)
    parser.add_argument("--update-check", type=float, default=0.25)
    parser.add_argument("--state-check", type=float, default=0.25)
    parser.add_argument("--scheduler", default=None,
                        help='a torch.optim.lr_scheduler to step after every step, {"kind": "StepLR", "arguments": {...}}: '
                             'written as a format 1.6 schedule (spec 3.3); implies --format-minor 6')
    parser.add_argument("--forge-lr", type=int, default=None, metavar="STEP",
                        help="a dishonest trainer: step STEP with three times the scheduler's lr (recorded as used), then "
                             "restore it; the updates replay exact, only the schedule check can tell")
    parser.add_argument("--clip-grad-norm", type=float, default=None, metavar="MAX_NORM",
                        help="clip every step's gradients with torch.nn.utils.clip_grad_norm_(max_norm) and record it as a "
                             "format 1.7 gradient transform (spec 5.1); implies --format-minor 7")
    parser.add_argument("--clip-grad-value", type=float, default=None, metavar="CLIP_VALUE",
                        help="clamp every step's gradients with torch.nn.utils.clip_grad_value_ (after --clip-grad-norm, if "
                             "both); implies --format-minor 7")
    parser.add_argument("--accumulate", type=int, default=None, metavar="M",
                        help="gradient accumulation: every step runs M micro-batches, each loss divided by M before its "
                             "backward, recorded as format 1.7 micro-batches (spec 5.4); implies --format-minor 7")
    parser.add_argument("--forge-clip", type=int, default=None, metavar="STEP",
                        help="a dishonest trainer: step STEP with gradients clipped at half the recorded max_norm")
    parser.add_argument("--grad-scaler", type=float, default=None, metavar="INIT_SCALE",
                        help="scale every loss with a real torch.amp.GradScaler(\"cpu\", init_scale=INIT_SCALE) (torch 2.3 or later), "
                             "unscale before clipping and step through it, recorded as format 1.8 (spec 5.6)")
    parser.add_argument("--loss-mul", type=float, default=None, metavar="N",
                        help="differentiate every loss multiplied by the float N (recorded in loss_scales; implies format 1.7)")
    parser.add_argument("--backoff-factor", type=float, default=0.5)
    parser.add_argument("--growth-interval", type=int, default=2000)
    parser.add_argument("--forge-skip", type=int, default=None, metavar="STEP",
                        help="a dishonest trainer: at STEP record a skipped step (and skip it) though the gradients are finite")
    parser.add_argument("--format-minor", type=int, choices=(2, 3, 5, 6, 7, 8, 9), default=5,
                        help="5: the tape ends with its final state (default); 3: chain-bound draws, no final snapshot "
                             "unless the step count is a multiple of the interval; 2: the seed-chosen draws of format 1.2")
    parser.add_argument("--number-dtype", choices=sorted(NUMBER_DTYPES), default="I64",
                        help="dtype of optimizer slots torch keeps as Python numbers")
    args = parser.parse_args()
    if args.scheduler:
        args.format_minor = max(args.format_minor, 6)
    if args.clip_grad_norm is not None or args.clip_grad_value is not None or args.accumulate or args.loss_mul is not None:
        args.format_minor = 7
    if args.grad_scaler is not None:
        args.format_minor = 8
    # A ReduceLROnPlateau is stepped with each step's loss, which the next transaction records
    # with the scheduler's state (spec 3.3, format 1.9).
    plateau = bool(args.scheduler) and json.loads(args.scheduler)["kind"] == "ReduceLROnPlateau"
    if plateau:
        args.format_minor = 9

    torch.manual_seed(args.seed)
    torch.set_num_threads(1)
    model = torch.jit.script(Net())
    program = io.BytesIO()
    torch.jit.save(model, program)
    program = program.getvalue()

    options = json.loads(args.options) if args.options else {"lr": 0.05 if args.optimizer in ("SGD", "Adagrad", "Rprop", "ASGD") else 0.01}
    if args.optimizer == "SGD" and not args.options:
        options["momentum"] = 0.9
    optimizer = getattr(torch.optim, args.optimizer)(model.parameters(), **options)
    names = [n for n, _ in model.named_parameters()]
    scheduler = None
    if args.scheduler:
        described = json.loads(args.scheduler)
        scheduler = make_scheduler(optimizer, described)
    # A scheduler's own entries (initial_lr) are its state, which the root's schedule describes.
    group = {k: (list(v) if isinstance(v, tuple) else v) for k, v in optimizer.param_groups[0].items() if k not in ("params", "initial_lr")}

    root = {
        "prover": "whitebox-torch",
        "format": {"major": 1, "minor": args.format_minor},
        "producer": {"name": "tests/oracle/record.py", "version": "1", "torch_version": torch.__version__, "device": "cpu",
                     "intra_op_threads": torch.get_num_threads()},
        "model": {
            "parameters": [{"name": n, "shape": list(p.shape), "dtype": DTYPE_NAMES[p.dtype]} for n, p in model.named_parameters()],
            "buffers": [{"name": n, "shape": list(b.shape), "dtype": DTYPE_NAMES[b.dtype]} for n, b in model.named_buffers()],
        },
        "optimizer": {"contract": args.optimizer, "groups": [{"parameters": names, "options": group}]},
        "program": {"kind": "torchscript", "sha256": hashlib.sha256(program).hexdigest(), "embedded": True, "entry": "training_step"},
        "replay_snapshot_interval": args.interval,
        "sampling": {"state_check_probability": args.state_check, "update_check_probability": args.update_check,
                     "seed": args.seed, "generator": "splitmix64"},
        "max_in_flight": 1,
        "overlap": "unchecked",
        "metadata": {"producer": "real torch.optim", "optimizer": args.optimizer},
    }
    if scheduler is not None:
        root["optimizer"]["schedule"] = {
            "options": ["lr"],
            "scheduler": {"kind": described["kind"], "arguments": described["arguments"],
                          "base": {"lr": [group["lr" if plateau else "initial_lr"] for group in optimizer.param_groups]}},
            "epoch": scheduler_epoch(scheduler),
        }
        if plateau:
            root["optimizer"]["schedule"]["scheduler"]["state"] = {"best": None, "num_bad_epochs": 0, "cooldown_counter": 0}
    plateau_metrics = []
    scaler = None
    if args.grad_scaler is not None:
        cpu_scaler = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 3)
        scaler = (TorchGradScaler if cpu_scaler else SpecGradScaler)(args.grad_scaler, args.backoff_factor, args.growth_interval)
        root["grad_scaler"] = {"growth_factor": scaler.get_growth_factor(), "backoff_factor": scaler.get_backoff_factor(),
                               "growth_interval": scaler.get_growth_interval(),
                               "scale": torch.tensor(args.grad_scaler, dtype=torch.float32).item(), "growth_tracker": 0}
    tape = TapeWriter(args.out, args.format_minor)
    anchor = tape.append("root", json.dumps(root).encode())
    tape.append("program", program)
    seed_stream = SplitMix64(args.seed)
    generator = torch.Generator().manual_seed(args.seed)
    centers = torch.randn(3, 6, generator=generator) * 2

    def snapshot(k):
        tape.append("snapshot", blob(canonical_state(model, optimizer, names, args.number_dtype),
                                     {"zkdv.record": "snapshot", "before_transaction": str(k)}))

    first_loss = last_loss = None
    for step in range(args.steps):
        if step % args.interval == 0:
            snapshot(step)
        started = time.monotonic_ns()
        micro = []
        for _ in range(args.accumulate or 1):
            y = torch.randint(0, 3, (16,), generator=generator)
            micro.append((centers[y] + torch.randn(16, 6, generator=generator), y))
        before = [p.detach().clone() for p in model.parameters()]
        losses = []
        if scaler is not None:
            scale, tracker = scaler.state()
            scaler_state = {"scale": scale, "growth_tracker": tracker}
        for x, y in micro:
            loss = model.training_step([x, y])
            losses.append(loss.detach())
            scaled = loss / args.accumulate if args.accumulate else loss
            if args.loss_mul is not None:
                scaled = scaled * args.loss_mul
            (scaler.scale(scaled) if scaler is not None else scaled).backward()
        transforms, total_norms = [], []
        if scaler is not None:
            scaler.unscale_(optimizer)
            transforms.append({"kind": "unscale"})
            skipped = scaler.found
            if step == args.forge_skip:
                skipped = scaler.found = True  # the scaler backs off as after a real skip, so only the replay can tell
        # torch 2.x resolves foreach=None to its foreach kernels on CPU; 1.13 has no such argument.
        foreach = True if int(torch.__version__.split(".")[0]) >= 2 else None
        if args.clip_grad_norm is not None:
            applied = args.clip_grad_norm / 2 if step == args.forge_clip else args.clip_grad_norm
            total = torch.nn.utils.clip_grad_norm_(model.parameters(), applied)
            transforms.append({"kind": "clip_grad_norm", "max_norm": args.clip_grad_norm, "norm_type": 2.0,
                               "error_if_nonfinite": False, "foreach": foreach})
            total_norms.append(("gradients/total_norm/0", total.detach()))
        if args.clip_grad_value is not None:
            torch.nn.utils.clip_grad_value_(model.parameters(), args.clip_grad_value)
            transforms.append({"kind": "clip_grad_value", "clip_value": args.clip_grad_value, "foreach": foreach})
        forged = step == args.forge_lr
        if forged:
            for group in optimizer.param_groups:
                group["lr"] *= 3.0
        if scaler is not None:
            scaler.step(optimizer)
            scaler.update()
        else:
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)  # fresh gradients, as the replay computes them
        deltas = [p.detach() - b for p, b in zip(model.parameters(), before)]
        draws = seed_stream if args.format_minor < 3 else chain_bound_generator(args.seed, anchor)
        update_check, state_check = sampled_checks(draws, args.update_check, args.state_check)
        if args.accumulate:
            tensors = []
            for m, ((x, y), micro_loss) in enumerate(zip(micro, losses)):
                tensors += [("micro/%d/loss" % m, micro_loss), ("micro/%d/batch/0" % m, x), ("micro/%d/batch/1" % m, y)]
        else:
            tensors = [("loss", loss.detach()), ("batch/0", x), ("batch/1", y)]
        tensors.append(("optimizer/lr", torch.tensor([float(optimizer.param_groups[0]["lr"])], dtype=torch.float64)))
        if plateau:
            if plateau_metrics:
                tensors.append(("schedule/metrics", torch.tensor(plateau_metrics, dtype=torch.float64)))
            tensors.append(("schedule/state", torch.tensor([float(scheduler.best), float(scheduler.num_bad_epochs),
                                                            float(scheduler.cooldown_counter)], dtype=torch.float64)))
            plateau_metrics = []
        tensors.append(("update/l2", torch.tensor([d.double().norm().item() for d in deltas], dtype=torch.float64)))
        tensors.append(("update/max_abs", torch.tensor([d.abs().max().double().item() for d in deltas], dtype=torch.float64)))
        tensors += total_norms
        if update_check:
            tensors += [("delta/" + n, d) for n, d in zip(names, deltas)]
        metadata = {"zkdv.record": "transaction", "index": str(step), "wall_time_ns": str(time.monotonic_ns() - started)}
        if scheduler is not None:
            metadata["schedule_epoch"] = str(scheduler_epoch(scheduler))
        if transforms:
            metadata["gradient_transforms"] = json.dumps(transforms)
        if args.accumulate:
            metadata["micro_batches"] = str(args.accumulate)
            metadata["loss_scales"] = json.dumps([{"op": "div", "by": args.accumulate}] * args.accumulate)
        if args.loss_mul is not None:
            assert not args.accumulate, "--loss-mul takes one micro-batch per step"
            metadata["loss_scales"] = json.dumps([{"op": "mul", "by": args.loss_mul}])
        if scaler is not None:
            metadata["grad_scaler"] = json.dumps(dict(scaler_state, skipped=skipped))
        if state_check:
            metadata["state_digest"] = state_digest(canonical_state(model, optimizer, names, args.number_dtype))
        anchor = tape.append("transaction", blob(tensors, metadata))
        if forged:
            for group in optimizer.param_groups:
                group["lr"] /= 3.0
        if plateau:
            plateau_metrics.append(float(losses[-1]))
            scheduler.step(losses[-1])
        elif scheduler is not None:
            scheduler.step()
        first_loss = losses[0].item() if first_loss is None else first_loss
        last_loss = losses[-1].item()
    # From 1.5 on the tape ends with the final state whatever the count (spec 2.4); before, only
    # a count on the interval put a snapshot there.
    if args.steps % args.interval == 0 or args.format_minor >= 5:
        snapshot(args.steps)
    tape.seal()
    print("%s: %d transactions with torch.optim.%s (torch %s), loss %.4f -> %.4f"
          % (args.out, args.steps, args.optimizer, torch.__version__, first_loss, last_loss))


if __name__ == "__main__":
    main()
