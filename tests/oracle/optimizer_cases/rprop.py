from optimizer_cases._grid import grid


def cases():
    return grid("Rprop", "rprop", {
        "plain": dict(lr=0.01),
        "etas": dict(lr=0.02, etas=(0.4, 1.3), foreach=False),
        "step-sizes": dict(lr=0.05, step_sizes=(1e-3, 0.08)),
        "maximize": dict(lr=0.01, maximize=True),
        "foreach": dict(lr=0.02, etas=(0.4, 1.3), maximize=True, foreach=True),
    })
