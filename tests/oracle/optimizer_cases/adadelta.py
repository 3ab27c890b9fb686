from optimizer_cases._grid import grid


def cases():
    return grid("Adadelta", "adadelta", {
        "plain": dict(),
        "lr": dict(lr=0.5, rho=0.8, eps=1e-5),
        "weight-decay": dict(lr=1.0, weight_decay=0.01, foreach=False),
        "maximize": dict(lr=0.1, rho=0.95, maximize=True),
        "foreach": dict(lr=0.5, weight_decay=0.01, maximize=True, foreach=True),
    })
