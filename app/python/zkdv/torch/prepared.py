"""The torch.optim optimizer as proof.prepare() returns it: the Optimizer API, with step()
running the C++ functional contract on the optimizer's own tensors."""

from typing import Optional

import torch

from zkdv import _native
from zkdv.torch.optimizers import ContractAdapter, OptimizerContract, slot_tensor
from zkdv.torch.options import SCHEDULER_ENTRIES, group_options_json


class PreparedOptimizer(torch.optim.Optimizer):
    """Keeps the Optimizer API while routing steps through ZKDV.

    `param_groups` are the wrapped optimizer's own; after each step `state` holds the tensors
    the recorder advanced (the same tensors, not copies), in torch.optim's layout.
    """

    # Optimizer.__init__ is not called: the wrapped optimizer keeps the groups and the state,
    # and this object only forwards to them, so there is one copy of each.
    def __init__(self, proof, optimizer: torch.optim.Optimizer, contract: Optional[OptimizerContract] = None) -> None:
        if not proof._resumes and any(_started(state) for state in optimizer.state.values()):
            raise RuntimeError(
                "ZKDV starts a new tape from fresh optimizer state, and this optimizer has stepped or loaded a checkpoint: prepare "
                "it before its first step, or, to continue the tape its checkpoint was saved with, name that tape: "
                "ZKDV(path, config, resume_from=previous_tape)"
            )
        self.proof = proof
        self.optimizer = optimizer
        # A scheduler made before proof.prepare() left its entries in the groups already.
        skip = SCHEDULER_ENTRIES if proof._scheduler is not None or _has_scheduler(optimizer) else frozenset()
        groups = [(list(group["params"]), group_options_json(group, skip)) for group in optimizer.param_groups]
        if contract is None:
            self.native = _native.ContractOptimizer(type(optimizer).__name__, groups)
        else:
            contract.validate(optimizer)
            self.native = _native.ContractOptimizer.custom(
                ContractAdapter(contract),
                contract.contract_name(),
                group_options_json(optimizer.defaults),
                set(contract.number_slots),
                bool(contract.initializes_eagerly),
                groups,
            )
        self._number_slots = frozenset(self.native.number_slots())
        if proof._resumes:
            # The checkpoint's state, which the recorder checks against the tape it continues.
            self.native.load_state([
                (parameter, {name: slot_tensor(name, value) for name, value in optimizer.state[parameter].items()})
                for group in optimizer.param_groups for parameter in group["params"] if optimizer.state.get(parameter)
            ])
        self._sent_options = [_options_key(group) for group in optimizer.param_groups]

    @property
    def param_groups(self):
        return self.optimizer.param_groups

    @property
    def state(self):
        return self.optimizer.state

    @property
    def defaults(self):
        return self.optimizer.defaults

    def __repr__(self) -> str:
        return "Prepared" + repr(self.optimizer)

    def step(self, closure=None):
        if closure is not None:
            raise RuntimeError("ZKDV records closure-free optimizer steps; call step() without a closure")
        self._step()
        return None

    def _step(self, through_scaler: bool = False) -> bool:
        """Steps with the groups' current options (or, through a GradScaler that found an inf or
        NaN, records the step skipped); whether it skipped."""

        # The options go to the recorder (which refuses a change since sealing) when they are
        # not those it last saw: encoding them costs more than comparing.
        keys = [_options_key(group) for group in self.optimizer.param_groups]
        if keys != self._sent_options or any(key is None for key in keys):
            skip = self.proof._scheduler_entries()
            self.native.set_options([group_options_json(group, skip) for group in self.optimizer.param_groups])
            self._sent_options = keys
        return self.proof._step(self, through_scaler)

    def zero_grad(self, set_to_none: bool = True) -> None:
        # None, not zeros, by default: the replay computes each step's gradients afresh, and
        # accumulating into a zero tensor can turn a -0.0 gradient into +0.0.
        self.optimizer.zero_grad(set_to_none=set_to_none)

    def state_dict(self):
        return self.optimizer.state_dict()

    def load_state_dict(self, state_dict) -> None:
        raise RuntimeError(
            "a prepared optimizer's state is the tape's: load the checkpoint's state_dict into the optimizer before "
            "proof.prepare(), and give the proof the tape that checkpoint was saved with (ZKDV(path, config, resume_from=previous_tape))"
        )

    def add_param_group(self, param_group) -> None:
        raise RuntimeError("a prepared optimizer's parameter groups are sealed; create a new proof")

    def _adopt(self, parameters, states) -> None:
        """Shows the recorder's state as the optimizer's own, slot by slot."""

        for parameter, slots in zip(parameters, states):
            self.optimizer.state[parameter] = {
                name: (value.item() if name in self._number_slots else value) for name, value in slots.items()
            }


def _has_scheduler(optimizer) -> bool:
    return any("initial_lr" in group for group in optimizer.param_groups)


def _started(state) -> bool:
    step = state.get("step", 0)
    return bool(step.item() if isinstance(step, torch.Tensor) else step)


def _options_key(group):
    """A group's options as a value that compares equal exactly when their JSON would, or
    None for a tensor-valued option (sent every time; the contract refuses it)."""

    key = []
    for name, value in group.items():
        if name == "params":
            continue
        if isinstance(value, torch.Tensor):
            return None
        key.append((name, _frozen(value)))
    return tuple(key)


def _frozen(value):
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(_frozen(element) for element in value))
    return (type(value), value)
