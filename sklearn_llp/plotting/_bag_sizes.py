"""Histogram of bag sizes."""

import numpy as np

from ..bags._proportions import _bag_ids, _unbagged_mask
from ..core import check_bags

#: Up to this many distinct sizes, every integer size gets its own bar.
_MAX_INTEGER_BINS = 50


def plot_bag_sizes(bags, ax=None, **hist_kwargs):
    """Plot the histogram of the bag sizes.

    Requires matplotlib (``pip install sklearn-llp[plot]``).

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every sample, as returned by a bag generator (or one
        column of them). Samples with the integer id ``-1`` belong to no bag
        and are not counted.
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure is made when None.
    **hist_kwargs : dict
        Passed to :meth:`matplotlib.axes.Axes.hist` (e.g. ``bins``,
        ``color``, ``log``). By default every integer size gets its own bar
        while the sizes span at most 50 values, else ``bins="auto"``.

    Returns
    -------
    ax : matplotlib Axes
        The Axes with the histogram: x the bag size, y the number of bags;
        the title gives the number of bags and the min / median / max size.

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    ValueError
        If ``bags`` holds no bag.

    See Also
    --------
    sklearn_llp.bags.UniformBagGenerator : Bags of equal size.
    sklearn_llp.bags.KMeansBagGenerator : Bags of varying size.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_llp.plotting import plot_bag_sizes
    >>> ax = plot_bag_sizes([0, 0, 0, 1, 1, 2, 2, -1])
    >>> ax.get_title()
    '3 bags; size min 2, median 2, max 3'
    """
    try:
        import matplotlib.pyplot as plt
        from matplotlib.ticker import MaxNLocator
    except ImportError as exc:
        raise ImportError(
            "plot_bag_sizes needs matplotlib, an optional dependency: "
            "pip install sklearn-llp[plot]"
        ) from exc
    ids = _bag_ids(bags)
    ids = ids[~_unbagged_mask(ids)]
    if len(ids) == 0:
        raise ValueError("bags holds no bag (every entry is -1 or it is empty).")
    sizes = check_bags(ids).sizes
    if ax is None:
        _, ax = plt.subplots()
    low, high = int(sizes.min()), int(sizes.max())
    if "bins" not in hist_kwargs:
        if high - low < _MAX_INTEGER_BINS:
            hist_kwargs["bins"] = np.arange(low - 0.5, high + 1.5)
        else:
            hist_kwargs["bins"] = "auto"
    hist_kwargs.setdefault("edgecolor", "white")
    ax.hist(sizes, **hist_kwargs)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("Bag size (samples)")
    ax.set_ylabel("Number of bags")
    ax.set_title(
        f"{len(sizes)} bags; size min {low}, median {np.median(sizes):g}, max {high}"
    )
    return ax
