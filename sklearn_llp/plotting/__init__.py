"""Plots of LLP data (optional dependency: ``pip install sklearn-llp[plot]``).

matplotlib is imported only when a plotting function is called.
"""

from ._bag_sizes import plot_bag_sizes

__all__ = ["plot_bag_sizes"]
