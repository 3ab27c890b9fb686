from optimizer_cases._grid import grid


def cases():
    # t0 is small so the averaging branch (mu != 1) runs within the 25 steps.
    return grid("ASGD", "asgd", {
        "plain": dict(lr=0.01, t0=5),
        "lambd": dict(lr=0.05, lambd=1e-3, alpha=0.6, t0=5.0),
        "weight-decay": dict(lr=0.02, t0=3, weight_decay=0.01, foreach=False),
        "maximize": dict(lr=0.01, t0=5, maximize=True),
        "default-t0": dict(lr=0.01),
        # foreach=True: the multi-tensor path uses the group's first eta for every parameter.
        "foreach": dict(lr=0.05, lambd=1e-3, t0=4, weight_decay=0.01, maximize=True, foreach=True),
    })
