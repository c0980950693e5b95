"""Data sets for LLP experiments, bundled so that they load offline."""

from ._adult import load_adult

__all__ = ["load_adult"]
