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


def group_options_json(group) -> str:
    """The options of one param_groups entry, without its parameters."""

    return json.dumps({name: _value(value) for name, value in group.items() if name != "params"})
