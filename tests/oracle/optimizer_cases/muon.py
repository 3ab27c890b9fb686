from optimizer_cases._grid import grid

# Muon takes 2-D parameters only.
SHAPES = [(3, 4), (5, 2), (4, 4), (2, 3)]
MEMBERS = [[0, 2], [1, 3]]


def cases():
    # torch.optim.Muon exists from torch 2.9; the script skips these cases on older torch.
    variants = {
        "defaults": dict(lr=0.02),
        "no_nesterov": dict(lr=0.02, nesterov=False),
        "momentum": dict(lr=0.01, momentum=0.9, weight_decay=0.0),
        "original": dict(lr=0.02, adjust_lr_fn="original", weight_decay=0.01),
        "match_rms_adamw": dict(lr=0.02, adjust_lr_fn="match_rms_adamw"),
        "newton_schulz": dict(lr=0.02, ns_steps=3, ns_coefficients=(2.0, -1.5, 0.5), eps=1e-6),
        "spectral_unclamped": dict(lr=0.02, adjust_lr_fn="spectral_unclamped", weight_decay=0.0),
    }
    return grid("Muon", "muon", variants, shapes=SHAPES, members=MEMBERS)
