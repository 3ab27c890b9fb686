"""transformers.Trainer, recorded: `ZKDVTrainer` is a Trainer whose every optimizer step is a
zkdv.torch transaction (docs/python.md, "Hugging Face Trainer").

    trainer = ZKDVTrainer(model=model, args=args, train_dataset=data, zkdv_tape="run.zkdv")
    trainer.train()          # seals run.zkdv when training ends normally

It changes no setting of the Trainer; it routes the loop's calls through the proof where the
Trainer makes them. The optimizer and scheduler the Trainer creates are prepared once the
Trainer has made them (the optimizer inside accelerate's wrapper); each update step's
micro-batches, which the Trainer fetches together for gradient accumulation, open its
transaction, with the `num_items_in_batch` the Trainer normalises the model's loss by in the
batch (so the tape holds it); the model call goes through `proof.forward`, the backward through
`proof.backward`, clipping at `max_grad_norm` through `proof.clip_grad_norm_`, and the
transaction ends when the optimizer has stepped. The step is sealed as an exported graph (the
loss the model computes is part of it), so torch 2.x is needed.
"""

import dataclasses
from typing import Any, Optional

import torch
import transformers

import zkdv
from zkdv.torch import ZKDV


class ZKDVTrainer(transformers.Trainer):
    """A transformers.Trainer that records its training into a verification tape.

    `zkdv_tape` is the tape's path; `zkdv_config` a zkdv.ZKDVConfig (its program kind is set to
    "exported-graph"); `zkdv_options` further keyword arguments of zkdv.torch.ZKDV
    (replay_snapshot_interval, max_in_flight). One train() per tape.
    """

    def __init__(self, *args: Any, zkdv_tape: Any, zkdv_config: Optional[zkdv.ZKDVConfig] = None, zkdv_options: Optional[dict] = None,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.args.fp16 or self.args.bf16:
            raise RuntimeError(
                "ZKDVTrainer records float32 training: with fp16 or bf16 the Trainer's autocast is applied by accelerate inside the "
                "model's forward, which the sealed step does not capture; record mixed precision from a loop of your own "
                "(docs/python.md, \"Mixed precision\")"
            )
        optim = getattr(self.args.optim, "value", self.args.optim)
        if "fused" in str(optim):
            raise RuntimeError(
                "ZKDVTrainer cannot record the %s optimizer: torch's fused kernels round differently from the update the "
                "auditor's contract replays; pass TrainingArguments(optim=\"adamw_torch\") (the same AdamW, unfused)" % optim
            )
        config = zkdv_config if zkdv_config is not None else zkdv.ZKDVConfig()
        self.proof = ZKDV(zkdv_tape, dataclasses.replace(config, program="exported-graph"), **(zkdv_options or {}))
        self._zkdv_transaction = None
        self._zkdv_trained = False
        self.add_callback(_EndTransactionAtOptimizerStep(self))

    # ------------------------------------------------------------------ preparing

    def create_scheduler(self, num_training_steps: int, optimizer: Any = None) -> Any:
        # The Trainer creates the scheduler once the optimizer will not change (after
        # accelerator.prepare): the moment to prepare the model, the optimizer and then it.
        if self.proof._optimizer is None:
            self.proof.prepare(self.accelerator.unwrap_model(self.model))
            # accelerate wraps the Trainer's optimizer (AcceleratedOptimizer); its steps go to the one inside.
            inner = getattr(self.optimizer, "optimizer", None)
            if isinstance(inner, torch.optim.Optimizer):
                self.optimizer.optimizer = self.proof.prepare(inner)
            else:
                self.optimizer = self.proof.prepare(self.optimizer)
            self.accelerator.backward = self._zkdv_backward
        scheduler = super().create_scheduler(num_training_steps, optimizer)
        if self.proof._scheduler is None:
            self.proof.prepare(self.lr_scheduler)
        return scheduler

    def _zkdv_backward(self, loss: torch.Tensor, **kwargs: Any) -> None:
        self.proof.backward(loss)

    # ------------------------------------------------------------------ the loop

    def get_batch_samples(self, epoch_iterator: Any, num_batches: int, device: Any) -> Any:
        samples, items = super().get_batch_samples(epoch_iterator, num_batches, device)
        # Moved to the device here, so that the tensors the model is called with are the batch's.
        samples = [self._prepare_inputs(sample) for sample in samples]
        loss_kwargs = isinstance(items, torch.Tensor) and self.model_accepts_loss_kwargs
        batch = [dict(sample, num_items_in_batch=items) if loss_kwargs else sample for sample in samples]
        if self._zkdv_transaction is not None:
            raise RuntimeError("ZKDVTrainer: an update step began before the last one's optimizer step")
        self._zkdv_transaction = self.proof.transaction(batch=batch)
        return samples, items

    def compute_loss(self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None) -> Any:
        return super().compute_loss(_ThroughProof(self.proof, model), inputs, return_outputs, num_items_in_batch)

    def _clip_grad_norm(self, model: Any) -> Any:
        return self.proof.clip_grad_norm_(model.parameters(), self.args.max_grad_norm)

    def _get_grad_norm(self, model: Any, grad_norm: Any = None) -> Any:
        if grad_norm is not None:
            return grad_norm
        # The norm the Trainer logs, read without writing the gradients (accelerate's
        # clip_grad_norm_ at max_norm inf multiplies them by one, a change the proof refuses).
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        return torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g.detach()) for g in grads])) if grads else None

    def _end_transaction(self) -> None:
        transaction, self._zkdv_transaction = self._zkdv_transaction, None
        if transaction is not None:
            transaction.close()

    def train(self, *args: Any, **kwargs: Any) -> Any:
        if self._zkdv_trained:
            raise RuntimeError("ZKDVTrainer records one train() per tape; create a new trainer for another run")
        self._zkdv_trained = True
        try:
            result = super().train(*args, **kwargs)
        except BaseException:
            transaction, self._zkdv_transaction = self._zkdv_transaction, None
            if transaction is not None:
                transaction._end(failing=True)
            self.proof.close()  # unsealed: a run that failed never reads as complete
            raise
        if self._zkdv_transaction is not None:
            self._end_transaction()
        self.proof.seal()
        return result


class _ThroughProof:
    """The model as compute_loss calls it: model(**inputs) becomes proof.forward(model, **inputs);
    everything else is the model's own."""

    def __init__(self, proof: ZKDV, model: Any) -> None:
        self._proof = proof
        self._model = model

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._proof.forward(self._model, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)


class _EndTransactionAtOptimizerStep(transformers.TrainerCallback):
    def __init__(self, trainer: ZKDVTrainer) -> None:
        self.trainer = trainer

    def on_optimizer_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.trainer._end_transaction()
