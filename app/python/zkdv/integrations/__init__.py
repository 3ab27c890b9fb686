"""Integrations of zkdv.torch with training frameworks that own the loop (docs/python.md)."""
