from optimizer_cases._grid import grid


def cases():
    return grid("AdamW", "adamw", {
        "plain": dict(lr=0.01),
        "no_decay": dict(lr=0.01, weight_decay=0),
        "amsgrad": dict(lr=0.01, amsgrad=True, weight_decay=0.1),
        "maximize": dict(lr=0.01, maximize=True),
        "amsgrad_maximize": dict(lr=0.02, amsgrad=True, maximize=True, weight_decay=0.05),
        "betas_eps": dict(lr=0.005, betas=(0.8, 0.99), eps=1e-6, foreach=False, capturable=False),
        "foreach": dict(lr=0.01, amsgrad=True, foreach=True),
    })
