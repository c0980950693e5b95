"""Plots of LLP data (matplotlib, imported when called: ``sklearn-llp[plot]``)."""

from ._bag_sizes import plot_bag_sizes
from ._calibration import plot_bag_calibration

__all__ = ["plot_bag_calibration", "plot_bag_sizes"]
