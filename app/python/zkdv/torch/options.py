"""A torch.optim parameter group's options as the C++ contracts read them (JSON)."""

import json

import torch


def _value(value):
    if isinstance(value, torch.Tensor):
        # A structured value: the contract refuses it with its own message (tensor options).
        return {"tensor": value.tolist()}
    if isinstance(value, (tuple, list)):
        return [_value(element) for element in value]
    return value


# What torch.optim.lr_scheduler's schedulers keep in the groups beside the optimizer's options
# (their base values): the scheduler's state, which the tape's schedule describes, not options.
SCHEDULER_ENTRIES = frozenset(("initial_lr", "max_lr", "min_lr", "max_momentum", "base_momentum"))


def group_options_json(group, skip=frozenset()) -> str:
    """The options of one param_groups entry, without its parameters and the entries in `skip`."""

    return json.dumps({name: _value(value) for name, value in group.items() if name != "params" and name not in skip})
