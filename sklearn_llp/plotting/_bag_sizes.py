"""Histogram of bag sizes."""

import numpy as np

from ..bags import id_bags


def plot_bag_sizes(bags, ax=None, **hist_kwargs):
    """Plot the histogram of the bag sizes (requires matplotlib).

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every row; rows of id ``-1`` are in no bag.
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure when None.
    **hist_kwargs : dict
        Passed to :meth:`matplotlib.axes.Axes.hist` (default: a bar per size).

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_llp.plotting import plot_bag_sizes
    >>> plot_bag_sizes([0, 0, 0, 1, 1, 2, 2, -1]).get_title()
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
    sizes = id_bags(bags).sizes
    if len(sizes) == 0:
        raise ValueError("bags holds no bag (every entry is -1 or it is empty).")
    if ax is None:
        _, ax = plt.subplots()
    low, high = int(sizes.min()), int(sizes.max())
    few = high - low < 50  # one bar per integer size
    hist_kwargs.setdefault("bins", np.arange(low - 0.5, high + 1.5) if few else "auto")
    hist_kwargs.setdefault("edgecolor", "white")
    ax.hist(sizes, **hist_kwargs)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set(xlabel="Bag size (samples)", ylabel="Number of bags")
    median = np.median(sizes)
    ax.set_title(f"{len(sizes)} bags; size min {low}, median {median:g}, max {high}")
    return ax
