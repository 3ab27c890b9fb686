"""A small Llama from transformers, trained by an ordinary loop recorded with zkdv.torch: dict
batches, the model's own loss, AdamW, a warm-up cosine schedule (docs/python.md, "Hugging Face
models"). PyPI lane (torch 2.x, transformers). usage: train_transformers.py OUT.zkdv
"""
import sys

import torch
import transformers
import zkdv
import zkdv.torch

torch.manual_seed(0)
config = transformers.LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                                  num_key_value_heads=2, max_position_embeddings=64, bos_token_id=0, eos_token_id=1, pad_token_id=2)
model = transformers.LlamaForCausalLM(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
tokens = [torch.randint(3, 128, (8, 32)) for _ in range(24)]
data = [{"input_ids": t, "attention_mask": torch.ones_like(t), "labels": t} for t in tokens]

policy = zkdv.SamplingPolicy(state_check_probability=0.2, update_check_probability=0.2)
with zkdv.torch.ZKDV(sys.argv[1], zkdv.ZKDVConfig(sampling_policy=policy, program="exported-graph")) as proof:
    model, optimizer = proof.prepare(model, optimizer)  # no loss module: the model computes its loss
    scheduler = proof.prepare(transformers.get_cosine_schedule_with_warmup(optimizer, 4, len(data)))
    for batch in data:
        with proof.transaction(batch=batch):
            optimizer.zero_grad()
            loss = proof.forward(model, **batch, use_cache=False).loss
            proof.backward(loss)
            proof.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
        scheduler.step()
print("%s: %d steps, final loss %.4f" % (sys.argv[1], len(data), loss.item()))
