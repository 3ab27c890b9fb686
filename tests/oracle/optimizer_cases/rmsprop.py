from optimizer_cases._grid import grid


def cases():
    return grid("RMSprop", "rmsprop", {
        "plain": dict(lr=0.01),
        "alpha": dict(lr=0.005, alpha=0.9, eps=1e-6, weight_decay=0.01),
        "momentum": dict(lr=0.005, momentum=0.9),
        "centered": dict(lr=0.005, centered=True, foreach=False),
        "centered-momentum": dict(lr=0.001, momentum=0.5, centered=True, maximize=True),
        "foreach": dict(lr=0.005, momentum=0.5, centered=True, weight_decay=0.01, foreach=True),
    })
