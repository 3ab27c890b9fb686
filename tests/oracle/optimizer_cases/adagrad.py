from optimizer_cases._grid import grid


def cases():
    # foreach=True takes torch's multi-tensor path, whose learning-rate arithmetic differs
    # (float32 tensor maths on the step count); with sparse gradients it falls back.
    dense = grid("Adagrad", "adagrad", {
        "plain": dict(lr=0.1),
        "decay": dict(lr=0.05, lr_decay=0.01, weight_decay=0.01, eps=1e-6),
        "maximize": dict(lr=0.01, maximize=True, foreach=False),
        "foreach": dict(lr=0.05, lr_decay=0.03, weight_decay=0.01, maximize=True, foreach=True),
    })
    # torch 1.13 fills "sum" from the constructor's initial_accumulator_value and ignores a
    # group's own value, so a non-default value has to reach torch through the constructor
    # ("constructor" keyword arguments; a generator without them runs this case with the default).
    accumulator = grid("Adagrad", "adagrad", {
        "accumulator": dict(lr=0.05),
    }, constructor=dict(initial_accumulator_value=0.1))
    sparse = grid("Adagrad", "adagrad-sparse", {
        "plain": dict(lr=0.1),
        "decay": dict(lr=0.05, lr_decay=0.02, maximize=True),
        "foreach": dict(lr=0.05, lr_decay=0.02, foreach=True),
    }, sparse=True)
    return dense + accumulator + sparse
