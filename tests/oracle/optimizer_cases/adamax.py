from optimizer_cases._grid import grid


def cases():
    return grid("Adamax", "adamax", {
        "plain": dict(lr=0.02),
        "weight_decay": dict(lr=0.02, weight_decay=0.05),
        "maximize": dict(lr=0.02, maximize=True),
        "maximize_decay": dict(lr=0.01, maximize=True, weight_decay=0.01),
        "betas_eps": dict(lr=0.01, betas=(0.8, 0.99), eps=1e-3, foreach=False),
        "foreach": dict(lr=0.02, weight_decay=0.01, foreach=True),
    })
