from optimizer_cases._grid import grid


def cases():
    # torch.optim.Adafactor exists from torch 2.5; the script skips these cases on older
    # torch. The default shapes cover a 2-D and a 3-D parameter (factored row_var/col_var)
    # and two vectors (full variance).
    variants = {
        "plain": dict(lr=0.01),
        "eps1": dict(lr=0.02, eps=(1e-30, 1e-3)),
        "beta2_decay": dict(lr=0.01, beta2_decay=-0.5, eps=(1e-20, 1e-2)),
        "clipping": dict(lr=0.05, d=2.0),
        "weight_decay": dict(lr=0.01, weight_decay=0.1),
        "maximize": dict(lr=0.01, weight_decay=0.01, maximize=True),
        "foreach_off": dict(lr=0.01, foreach=False),
        "foreach": dict(lr=0.02, weight_decay=0.01, maximize=True, foreach=True),
    }
    return grid("Adafactor", "adafactor", variants)
