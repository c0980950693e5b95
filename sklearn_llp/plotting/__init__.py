"""Plots of LLP data (optional dependency: ``pip install sklearn-llp[plot]``).

:func:`plot_bag_sizes` draws the histogram of the bag sizes;
:func:`plot_bag_calibration` plots every held-out bag's predicted class
proportion against its given one. matplotlib is imported only when a
plotting function is called.
"""

from ._bag_sizes import plot_bag_sizes
from ._calibration import plot_bag_calibration

__all__ = ["plot_bag_calibration", "plot_bag_sizes"]
