from optimizer_cases._grid import grid


def cases():
    # SparseAdam takes sparse gradients only: the script feeds coalesced COO gradients.
    return grid("SparseAdam", "sparse_adam", {
        "defaults": dict(),
        "plain": dict(lr=0.01),
        "betas": dict(lr=0.02, betas=(0.8, 0.99)),
        "eps": dict(lr=0.05, eps=1e-4),
        "maximize": dict(lr=0.01, betas=(0.85, 0.995), maximize=True),
    }, sparse=True)
