"""transformers.Trainer recorded by zkdv.integrations.transformers.ZKDVTrainer (docs/python.md,
"Hugging Face Trainer"): a tiny Llama trained 24 optimizer steps by the Trainer's own loop
(its AdamW in two groups, warm-up cosine schedule, gradient accumulation with the token
count it normalises the loss by, clipping) ends bit for bit where the same Trainer without
zkdv ends, and its tape replays exact. PyPI lane: transformers and accelerate are pinned there."""

import pytest
import torch

import zkdv
from conftest import assert_replays_exact

HAS_EXPORT = hasattr(torch, "export") and int(torch.__version__.split(".")[0]) >= 2
if not HAS_EXPORT:
    pytest.skip("the Debian lane has no torch.export (and no transformers)", allow_module_level=True)
import transformers  # noqa: E402  pinned for the PyPI lane: missing there, the test fails rather than skips
from zkdv.integrations.transformers import ZKDVTrainer  # noqa: E402

STEPS, ACCUMULATE, BATCH = 24, 2, 4


def tiny_llama():
    torch.manual_seed(23)
    config = transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      num_key_value_heads=2, max_position_embeddings=32, bos_token_id=0, eos_token_id=1, pad_token_id=2,
                                      use_cache=False)
    return transformers.LlamaForCausalLM(config)


def dataset():
    generator = torch.Generator().manual_seed(9)
    rows = []
    for i in range(64):
        ids = torch.randint(3, 64, (12,), generator=generator)
        mask = torch.ones(12, dtype=torch.long)
        # Every row padded, by 1 to 4 tokens: the token count differs between update steps, and
        # transformers' SDPA mask never takes its no-padding shortcut (docs/python.md, "Hugging
        # Face models": the sealed step always applies the mask).
        mask[-(1 + i % 4):] = 0
        rows.append({"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)})
    return rows


def arguments(folder):
    return transformers.TrainingArguments(
        output_dir=str(folder), per_device_train_batch_size=BATCH, gradient_accumulation_steps=ACCUMULATE, max_steps=STEPS,
        learning_rate=3e-3, weight_decay=0.01, warmup_steps=2, lr_scheduler_type="cosine", max_grad_norm=1.0, logging_steps=1000,
        save_strategy="no", report_to=[], use_cpu=True, seed=5, disable_tqdm=True, dataloader_num_workers=0, optim="adamw_torch",
    )


def test_a_trainer_run_is_recorded_bit_for_bit_and_replays_exact(tmp_path):
    tape = tmp_path / "trainer.zkdv"
    recorded = tiny_llama()
    config = zkdv.ZKDVConfig(sampling_policy=zkdv.SamplingPolicy(state_check_probability=0.3, update_check_probability=0.3, seed=2))
    trainer = ZKDVTrainer(model=recorded, args=arguments(tmp_path / "recorded"), train_dataset=dataset(), zkdv_tape=tape,
                          zkdv_config=config, zkdv_options={"replay_snapshot_interval": 6})
    trainer.train()
    with pytest.raises(RuntimeError, match="one train"):
        trainer.train()

    plain = tiny_llama()
    transformers.Trainer(model=plain, args=arguments(tmp_path / "plain"), train_dataset=dataset()).train()
    for (name, a), (_, b) in zip(recorded.state_dict().items(), plain.state_dict().items()):
        assert torch.equal(a, b), name
    assert_replays_exact(tmp_path, tape, STEPS)


def test_a_fused_optimizer_is_refused_naming_the_unfused_one(tmp_path):
    args = arguments(tmp_path / "fused")
    args.optim = "adamw_torch_fused"  # the Trainer's default where torch has it
    with pytest.raises(RuntimeError, match=r'optim="adamw_torch"'):
        ZKDVTrainer(model=tiny_llama(), args=args, train_dataset=dataset(), zkdv_tape=tmp_path / "fused.zkdv")


def test_mixed_precision_is_refused_saying_why(tmp_path):
    args = arguments(tmp_path / "bf16")
    args.bf16 = True
    with pytest.raises(RuntimeError, match="ZKDVTrainer records float32 training"):
        ZKDVTrainer(model=tiny_llama(), args=args, train_dataset=dataset(), zkdv_tape=tmp_path / "bf16.zkdv")
    assert not (tmp_path / "bf16.zkdv").exists()
