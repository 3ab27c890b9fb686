"""torch.amp.GradScaler as proof.prepare() returns it (tape format 1.8, section 5.6).

Inside a transaction the scaler's three calls go through the recorder, which records them and
whose arithmetic the replay repeats: `scale(loss)` is torch's own product, which
`proof.backward()` recognises; `unscale_(optimizer)` divides the gradients by the scale in the
C++ core and notes whether one held an inf or NaN; `step(optimizer)` unscales if that was not
done, then steps the prepared optimizer or, after an inf or NaN, records the step as skipped.
`update()` is torch's own, fed the recorder's finding, so the scale moves exactly as it would
without zkdv; the recorder follows the same rule and refuses a scale that departs from it.
"""

from typing import Any, Optional

import torch

from zkdv.torch.transaction import current_transaction


def is_grad_scaler(value: Any) -> bool:
    classes = tuple(
        cls for cls in (getattr(getattr(torch, "amp", None), "GradScaler", None), getattr(torch.cuda.amp, "GradScaler", None)) if cls
    )
    return isinstance(value, classes)


class PreparedGradScaler:
    """The GradScaler API, routed through the proof inside its transactions.

    Outside a transaction every call is the wrapped scaler's own. A disabled scaler (the
    `enabled=False` of a loop that turns mixed precision off, or torch.cuda.amp.GradScaler on a
    machine without CUDA) scales nothing, and the tape declares none.
    """

    def __init__(self, proof, scaler) -> None:
        self.proof = proof
        self.scaler = scaler
        self._scaled = None         # the last tensor scale() returned in the open transaction
        self._scaled_from = None    # and the tensor it scaled
        self._transaction = None    # the transaction those belong to
        self._stepped = False       # a transaction stepped (or skipped) since the last update()
        self._skipped = False       # and its gradients held an inf or NaN

    def __repr__(self) -> str:
        return "Prepared" + repr(self.scaler)

    # ------------------------------------------------------------------ the GradScaler API

    def is_enabled(self) -> bool:
        return self.scaler.is_enabled()

    def get_scale(self) -> float:
        return self.scaler.get_scale()

    def get_growth_factor(self) -> float:
        return self.scaler.get_growth_factor()

    def get_backoff_factor(self) -> float:
        return self.scaler.get_backoff_factor()

    def get_growth_interval(self) -> int:
        return self.scaler.get_growth_interval()

    def state_dict(self) -> dict:
        return self.scaler.state_dict()

    def load_state_dict(self, state_dict) -> None:
        self._refuse_inside("load_state_dict")
        if self.proof._root_written():
            raise RuntimeError(
                "the tape's root declared this GradScaler's state when the first transaction opened; load its state_dict before that "
                "(the auditor follows the scale from there)"
            )
        self.scaler.load_state_dict(state_dict)

    def scale(self, outputs):
        transaction = self._transaction_of_proof()
        if transaction is None or not self.is_enabled():
            return self.scaler.scale(outputs)
        if not isinstance(outputs, torch.Tensor):
            raise RuntimeError("inside a ZKDV transaction scaler.scale() takes the loss tensor proof.backward() will differentiate")
        # The scale this transaction uses must be the one the tape records and the rule gives.
        self.proof._native.check_grad_scale(*self._state())
        scaled = self.scaler.scale(outputs)
        self._scaled, self._scaled_from, self._transaction = scaled, outputs, transaction
        return scaled

    def unscale_(self, optimizer) -> None:
        if self._transaction_of_proof() is None or not self.is_enabled():
            self.scaler.unscale_(getattr(optimizer, "optimizer", optimizer))
            return
        self._require_prepared(optimizer, "unscale_")
        self.proof._native.unscale_gradients()

    def step(self, optimizer, *args, **kwargs):
        if self._transaction_of_proof() is None or not self.is_enabled():
            return self.scaler.step(optimizer, *args, **kwargs)
        self._require_prepared(optimizer, "step")
        if args or kwargs:
            raise RuntimeError("ZKDV records closure-free optimizer steps; call scaler.step(optimizer) without arguments")
        # The recorder unscales when unscale_() did not, and records a skip after an inf or NaN.
        self._skipped = optimizer._step(through_scaler=True)
        self._stepped = True
        return None

    def update(self, new_scale: Optional[float] = None) -> None:
        if not self.is_enabled() or not self._stepped:
            # torch's own: a disabled scaler's no-op, or its assertion that no step came first.
            self.scaler.update(new_scale)
            return
        if new_scale is not None:
            raise RuntimeError(
                "scaler.update(new_scale) sets a scale by hand, which the tape's GradScaler rule cannot check: the auditor follows the "
                "scale from its declared start, so start the scaler at the scale you want instead"
            )
        # torch's update reads each optimizer's found_inf; the recorder's is the one the tape holds.
        scale = self.scaler._scale
        found = torch.full(scale.shape, 1.0 if self._skipped else 0.0, dtype=torch.float32, device=scale.device)
        states = self.scaler._per_optimizer_states
        states.clear()
        states[id(self)]["found_inf_per_device"] = {scale.device: found}
        self.scaler.update()
        self._stepped = False

    # ------------------------------------------------------------------ the proof's side

    def _declaration(self) -> Optional[tuple]:
        """(growth_factor, backoff_factor, growth_interval, scale, growth_tracker), or None when disabled."""

        if not self.is_enabled():
            return None
        return (
            float(self.scaler.get_growth_factor()),
            float(self.scaler.get_backoff_factor()),
            int(self.scaler.get_growth_interval()),
        ) + self._state()

    def _state(self) -> tuple:
        state = self.scaler.state_dict()
        # Before its first scale() the scaler holds the constructor's double, which torch
        # rounds to float32 when it makes the scale tensor.
        scale = torch.tensor(float(state["scale"]), dtype=torch.float32).item()
        return scale, int(state["_growth_tracker"])

    def _differentiated(self, loss: torch.Tensor) -> Optional[torch.Tensor]:
        """The tensor scale() returned scaled, when `loss` is it; None otherwise."""

        if self._scaled is not None and loss is self._scaled and self._transaction is current_transaction():
            return self._scaled_from
        return None

    def _transaction_of_proof(self):
        transaction = current_transaction()
        return transaction if transaction is not None and transaction.proof is self.proof else None

    def _require_prepared(self, optimizer, call: str) -> None:
        if optimizer is not self.proof._optimizer:
            raise RuntimeError("scaler.%s() inside a ZKDV transaction takes the optimizer proof.prepare() returned" % call)

    def _refuse_inside(self, call: str) -> None:
        if self._transaction_of_proof() is not None:
            raise RuntimeError("scaler.%s() inside a ZKDV transaction" % call)
