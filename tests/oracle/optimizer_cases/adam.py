from optimizer_cases._grid import grid, torch_has_option


def cases():
    variants = {
        "plain": dict(lr=0.01),
        "weight_decay": dict(lr=0.01, weight_decay=0.05),
        "amsgrad": dict(lr=0.01, amsgrad=True),
        "maximize": dict(lr=0.01, maximize=True),
        "amsgrad_maximize_decay": dict(lr=0.02, amsgrad=True, maximize=True, weight_decay=0.01),
        "betas_eps": dict(lr=0.005, betas=(0.8, 0.99), eps=1e-6, foreach=False, capturable=False, fused=False,
                          differentiable=False),
        "foreach": dict(lr=0.01, amsgrad=True, weight_decay=0.01, foreach=True),
    }
    if torch_has_option("Adam", "decoupled_weight_decay"):  # torch >= 2.6
        variants["decoupled"] = dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True)
        variants["decoupled_foreach"] = dict(lr=0.01, weight_decay=0.05, amsgrad=True, decoupled_weight_decay=True, foreach=True)
    return grid("Adam", "adam", variants)
