"""zkdv.torch.ZKDV: the seed's Torch frontend, recording through the C++ core."""

import json
import os
import sys
import warnings
from typing import Any, Dict, Optional

import torch
from torch.utils import _pytree as pytree

from zkdv import _native
from zkdv import overlap as overlap_policy
from zkdv.config import ZKDVConfig
from zkdv.torch import autocast, buffers, export_program, loss_code, program, schedules
from zkdv.torch.grad_scaler import PreparedGradScaler, is_grad_scaler
from zkdv.torch.optimizers import OptimizerContract
from zkdv.torch.options import SCHEDULER_ENTRIES
from zkdv.torch.prepared import PreparedOptimizer
from zkdv.torch.transaction import EagerTransaction, current_transaction

_UNPREPARED_MODEL = "proof.forward() received an unprepared model; pass it through proof.prepare() first"


class ZKDV:
    """Generate a verification tape around ordinary Torch training steps.

    The tape file is created at once (an existing path is refused unless the config says
    overwrite). As a context manager the proof seals the tape when the block ends normally;
    when it ends with an exception the tape is left unsealed, so it never claims a run that
    did not finish.

    `resume_from` names the sealed tape a run resumed from a checkpoint continues: the model,
    optimizer, scheduler and GradScaler then hold the checkpoint's state (their
    `load_state_dict`, before `proof.prepare()`), which must be the state that tape ended in;
    the new tape's root names it, and an auditor reads both as one run (docs/python.md).
    """

    def __init__(
        self,
        path: Any,
        config: Optional[ZKDVConfig] = None,
        *,
        max_in_flight: int = _native.DEFAULT_MAX_IN_FLIGHT,
        replay_snapshot_interval: int = _native.DEFAULT_SNAPSHOT_INTERVAL,
        resume_from: Any = None,
    ) -> None:
        config = config if config is not None else ZKDVConfig()
        if config.program not in ("torchscript", "exported-graph"):
            raise ValueError("ZKDVConfig.program is \"torchscript\" or \"exported-graph\", not %r" % (config.program,))
        self._program_kind = config.program
        policy = config.sampling_policy
        self._native = _native.Recorder(
            os.fspath(path),
            state_check_probability=float(policy.state_check_probability),
            update_check_probability=float(policy.update_check_probability),
            seed=int(policy.seed),
            metadata_json=json.dumps(config.metadata),
            overwrite=bool(config.overwrite),
            max_in_flight=int(max_in_flight),
            replay_snapshot_interval=int(replay_snapshot_interval),
            resume_from=os.fspath(resume_from) if resume_from is not None else "",
            signing_key=os.fspath(config.signing_key) if config.signing_key is not None else "",
            detached_signature=bool(config.detached_signature),
            dataset_commitment=os.fspath(config.dataset_commitment) if config.dataset_commitment is not None else "",
            deterministic=bool(config.deterministic),
        )
        self._dataset_commitment = os.fspath(config.dataset_commitment) if config.dataset_commitment is not None else None
        self._resumes = resume_from is not None
        self._model: Optional[torch.nn.Module] = None
        self._loss: Optional[torch.nn.Module] = None
        self._optimizer: Optional[PreparedOptimizer] = None
        self._program: Optional[torch.jit.ScriptModule] = None
        self._parameters = ()
        self._extra_inputs = 0
        self._seal_error: Optional[str] = None
        self._model_bound = False
        self._contracts: Dict[type, OptimizerContract] = {}
        self._scheduler: Any = None        # the prepared lr scheduler, if any
        self._schedule_checked = False     # the tape's schedule names it, so each step records its epoch
        self._schedule_declared = False    # the root schedules lr (checked or as recorded)
        self._schedule_metrics: Optional[list] = None  # a checked ReduceLROnPlateau's metrics since the last step
        self._grad_scaler: Optional[PreparedGradScaler] = None
        self._loss_code: Optional[_SealedLossCode] = None  # the step, when its loss is the loop's code

    # ------------------------------------------------------------------ lifetime

    def __enter__(self) -> "ZKDV":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is None:
            self.seal()
        else:
            self.close()

    def seal(self) -> None:
        """Waits for every pending record and writes the seal.

        A proof that recorded no transaction is not sealed: it would read as a complete run of
        nothing. It is closed unsealed, and the error says why.
        """

        if self._native.statistics()["transactions"] == 0:
            self._native.close()
            raise RuntimeError(
                "no transaction was recorded: step the optimizer returned by proof.prepare(...) inside proof.transaction(batch=...); "
                "the tape is left unsealed"
            )
        self._native.seal()
        self._native.close()

    def close(self) -> None:
        """Releases the tape without sealing it (it reads as unsealed)."""

        self._native.close()

    @property
    def statistics(self) -> dict:
        return self._native.statistics()

    # ------------------------------------------------------------------ preparing

    def prepare(self, *values: Any) -> Any:
        """Prepare recognized stateful objects and leave all others unchanged."""

        prepared = tuple(self._prepare(value) for value in values)
        return prepared[0] if len(prepared) == 1 else prepared

    def _prepare(self, value: Any) -> Any:
        if isinstance(value, PreparedOptimizer):
            return value
        if _is_scheduler(value):
            self._prepare_scheduler(value)
            return value
        if isinstance(value, PreparedGradScaler):
            return value
        if is_grad_scaler(value):
            return self._prepare_grad_scaler(value)
        if isinstance(value, torch.optim.Optimizer):
            if self._optimizer is not None:
                raise RuntimeError("this proof already prepared an optimizer; a tape records one optimizer")
            self._optimizer = PreparedOptimizer(self, value, self._contracts.get(type(value)))
            return self._optimizer
        if isinstance(value, torch.nn.Module):
            _refuse_compiled(value)
        if isinstance(value, torch.nn.modules.loss._Loss):
            # The loss module the sealed training step ends in (docs/python.md).
            if self._loss_code is not None:
                raise RuntimeError(
                    "this proof sealed its step with the loss written as code (%s); a loss module prepared now would not be "
                    "part of it" % ", ".join(self._loss_code.lines)
                )
            if self._loss is not None and self._loss is not value:
                raise RuntimeError("this proof already prepared a loss module; a tape records one training step")
            self._loss = value
            return value
        if isinstance(value, torch.nn.Module):
            if self._model is not None and self._model is not value:
                raise RuntimeError("this proof already prepared a model; a tape records one model")
            self._model = value
            return value
        return value

    def _prepare_scheduler(self, scheduler: Any) -> None:
        if self._scheduler is not None and self._scheduler is not scheduler:
            raise RuntimeError("this proof already prepared a learning-rate scheduler; a tape records one schedule")
        if self._program is not None:
            raise RuntimeError(
                "prepare the learning-rate scheduler before the first transaction: the tape's root, written then, declares the schedule"
            )
        if self._optimizer is None or not self._steps_prepared_optimizer(scheduler.optimizer):
            raise RuntimeError(
                "proof.prepare(scheduler) takes a scheduler of the optimizer this proof prepared: prepare the optimizer first, "
                "then create the scheduler on it (or on the optimizer you prepared)"
            )
        self._scheduler = scheduler

    def _steps_prepared_optimizer(self, optimizer: Any) -> bool:
        # The prepared optimizer, the one it wraps, or a wrapper around it whose steps reach it
        # (accelerate's AcceleratedOptimizer holds it as .optimizer).
        for _ in range(4):
            if optimizer is self._optimizer or optimizer is self._optimizer.optimizer:
                return True
            optimizer = getattr(optimizer, "optimizer", None)
            if optimizer is None:
                return False
        return False

    def _prepare_grad_scaler(self, scaler: Any) -> PreparedGradScaler:
        if self._grad_scaler is not None:
            if self._grad_scaler.scaler is scaler:
                return self._grad_scaler
            raise RuntimeError("this proof already prepared a GradScaler; a tape records one")
        if self._root_written():
            raise RuntimeError(
                "prepare the GradScaler before the first transaction: the tape's root, written then, declares its rule and its scale"
            )
        self._grad_scaler = PreparedGradScaler(self, scaler)
        return self._grad_scaler

    def _root_written(self) -> bool:
        return self._program is not None

    def _scaling(self) -> Optional[PreparedGradScaler]:
        """The prepared GradScaler when it scales losses (enabled), else None."""

        scaler = self._grad_scaler
        return scaler if scaler is not None and scaler.is_enabled() else None

    def _scheduler_entries(self) -> frozenset:
        """The group entries that are the scheduler's, not the optimizer's (left out of its options)."""

        return SCHEDULER_ENTRIES if self._schedule_declared else frozenset()

    def _declare_schedule(self) -> None:
        # Called once, when the root is about to be written: from then on lr is scheduled or static.
        groups = self._optimizer.param_groups
        if self._scheduler is not None:
            description = schedules.describe(self._scheduler)
            options = schedules.scheduled_options(self._scheduler)
            if description is not None:
                self._native.schedule(options, json.dumps(description), schedules.epoch(self._scheduler))
                self._schedule_checked = True
                if schedules.reads_metric(self._scheduler):
                    self._schedule_metrics = schedules.watch_metrics(self._scheduler)
            else:
                # LambdaLR and other user code.
                self._native.schedule(options, "", 0)
        elif any("initial_lr" in group for group in groups):
            warnings.warn(
                "the prepared optimizer has a learning-rate scheduler that was not prepared: the tape records the learning rates "
                "it sets as recorded, and the auditor cannot check them against a schedule; pass it through proof.prepare(scheduler) "
                "before the first transaction to have them checked",
                stacklevel=4,
            )
            # A OneCycleLR or CyclicLR cycling the momentum left max_momentum in the groups.
            cycled = "betas[0]" if "betas" in groups[0] else "momentum"
            self._native.schedule(["lr"] + ([cycled] if any("max_momentum" in group for group in groups) else []), "", 0)
        else:
            return
        self._schedule_declared = True

    def register_functional_optimizer(self, optimizer_type: type, contract: OptimizerContract) -> None:
        """Register a proof-local custom functional optimizer contract.

        An optimizer of exactly `optimizer_type` prepared by this proof then steps through
        `contract`; the tape names the contract, and an auditor without it replays the tape
        as unverifiable, naming it (docs/python.md).
        """

        if not (isinstance(optimizer_type, type) and issubclass(optimizer_type, torch.optim.Optimizer)):
            raise TypeError("register_functional_optimizer takes a torch.optim.Optimizer subclass, not %r" % (optimizer_type,))
        if not isinstance(contract, OptimizerContract):
            raise TypeError("register_functional_optimizer takes a zkdv.torch.OptimizerContract, not %r" % (contract,))
        name = contract.contract_name()
        if name in _native.builtin_contract_names():
            raise ValueError(
                "a custom contract cannot be named %s, as the built-in contract for torch.optim.%s: the auditor would replay "
                "the tape with the built-in one; give the contract its own name" % (name, name)
            )
        if self._optimizer is not None:
            raise RuntimeError("register the functional optimizer contract before proof.prepare(optimizer)")
        self._contracts[optimizer_type] = contract

    # ------------------------------------------------------------------ transactions

    def transaction(self, *, batch: Any, overlap: Any = None, samples: Any = None) -> EagerTransaction:
        """Begin an eager transaction before the model forward mutates state.

        `batch` is `(inputs, targets, *extra)`, or a list of such micro-batches for gradient
        accumulation: one optimizer step over all of them, each through proof.forward() and
        proof.backward() in order (the loss scaled as the loop writes it, e.g. `loss / 4`).
        With no loss module prepared, the loss is the loop's own code from proof.forward()'s
        output to proof.backward(), and `batch` is any tensor, tuple, list or dict of tensors
        (`model(**batch)`), or a list of such micro-batches (docs/python.md, "Losses written as code").

        With `ZKDVConfig(dataset_commitment=...)`, `samples` names the committed sample behind
        each row of the batch (indices into the commitment; one list per micro-batch), which
        the recorder checks against the commitment and records with their Merkle proofs
        (docs/python.md, "Batches bound to a dataset").
        """

        if overlap is None:
            overlap = overlap_policy.UNCHECKED
        if self._dataset_commitment and samples is None:
            raise ValueError("this proof binds batches to %s: name the committed sample of each batch row, "
                             "proof.transaction(batch=..., samples=indices)" % self._dataset_commitment)
        if not self._dataset_commitment and samples is not None:
            raise ValueError("samples= needs a dataset commitment to index: ZKDVConfig(dataset_commitment=...)")
        return EagerTransaction(self, batch, overlap, samples)

    def _begin_native(self, transaction: EagerTransaction, micro_batches) -> None:
        self._native.begin(micro_batches)
        transaction.begun = True
        if transaction.samples is not None:
            self._native.samples(transaction.samples)

    def _open_transaction(self, transaction: EagerTransaction) -> None:
        if self._loss is None:
            self._open_loss_code_transaction(transaction)
            return
        batch = transaction.batch
        for micro in transaction.micro_batches:
            if not 2 <= len(micro) <= 2 + program.MAX_EXTRA_INPUTS or not all(isinstance(value, torch.Tensor) for value in micro):
                raise RuntimeError(
                    "a ZKDV Torch transaction's batch is (inputs, targets) or (inputs, targets, extra, ...) with up to %d "
                    "extra model inputs, all tensors, or a list of such micro-batches: the sealed step is "
                    "loss(model(inputs, *extra), targets) (docs/python.md)" % program.MAX_EXTRA_INPUTS
                )
            if len(micro) != len(batch):
                raise RuntimeError("every micro-batch of a transaction has the same form: %d tensors, not %d" % (len(batch), len(micro)))
        if self._program is None:
            self._seal_program_once(len(batch) - 2, batch)
        elif len(batch) - 2 != self._extra_inputs:
            raise RuntimeError(
                "this proof sealed a step whose batch holds %d tensors, not %d: every transaction's batch has the same "
                "form" % (2 + self._extra_inputs, len(batch))
            )
        self._begin_native(transaction, [list(micro) for micro in transaction.micro_batches])

    def _open_loss_code_transaction(self, transaction: EagerTransaction) -> None:
        leaves = []
        form = None
        for index, micro in enumerate(transaction.micro_batches):
            flat, spec = pytree.tree_flatten(micro)
            if not flat or not all(isinstance(value, torch.Tensor) for value in flat):
                raise RuntimeError(
                    "with the loss written as code, a ZKDV Torch transaction's batch is a tensor, or a tuple, list or dict of "
                    "tensors (model(**batch)), or a list of such micro-batches: %s holds %s (docs/python.md)" % (
                        "the batch" if len(transaction.micro_batches) == 1 else "micro-batch %d" % index,
                        "no tensor" if not flat else "a %s" % type(next(v for v in flat if not isinstance(v, torch.Tensor))).__name__)
                )
            if form is None:
                form = spec
            elif spec != form:
                raise RuntimeError("every micro-batch of a transaction has the same form: micro-batch %d is not shaped as micro-batch 0" % index)
            leaves.append(flat)
        transaction.leaves = leaves
        transaction.batch_form = form
        if self._program is None:
            # The recorder begins the first transaction once the code has run to proof.backward().
            self._require_loss_code_sealable(loss_code.user_line())
            return
        if self._loss_code is None or form != self._loss_code.batch_form:
            raise RuntimeError(
                "this proof sealed a step whose batch has another form than this transaction's (%s): every transaction's batch "
                "holds the same tensors under the same names" % loss_code.user_line()
            )
        self._begin_native(transaction, leaves)

    def _require_loss_code_sealable(self, where: str) -> None:
        if self._seal_error is not None:
            raise RuntimeError("this proof could not seal its training step (" + self._seal_error + "); create a new proof")
        if self._model is None:
            raise RuntimeError("prepare the model before the first transaction: model = proof.prepare(model)")
        if self._optimizer is None:
            raise RuntimeError("prepare the optimizer before the first transaction: optimizer = proof.prepare(optimizer)")
        if self._program_kind == "exported-graph" and not export_program.available():
            raise RuntimeError(
                "the exported-graph program kind needs torch 2.x with torch.export (this is torch %s; the transaction at %s); "
                "seal the step as TorchScript (ZKDVConfig(program=\"torchscript\")), which traces the loss written as code" % (
                    torch.__version__, where)
            )
        _require_training_mode(self._model)
        _refuse_compiled(self._model)

    def _close_transaction(self, transaction: EagerTransaction, failing: bool) -> None:
        transaction.loss = None
        capture = transaction.capture
        if capture is not None:
            # Left before proof.backward(): the eager forward's moves of the buffers are undone.
            transaction.capture = None
            capture.stop()
            buffers.restore(self._model, transaction.saved_buffers)
        if not transaction.begun:
            return
        try:
            self._native.end()
        except RuntimeError:
            # An exception already leaving the transaction is the one to see; the recorder
            # repeats its own refusal at the next transaction.
            if not failing:
                raise

    def _seal_program_once(self, extra_inputs: int, batch) -> None:
        self._sealing(lambda: self._seal_program(extra_inputs, batch))

    def _sealing(self, seal) -> None:
        # The recorder binds the model and the optimizer for good, so a proof whose first
        # sealing failed half-way cannot try again; it says why at every later transaction.
        if self._seal_error is not None:
            raise RuntimeError("this proof could not seal its training step (" + self._seal_error + "); create a new proof")
        try:
            seal()
        except RuntimeError as error:
            # Before the recorder took the model (eval mode, unscriptable code, a random
            # operation) the user can fix the model and try again; after, not.
            if self._model_bound:
                self._seal_error = str(error)
            raise

    def _seal_program(self, extra_inputs: int, batch) -> None:
        if self._model is None:
            raise RuntimeError("prepare the model before the first transaction: model = proof.prepare(model)")
        if self._loss is None:
            raise RuntimeError(
                "prepare the loss module with the model, e.g. proof.prepare(model, torch.nn.CrossEntropyLoss(), "
                "optimizer): the sealed training step ends in it"
            )
        if self._optimizer is None:
            raise RuntimeError("prepare the optimizer before the first transaction: optimizer = proof.prepare(optimizer)")
        _require_training_mode(self._model, self._loss)
        for module in (self._model, self._loss):
            _refuse_compiled(module)  # model.compile() after prepare compiles in place
        if self._program_kind == "exported-graph":
            self._prepare_exported(export_program.ExportedStep(self._model, self._loss), batch)
            scripted = export_program.EXPORTED
        else:
            scripted = program.seal(self._model, self._loss, extra_inputs)
            self._native.prepare_model(scripted._c)
        self._bind_program(scripted)
        self._extra_inputs = extra_inputs

    def _prepare_exported(self, step: torch.nn.Module, batch) -> None:
        graph, parameters, held = export_program.export_module(step, batch)
        self._native.prepare_exported(graph, [n for n, _ in parameters], [t for _, t in parameters], [n for n, _ in held],
                                      [t for _, t in held])

    def _bind_program(self, sealed: Any) -> None:
        # The recorder now holds the model; with the optimizer it writes the root.
        self._model_bound = True
        self._native.prepare_optimizer(self._optimizer.native)
        self._declare_schedule()
        scaler = self._scaling()
        if scaler is not None:
            self._native.grad_scaler(*scaler._declaration())
        self._program = sealed
        self._parameters = tuple(self._native.parameters())

    def _seal_loss_code(self, transaction: EagerTransaction, loss: Any) -> None:
        """At the first transaction's first proof.backward(): seals the model call and the
        captured code to `loss`, begins the transaction in the recorder, and runs micro-batch 0
        through the sealed step, whose loss the rest of backward() checks the loop's against."""

        capture = transaction.capture
        transaction.capture = None
        capture.stop()
        try:
            scaler = self._scaling()
            unscaled = scaler._differentiated(loss) if scaler is not None else None
            tail = capture.tail(unscaled if unscaled is not None else loss)
        finally:
            buffers.restore(self._model, transaction.saved_buffers)
        expected = [capture.value(tail.loss)] + capture.output_tensors
        self._sealing(lambda: self._seal_loss_code_step(transaction.call, tail, transaction.leaves[0], expected, transaction.autocast))
        self._loss_code = _SealedLossCode(transaction.call, transaction.batch_form, capture, tail.lines())
        self._begin_native(transaction, transaction.leaves)
        with autocast.entered(transaction.autocast):
            transaction.loss = self._run_loss_code_step()[0]

    def _seal_loss_code_step(self, call: loss_code.CallForm, tail: loss_code.Tail, batch: list, expected: list, forward_autocast: tuple) -> None:
        if self._program_kind == "exported-graph":
            self._prepare_exported(loss_code.LossCodeStep(self._model, call, tail), batch)
            self._bind_program(export_program.EXPORTED)
            return
        scripted = program.seal_traced(loss_code.ListedLossCodeStep(self._model, call, tail), batch, expected, lambda: autocast.entered(forward_autocast))
        self._native.prepare_model(scripted._c)
        self._bind_program(scripted)

    def _run_loss_code_step(self) -> list:
        """Runs the open micro-batch through the sealed step: [loss, *the model output's tensors]."""

        if self._program is export_program.EXPORTED:
            return self._native.forward_exported()
        loss = self._native.forward(self._program._c)
        results = self._program.output
        self._program.output = None  # the program holds no tensor between steps
        return [loss] + list(results[1:])

    def forward(self, model: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        """Runs the prepared model; inside a transaction, through the sealed program."""

        if self._model is None or model is not self._model:
            _refuse_compiled(model)  # torch.compile(model) after prepare: say that, not "unprepared"
            raise RuntimeError(_UNPREPARED_MODEL)
        transaction = current_transaction()
        if transaction is None or transaction.proof is not self:
            return model(*args, **kwargs)
        if self._loss is None:
            return self._forward_loss_code(transaction, model, args, kwargs)
        # The next micro-batch's (the recorder refuses a forward past the last one).
        micro = transaction.micro_batches[min(transaction.forwards, len(transaction.micro_batches) - 1)]
        expected = (micro[0],) + micro[2:]
        if kwargs or len(args) != len(expected) or any(a is not b for a, b in zip(args, expected)):
            raise RuntimeError(
                "inside a ZKDV Torch transaction proof.forward(model, inputs, *extra) takes the batch's inputs "
                "(its first tensor) and its extra tensors (after the targets), and nothing else: the sealed step "
                "is loss(model(inputs, *extra), targets)"
                + ("; with micro-batches, those of the next one, in order (micro-batch %d)" % transaction.forwards
                   if len(transaction.micro_batches) > 1 else "")
            )
        if self._program is export_program.EXPORTED:
            loss, output = self._native.forward_exported()[:2]
        else:
            loss = self._native.forward(self._program._c)
            output = self._program.output
            self._program.output = None  # the program holds no tensor between steps
        transaction.loss = loss
        transaction.batch = micro
        transaction.forwards += 1
        return output

    def _forward_loss_code(self, transaction: EagerTransaction, model: torch.nn.Module, args: tuple, kwargs: dict) -> Any:
        micro = min(transaction.forwards, len(transaction.micro_batches) - 1)
        call = loss_code.CallForm(args, kwargs, transaction.leaves[micro])
        if not transaction.begun:
            if transaction.capture is not None:
                raise RuntimeError(
                    "proof.backward() the loss of micro-batch 0 before proof.forward() of the next: in the first transaction "
                    "the code between them is what the step seals"
                )
            # The first transaction runs the model eagerly and watches the loop's code to the loss;
            # proof.backward() seals both and runs the transaction through the sealed step.
            transaction.call = call
            transaction.autocast = autocast.state()
            transaction.saved_buffers = buffers.saved(model)
            output = model(*args, **kwargs)
            capture = loss_code.Capture(model, transaction.leaves[0], output)
            capture.start()
            transaction.capture = capture
            transaction.forwards += 1
            return output
        sealed = self._loss_code
        if not call.same_as(sealed.call):
            raise RuntimeError(
                "proof.forward(model, ...) at %s calls the model otherwise than the sealed step does: it was sealed calling it with "
                "the same batch tensors in the same places and the same other arguments in every transaction" % loss_code.user_line()
            )
        outputs = self._run_loss_code_step()
        transaction.loss = outputs[0]
        transaction.forwards += 1
        return loss_code.rebuild_output(outputs[1:], sealed.output_constants, sealed.output_spec)

    def backward(self, loss: torch.Tensor, gradient: Any = None) -> None:
        """Differentiates the sealed program's loss (the one the tape records)."""

        transaction = current_transaction()
        if transaction is None or transaction.proof is not self:
            torch.autograd.backward(loss, gradient)
            return
        if transaction.capture is not None:
            self._seal_loss_code(transaction, loss)
        recorded = transaction.loss
        if recorded is None:
            raise RuntimeError("proof.backward() before proof.forward(): compute the loss from proof.forward(model, inputs)")
        # A prepared GradScaler's scale(...) of the loss: what it scaled is the loss as the loop wrote it.
        scaler = self._scaling()
        unscaled = scaler._differentiated(loss) if scaler is not None else None
        written = unscaled if unscaled is not None else loss
        scale = None
        differentiated = recorded
        if written is not recorded and not _same_value(written, recorded):
            scale = _loss_scale(written, recorded)
            if scale is None:
                if self._loss_code is not None:
                    raise RuntimeError(
                        "proof.backward() at %s received a loss the sealed program did not compute: the step was sealed at the "
                        "first transaction from the loop's code at %s, and the code between proof.forward() and proof.backward() "
                        "computes the same function in every transaction (a number read from a tensor, or a branch taken "
                        "then, is part of it as it was)" % (loss_code.user_line(), ", ".join(self._loss_code.lines) or "proof.forward()")
                    )
                raise RuntimeError(
                    "proof.backward() received a loss the sealed program did not compute: the tape records "
                    "loss(model(inputs), targets) with the prepared loss module, divided or multiplied by a number "
                    "(loss / accumulation_steps) at most, and multiplied by the scale of a GradScaler prepared with "
                    "proof.prepare(scaler) (scaler.scale(loss)); anything else added to it is not replayed (to seal a loss "
                    "written as code, do not prepare a loss module)"
                )
            op, by, integral = scale
            by = int(by) if integral else by
            differentiated = recorded / by if op == "div" else recorded * by
        if unscaled is not None:
            differentiated = scaler.scaler.scale(differentiated)  # torch's own product, as the loop's
            if not _same_value(loss, differentiated):
                raise RuntimeError("proof.backward(): the GradScaler's scaled loss is not the recorded loss times its scale")
        self._native.backward(lambda: torch.autograd.backward(differentiated, gradient), scale, grad_scaled=unscaled is not None)

    def clip_grad_norm_(
        self, parameters: Any, max_norm: float, norm_type: float = 2.0, error_if_nonfinite: bool = False, foreach: Optional[bool] = None
    ) -> torch.Tensor:
        """torch.nn.utils.clip_grad_norm_, recorded: inside a transaction the tape holds it and the replay re-applies it.

        Call it where the loop called torch's, between proof.backward() and optimizer.step(),
        on every prepared parameter (model.parameters()); it returns the total norm, as torch's
        does. Outside a transaction it is torch's own call.
        """

        transaction = current_transaction()
        if transaction is None or transaction.proof is not self:
            if foreach is None:
                return torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite)
            return torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach=foreach)
        self._require_every_parameter(parameters, "clip_grad_norm_")
        return self._native.clip_grad_norm(float(max_norm), float(norm_type), bool(error_if_nonfinite), _foreach(foreach))

    def clip_grad_value_(self, parameters: Any, clip_value: float, foreach: Optional[bool] = None) -> None:
        """torch.nn.utils.clip_grad_value_, recorded (see clip_grad_norm_)."""

        transaction = current_transaction()
        if transaction is None or transaction.proof is not self:
            if foreach is None:
                torch.nn.utils.clip_grad_value_(parameters, clip_value)
            else:
                torch.nn.utils.clip_grad_value_(parameters, clip_value, foreach=foreach)
            return
        self._require_every_parameter(parameters, "clip_grad_value_")
        self._native.clip_grad_value(float(clip_value), _foreach(foreach))

    def _require_every_parameter(self, parameters: Any, call: str) -> None:
        # The tape records one transform of all the step's gradients, which the replay applies
        # to every parameter it trains; a subset would be clipped there as a whole.
        given = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
        prepared = {_tensor_key(p) for p in self._parameters}
        keys = {_tensor_key(p) for p in given if isinstance(p, torch.Tensor)}
        if len(keys) != len(given) or keys != prepared:
            missing = len(prepared - keys)
            raise RuntimeError(
                "proof.%s() clips the gradients of every prepared parameter together (pass model.parameters()): the tape records one "
                "transform of the whole step's gradients, which the replay applies to all of them, but %s" % (
                    call,
                    ("%d of the %d prepared parameters are missing" % (missing, len(prepared))) if missing else
                    "it received tensors that are not prepared parameters",
                )
            )

    def _step(self, optimizer: PreparedOptimizer, through_scaler: bool = False) -> bool:
        """Steps (or, after a GradScaler's inf or NaN, skips) and records; whether it skipped."""

        if self._optimizer is not optimizer:
            raise RuntimeError("optimizer.step() on an optimizer this proof did not prepare")
        if self._scaling() is not None and not through_scaler and current_transaction() is not None:
            raise RuntimeError(
                "with a prepared GradScaler, step through scaler.step(optimizer): it unscales the gradients and skips the step "
                "when they hold an inf or NaN, which optimizer.step() would not"
            )
        if self._schedule_checked:
            self._native.set_schedule_epoch(schedules.epoch(self._scheduler))
        if self._schedule_metrics is not None:
            self._native.set_schedule_inputs(list(self._schedule_metrics), schedules.plateau_state(self._scheduler))
        try:
            skipped = self._native.step()
            if self._schedule_metrics is not None:
                del self._schedule_metrics[:]  # recorded with this step
            return skipped
        finally:
            # Also when the step failed (a full disk met after the update): optimizer.state
            # then shows the state the model's parameters were stepped with, never an older one.
            optimizer._adopt(self._parameters, self._native.state())


