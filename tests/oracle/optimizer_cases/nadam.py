from optimizer_cases._grid import grid, torch_has_option


def cases():
    variants = {
        "plain": dict(lr=0.01),
        "weight_decay": dict(lr=0.01, weight_decay=0.05),
        "momentum_decay": dict(lr=0.01, momentum_decay=0.02),
        "betas_eps": dict(lr=0.005, betas=(0.8, 0.99), eps=1e-6, foreach=False),
        "all": dict(lr=0.02, betas=(0.85, 0.995), eps=1e-7, weight_decay=0.01, momentum_decay=0.001),
        "foreach": dict(lr=0.01, weight_decay=0.01, foreach=True),
        "foreach_all": dict(lr=0.02, betas=(0.85, 0.995), eps=1e-7, momentum_decay=0.001, foreach=True),
    }
    if torch_has_option("NAdam", "decoupled_weight_decay"):  # torch 2.x
        variants["decoupled"] = dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True)
        variants["decoupled_foreach"] = dict(lr=0.01, weight_decay=0.05, decoupled_weight_decay=True, foreach=True)
    if torch_has_option("NAdam", "maximize"):  # torch 2.x
        variants["maximize"] = dict(lr=0.01, weight_decay=0.01, maximize=True)
        variants["maximize_foreach"] = dict(lr=0.01, weight_decay=0.01, maximize=True, foreach=True)
    return grid("NAdam", "nadam", variants)
