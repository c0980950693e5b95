"""Bag-level calibration: predicted against given proportions, bag by bag."""

import numpy as np
import pandas as pd

from ..core import bag_estimates_of, check_bags_and_proba


def plot_bag_calibration(
    bags,
    props,
    y_proba,
    *,
    classes=None,
    class_index=None,
    ax=None,
    sample_weight=None,
    show_hard=False,
    y_pred=None,
):
    """Plot every bag's predicted against its given class proportion.

    One point per bag, its area growing with its size (:ref:`bag_calibration`).

    Parameters
    ----------
    bags : array-like, sparse matrix or list of arrays
        The bags of the rows of ``y_proba`` (:ref:`data_model`).
    props : array-like, DataFrame, Series or dict
        Their given proportions.
    y_proba : array-like of shape (n_samples, n_classes)
        Predicted probabilities (1-D: of the second of two classes).
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``y_proba`` (``estimator.classes_``).
    class_index : class label, default=None
        The class to plot; None: the second of two classes, or every class.
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure when None.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every row within its bag.
    show_hard : bool, default=False
        Also plot every bag's fraction of rows predicted as the class, hollow.
    y_pred : array-like of shape (n_samples,), default=None
        Predicted labels for the hard estimates; None: the most probable class.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_llp.plotting import plot_bag_calibration
    >>> bags = [0, 0, 1, 1, 1, 1]
    >>> props = [0.5, 0.5, 0.25, 0.25, 0.25, 0.25]  # positive-class fractions
    >>> y_proba = [0.9, 0.3, 0.2, 0.6, 0.1, 0.1]  # P(positive class)
    >>> plot_bag_calibration(bags, props, y_proba).get_title()
    '2 bags: soft L1 0.100, hard L1 0.000'
    """
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(
            "plot_bag_calibration needs matplotlib, an optional dependency: "
            "pip install sklearn-llp[plot]"
        ) from exc
    bags, y_proba = check_bags_and_proba(
        bags, props, y_proba, classes=classes, sample_weight=sample_weight
    )
    labels = list(bags.classes)
    columns = [1] if len(labels) == 2 else list(range(len(labels)))
    if class_index is not None:
        columns = [k for k, label in enumerate(labels) if label == class_index][:1]
        if not columns:
            raise ValueError(
                f"class_index={class_index!r} is not one of the classes {labels}; "
                "pass a class label (with classes=None, the labels are the column "
                "indices 0..n_classes-1)."
            )
    pred = None
    if y_pred is not None:
        pred = pd.Index(bags.classes).get_indexer(np.asarray(y_pred))
        if len(pred) != bags.n_samples or np.any(pred < 0):
            raise ValueError(
                f"y_pred must hold one label of {bags.classes.tolist()} per row "
                "of y_proba."
            )
    soft, hard = bag_estimates_of(bags, y_proba, pred)
    soft_l1, hard_l1 = (np.abs(bags.props - e).sum(axis=1).mean() for e in (soft, hard))
    sizes = bags.sizes
    area = np.maximum(250.0 * sizes / sizes.max(), 12.0)  # points^2, 250 the largest
    if ax is None:
        _, ax = plt.subplots()
    one_class = len(columns) == 1
    if len(columns) <= 10:
        colours = plt.get_cmap("tab10")(np.arange(len(columns)))
    else:
        colours = plt.get_cmap("viridis")(np.linspace(0, 1, len(columns)))
    ax.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1, zorder=0)
    for estimate, hollow in [(soft, False)] + [(hard, True)] * show_hard:
        for k, column in enumerate(columns):
            if one_class:
                colour = "tab:orange" if hollow else "tab:blue"
                label = "fraction predicted" if hollow else "mean probability"
            else:
                colour = colours[k]
                label = None if hollow else str(bags.classes[column])
            if hollow:
                style = dict(facecolors="none", edgecolors=colour, linewidths=1.0)
            else:
                edges = "white" if one_class else "none"
                style = dict(color=colour, alpha=0.6, edgecolors=edges, linewidths=0.5)
            x, y = bags.props[:, column], estimate[:, column]
            ax.scatter(x, y, s=area, label=label, **style)
    what = f"class {bags.classes[columns[0]]!s}" if one_class else "the class"
    predicted = f"of {what}" if one_class else "(mean probability)"
    ax.set_xlabel(f"Given proportion of {what} in the bag")
    ax.set_ylabel(f"Predicted proportion {predicted}")
    ax.set(xlim=(-0.03, 1.03), ylim=(-0.03, 1.03), aspect="equal")
    ax.grid(alpha=0.3)
    if show_hard or not one_class:
        title = None if one_class else "class"
        ax.legend(title=title, fontsize="small", loc="upper left", markerscale=0.5)
    note = f"marker area ~ bag size ({sizes.min()} to {sizes.max()} rows)"
    text_style = dict(ha="right", va="bottom", fontsize="small", color="0.3")
    ax.text(0.98, 0.02, note, transform=ax.transAxes, **text_style)
    bags_word = f"{bags.n_bags} bag{'s' if bags.n_bags != 1 else ''}"
    ax.set_title(f"{bags_word}: soft L1 {soft_l1:.3f}, hard L1 {hard_l1:.3f}")
    return ax