# Measured on torch 2.15 (docs/python.md, "Compiled models"): after ten Adam steps compiled by
# inductor, none of the tests' models equals its eager training, so a compiled run's tape would
# replay diverged.
_COMPILED_REASON = (
    "the auditor replays the eager operators the step seals, and compiled kernels fuse, reorder and round "
    "differently (on torch 2.15, ten Adam steps of a small MLP compiled differ from its eager training in 2 of its 4 "
    "tensors, of a CNN in 7 of 9), so the tape would record a training the replay cannot reproduce"
)


def _refuse_compiled(module: Any) -> None:
    if not isinstance(module, torch.nn.Module):
        return
    # Dynamo is imported by whoever compiled something; a process that did not has nothing compiled.
    eval_frame = sys.modules.get("torch._dynamo.eval_frame")
    optimized = getattr(eval_frame, "OptimizedModule", None) if eval_frame is not None else None
    for name, part in module.named_modules():
        wrapped = optimized is not None and isinstance(part, optimized)
        # nn.Module.compile() compiles in place (torch >= 2.2).
        if wrapped or getattr(part, "_compiled_call_impl", None) is not None:
            if name:
                what, advice = "a module whose part %r is compiled (torch.compile() or .compile())" % name, "prepare it uncompiled"
            elif wrapped:
                what, advice = "a torch.compile()d module", "prepare the module itself (model._orig_mod) and train it uncompiled"
            else:
                what, advice = "a module compiled in place (.compile())", "prepare it uncompiled"
            raise RuntimeError("ZKDV Torch cannot record %s: %s; %s (docs/python.md, \"Compiled models\")" % (what, _COMPILED_REASON, advice))


