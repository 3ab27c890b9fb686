"""Custom functional optimizer contracts (the seed's OptimizerContract), registered for one
proof with proof.register_functional_optimizer(optimizer_type, contract)."""

import abc
import json
from typing import Any, Dict, List, Optional

import torch


class OptimizerContract(abc.ABC):
    """Describe one optimizer's tensor state and functional group update.

    The recorder runs `update` for every step instead of the optimizer's own step(), so the
    tape holds what it did. `name` is the contract's name in the tape (default: this class's
    name); an auditor that has no contract of that name replays the tape as unverifiable,
    naming it. Slots listed in `number_slots` are Python numbers in `initialize`, `update`
    and optimizer.state (as torch keeps some `step` counters); the tape holds them as 0-d
    tensors.
    """

    name: Optional[str] = None
    number_slots: frozenset = frozenset()
    initializes_eagerly: bool = False

    @abc.abstractmethod
    def initialize(self, parameter: torch.Tensor, group: Dict[str, Any]) -> dict:
        """Create the state Torch would lazily initialize for one parameter."""

    @abc.abstractmethod
    def update(
        self,
        parameters: List[torch.Tensor],
        gradients: List[torch.Tensor],
        states: List[Dict[str, Any]],
        group: Dict[str, Any],
    ) -> None:
        """Apply one functional parameter-group update in place."""

    def validate(self, optimizer: torch.optim.Optimizer) -> None:
        """Reject modes whose semantics cannot be represented by the bridge."""

        for group in optimizer.param_groups:
            if group.get("differentiable", False):
                raise ValueError(
                    "ZKDV does not support differentiable optimizer steps; register a custom functional optimizer contract"
                )
            tensor_options = tuple(name for name, value in group.items() if name != "params" and isinstance(value, torch.Tensor))
            if tensor_options:
                raise ValueError(
                    f"ZKDV requires static optimizer options, but {tensor_options} are tensors; register a contract that "
                    "includes dynamic options in optimizer state"
                )

    def contract_name(self) -> str:
        return self.name or type(self).__name__


class ContractAdapter:
    """What the C++ recorder calls: options arrive as JSON, every slot leaves as a tensor."""

    def __init__(self, contract: OptimizerContract) -> None:
        self.contract = contract
        self.number_slots = frozenset(contract.number_slots)

    def initialize(self, parameter: torch.Tensor, group_json: str) -> Dict[str, torch.Tensor]:
        with torch.no_grad():
            slots = self.contract.initialize(parameter, json.loads(group_json))
        return self._tensors(slots)

    def update(self, parameters, gradients, states, group_json: str) -> List[Dict[str, torch.Tensor]]:
        states = [self._numbers(state) for state in states]
        with torch.no_grad():
            self.contract.update(list(parameters), list(gradients), states, json.loads(group_json))
        return [self._tensors(state) for state in states]

    def _numbers(self, state):
        return {name: (value.item() if name in self.number_slots else value) for name, value in state.items()}

    def _tensors(self, slots):
        if not isinstance(slots, dict):
            raise TypeError("initialize() and update() keep each parameter's state as a dict of slot name to tensor or number")
        return {name: slot_tensor(name, value) for name, value in slots.items()}


def slot_tensor(name: str, value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, bool):
        return torch.tensor(value)
    if isinstance(value, int):
        return torch.tensor(value, dtype=torch.int64)
    if isinstance(value, float):
        return torch.tensor(value, dtype=torch.float64)
    raise TypeError("state slot %r is a %s; a slot is a tensor or a number" % (name, type(value).__name__))
