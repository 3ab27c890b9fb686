"""One process of a run that the tests of test_resumed_runs.py split across processes:

    resume_child.py KIND MODEL whole TAPE                 every step, one tape
    resume_child.py KIND MODEL first TAPE CHECKPOINT      the first half, then a checkpoint
    resume_child.py KIND MODEL second TAPE CHECKPOINT PREVIOUS [TAMPER]
                                                          the checkpoint loaded, the second
                                                          half, continuing PREVIOUS

KIND is the program kind (torchscript, exported-graph). MODEL is "mlp" (60 steps of the tests'
MLP: AdamW in two groups, a cosine schedule, accumulation and clipping, its loss a prepared
module for torchscript and written as code, the seed's form, for exported-graph) or "llama" (12
steps of a two-layer Llama from transformers on dict batches, its loss the model's, with
transformers' warm-up cosine schedule). TAMPER changes the loaded state before the proof
starts ("parameter", "optimizer") or leaves out resume_from ("no-link"). Prints a digest of the
parameters' final values."""

import hashlib
import sys

import torch

import zkdv
import zkdv.torch
from conftest import batches, fresh_mlp

MICRO = 2


def two_groups(model):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": rest, "weight_decay": 0.0}], lr=0.02)


class MLPRun:
    steps = 60
    tampered_parameter = "out.weight"

    def model(self):
        return fresh_mlp()

    def scheduler(self, optimizer):
        return torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=self.steps)

    def transactions(self):
        data = list(batches(self.steps * MICRO))
        return [data[MICRO * s:MICRO * (s + 1)] for s in range(self.steps)]

    def loss(self, proof, model, loss_fn, kind, micro):
        x, y = micro
        if kind == "torchscript":
            return loss_fn(proof.forward(model, x), y)
        return torch.nn.functional.cross_entropy(proof.forward(model, x), y)


class LlamaRun:
    steps = 12
    tampered_parameter = "lm_head.weight"

    def model(self):
        import transformers

        torch.manual_seed(17)
        config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                          num_key_value_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=1, pad_token_id=2)
        return transformers.LlamaForCausalLM(config)

    def scheduler(self, optimizer):
        import transformers

        return transformers.get_cosine_schedule_with_warmup(optimizer, num_warmup_steps=2, num_training_steps=self.steps)

    def transactions(self):
        generator = torch.Generator().manual_seed(3)
        steps = []
        for _ in range(self.steps):
            micro = []
            for _ in range(MICRO):
                ids = torch.randint(3, 64, (4, 12), generator=generator)
                mask = torch.ones(4, 12, dtype=torch.long)
                mask[0, -3:] = 0  # a padded sequence (docs/python.md: transformers' SDPA then applies the mask)
                micro.append({"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)})
            steps.append(micro)
        return steps

    def loss(self, proof, model, loss_fn, kind, micro):
        return proof.forward(model, **micro, use_cache=False).loss


RUNS = {"mlp": MLPRun(), "llama": LlamaRun()}


def train(kind, run, tape, steps, resume_from=None, checkpoint=None, tamper=None):
    model = run.model()
    optimizer = two_groups(model)
    scheduler = run.scheduler(optimizer)
    if checkpoint is not None:
        saved = torch.load(checkpoint)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        with torch.no_grad():
            if tamper == "parameter":
                model.get_parameter(run.tampered_parameter)[1, 2] += 1e-3
            elif tamper == "optimizer":
                last = optimizer.param_groups[1]["params"][0]
                optimizer.state[last]["exp_avg_sq"].view(-1)[3] += 1e-3
    loss_fn = torch.nn.CrossEntropyLoss()
    options = {} if tamper == "no-link" else {"resume_from": resume_from}
    with zkdv.torch.ZKDV(tape, zkdv.ZKDVConfig(program=kind), replay_snapshot_interval=12, **options) as proof:
        if kind == "torchscript":
            model, loss_fn, optimizer = proof.prepare(model, loss_fn, optimizer)
        else:
            model, optimizer = proof.prepare(model, optimizer)
        proof.prepare(scheduler)
        for micro in steps:
            with proof.transaction(batch=micro):
                optimizer.zero_grad()
                for part in micro:
                    proof.backward(run.loss(proof, model, loss_fn, kind, part) / MICRO)
                proof.clip_grad_norm_(model.parameters(), 1.0)
                optimizer.step()
            scheduler.step()
    return model, optimizer, scheduler


def main():
    torch.set_num_threads(1)
    kind, name, mode, tape = sys.argv[1:5]
    run = RUNS[name]
    steps = run.transactions()
    half = run.steps // 2
    if mode == "whole":
        model, _, _ = train(kind, run, tape, steps)
    elif mode == "first":
        model, optimizer, scheduler = train(kind, run, tape, steps[:half])
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, sys.argv[5])
    else:
        checkpoint, previous = sys.argv[5], sys.argv[6]
        tamper = sys.argv[7] if len(sys.argv) > 7 else None
        model, _, _ = train(kind, run, tape, steps[half:], previous, checkpoint, tamper)
    digest = hashlib.sha256()
    for name, parameter in model.named_parameters():
        digest.update(name.encode() + parameter.detach().numpy().tobytes())
    print(digest.hexdigest())


if __name__ == "__main__":
    main()