def _is_scheduler(value: Any) -> bool:
    lr_scheduler = torch.optim.lr_scheduler
    base = getattr(lr_scheduler, "LRScheduler", None) or lr_scheduler._LRScheduler
    return isinstance(value, (base, lr_scheduler.ReduceLROnPlateau))


def _require_training_mode(model: torch.nn.Module, loss: Optional[torch.nn.Module] = None) -> None:
    # The auditor replays the sealed step after module.train(); a module sealed in eval mode
    # (BatchNorm on running statistics, dropout off) would replay differently.
    owners = (model,) if loss is None else (model, loss)
    evaluating = [name or type(module).__name__ for owner in owners for name, module in owner.named_modules() if not module.training]
    if evaluating:
        raise RuntimeError(
            "ZKDV seals the training step in training mode (the auditor replays it after module.train()), but "
            + ", ".join(evaluating[:5]) + (" and others are" if len(evaluating) > 5 else (" is" if len(evaluating) == 1 else " are"))
            + " in eval mode; call model.train() before the first transaction"
        )


def _loss_scale(loss: Any, recorded: torch.Tensor) -> Optional[tuple]:
    """("div" | "mul", number, integral) when `loss` is the recorded loss divided or multiplied
    by a Python number, bit for bit as torch computes it; None otherwise."""

    node = getattr(loss, "grad_fn", None)
    name = type(node).__name__
    if not name.startswith(("DivBackward", "MulBackward")):
        return None
    other = getattr(node, "_saved_other", None)
    # A Python number is wrapped as a 0-dim int64 or float64 tensor that needs no gradient.
    if not isinstance(other, torch.Tensor) or other.dim() != 0 or other.requires_grad or other.dtype not in (torch.int64, torch.float64):
        return None
    integral = other.dtype == torch.int64
    by = int(other.item()) if integral else float(other.item())
    op = "div" if name.startswith("Div") else "mul"
    if op == "div" and by == 0:
        return None
    candidate = recorded.detach() / by if op == "div" else recorded.detach() * by
    return (op, float(by), integral) if _same_value(loss, candidate) else None


def _tensor_key(tensor: torch.Tensor) -> tuple:
    return (tensor.data_ptr(), tuple(tensor.shape), tensor.dtype)


def _foreach(foreach: Optional[bool]) -> Optional[bool]:
    return None if foreach is None else bool(foreach)


def _same_value(loss: torch.Tensor, recorded: torch.Tensor) -> bool:
    return (
        isinstance(loss, torch.Tensor)
        and loss.dtype == recorded.dtype
        and loss.shape == recorded.shape
        and bool(torch.equal(loss.detach(), recorded.detach()))
    )


class _SealedLossCode:
    """What a step sealed with the loss written as code fixes for every later transaction."""

    def __init__(self, call: loss_code.CallForm, batch_form: Any, capture: loss_code.Capture, lines: list) -> None:
        self.call = call
        self.batch_form = batch_form
        self.output_spec = capture.output_spec
        self.output_constants = capture.output_constants
        self.lines = lines
