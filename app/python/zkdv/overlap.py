"""How a transaction treats state mutated outside it (spec section 5.3)."""


class OverlapPolicy:
    """A named overlap policy; the recorder knows only UNCHECKED."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return "zkdv.overlap." + self.name.upper()


UNCHECKED = OverlapPolicy("unchecked")
