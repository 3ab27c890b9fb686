from optimizer_cases._grid import grid


def cases():
    return grid("SGD", "sgd", {
        "plain": dict(lr=0.1),
        "momentum": dict(lr=0.05, momentum=0.9),
        "dampening": dict(lr=0.05, momentum=0.9, dampening=0.1, weight_decay=0.01),
        "nesterov": dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.001),
        "maximize": dict(lr=0.01, momentum=0.5, maximize=True),
        "foreach": dict(lr=0.05, momentum=0.8, nesterov=True, weight_decay=0.001, maximize=True, foreach=True),
    })
