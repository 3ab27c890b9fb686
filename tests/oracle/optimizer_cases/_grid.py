"""Helpers for building option grids: every boolean option on and off at least once."""

import inspect

import torch


def torch_has_option(optimizer, option):
    """True when this torch's torch.optim.<optimizer> takes `option` (options were added
    between releases: a case using one exists only where torch has it)."""
    cls = getattr(torch.optim, optimizer, None)
    return cls is not None and option in inspect.signature(cls.__init__).parameters


def grid(optimizer, prefix, variants, dtypes=("float32", "float64"), steps=25, second_group=None, **extra):
    """One case per (variant, dtype). `variants` maps a variant name to the options of the
    first group; the second group takes `second_group(options)` (default: lr halved when
    there is an lr, else the same options)."""
    cases = []
    for variant, options in variants.items():
        other = second_group(options) if second_group else _default_second(options)
        for dtype in dtypes:
            cases.append(dict(name="%s-%s-%s" % (prefix, variant, dtype), optimizer=optimizer,
                              groups=[options, other], dtype=dtype, steps=steps, **extra))
    return cases


def _default_second(options):
    other = dict(options)
    if "lr" in other:
        other["lr"] = other["lr"] * 0.5
    return other
