"""Plots of LLP data: bag sizes, and predicted against given proportions
(matplotlib, imported when called: ``pip install sklearn-llp[plot]``)."""

from ._bag_sizes import plot_bag_sizes
from ._calibration import plot_bag_calibration

__all__ = ["plot_bag_calibration", "plot_bag_sizes"]
