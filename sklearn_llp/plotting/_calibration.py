"""Bag-level calibration: predicted against given proportions, bag by bag."""

import numpy as np
import pandas as pd

from ..core import bag_estimates_of, check_bags_and_proba

#: Marker area (points^2) of the largest bag; the others scale with their size.
_MAX_MARKER_AREA = 250.0
#: Smallest marker area, so that bags of one row stay visible.
_MIN_MARKER_AREA = 12.0


def _class_columns(classes, class_index):
    """Columns to plot: one for ``class_index`` (a label), else the default."""
    labels = list(classes)
    if class_index is None:
        return [1] if len(labels) == 2 else list(range(len(labels)))
    matches = [k for k, label in enumerate(labels) if label == class_index]
    if not matches:
        raise ValueError(
            f"class_index={class_index!r} is not one of the classes {labels}; "
            "pass a class label (with classes=None, the labels are the column "
            "indices 0..n_classes-1)."
        )
    return matches[:1]


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

    The bag-level view of a classifier trained from label proportions: for
    bags it did not train on, each bag's *predicted* proportion of a class
    -- the mean predicted probability of the class over the bag's rows --
    is plotted against the bag's *given* proportion, one point per bag,
    with the marker area growing with the bag's size. A well-calibrated
    model puts the points on the diagonal. The title gives the bag-level
    errors over all classes: the soft L1 error (of the mean probabilities)
    and the hard L1 error (of the fractions of rows predicted as each class),
    as :func:`~sklearn_llp.metrics.soft_l1_error` and
    :func:`~sklearn_llp.metrics.hard_l1_error` compute them.

    Requires matplotlib (``pip install sklearn-llp[plot]``).

    Parameters
    ----------
    bags : array-like of shape (n_samples,), sparse matrix or list of arrays
        Bag id of every row of ``y_proba``, or bags that may overlap (a
        sparse ``(n_samples, n_bags)`` membership matrix or a list of arrays
        of row indices), in any form :func:`~sklearn_llp.core.check_bags`
        accepts. The id ``-1`` (rows in no bag) is refused: drop those rows
        first.
    props : array-like, DataFrame, Series or dict
        The bags' given label proportions, in any form
        :func:`~sklearn_llp.core.check_bags` accepts (sample-aligned, a
        positive-class fraction, a per-bag table).
    y_proba : array-like of shape (n_samples, n_classes)
        Predicted class probabilities (``predict_proba``), columns in the
        order of ``classes``; for two classes a 1-D array is read as the
        probability of the second class.
    classes : array-like of shape (n_classes,), default=None
        Labels of the columns of ``y_proba`` (``estimator.classes_``); a
        ``props`` DataFrame is reordered to them by column label.
    class_index : class label, default=None
        The class whose proportions are plotted, given as its label (with
        ``classes=None`` and unnamed ``props`` columns the labels are the
        column indices ``0..n_classes-1``). None plots the second class of
        a binary problem (the positive class) and every class of a
        multi-class one, one colour per class.
    ax : matplotlib Axes, default=None
        Axes to draw on; a new figure is made when None.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every row within its bag: the predicted proportions (and
        the errors in the title) are weighted means.
    show_hard : bool, default=False
        Also plot every bag's hard estimate, the fraction of its rows
        predicted as the plotted class, as hollow markers.
    y_pred : array-like of shape (n_samples,), default=None
        Predicted labels (e.g. ``model.predict(X)``, which applies the
        model's decision threshold) for the hard estimates and the hard L1
        error; None uses the most probable class of ``y_proba``.

    Returns
    -------
    ax : matplotlib Axes
        The Axes with the plot: x the given proportion, y the predicted one,
        both in [0, 1]; the title gives the number of bags and the mean soft
        and hard L1 errors.

    Raises
    ------
    ImportError
        If matplotlib is not installed.
    ValueError
        If the inputs are malformed (the messages name the argument), or
        ``class_index`` is not a class label.

    See Also
    --------
    sklearn_llp.metrics.bag_errors : The four bag errors as numbers.
    plot_bag_sizes : Histogram of the bag sizes.

    Notes
    -----
    Points far from the diagonal are bags whose class mix the model gets
    wrong; a cloud flatter than the diagonal (predicted proportions pulled
    towards the overall rate) is a model that does not separate the bags
    enough. Training bags fit well by construction, so judge a model on
    held-out bags: new bags of new rows, or the bags of a
    :class:`~sklearn_llp.model_selection.BagKFold` test fold.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from sklearn_llp.plotting import plot_bag_calibration
    >>> bags = [0, 0, 1, 1, 1, 1]
    >>> props = [0.5, 0.5, 0.25, 0.25, 0.25, 0.25]  # positive-class fractions
    >>> y_proba = [0.9, 0.3, 0.2, 0.6, 0.1, 0.1]  # P(positive class)
    >>> ax = plot_bag_calibration(bags, props, y_proba)
    >>> points = ax.collections[0].get_offsets()  # (given, predicted) per bag
    >>> points.round(3).tolist()
    [[0.5, 0.6], [0.25, 0.25]]
    >>> ax.get_title()
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
    n_samples = bags.n_samples
    columns = _class_columns(bags.classes, class_index)

    pred = None
    if y_pred is not None:
        pred = pd.Index(bags.classes).get_indexer(np.asarray(y_pred))
        if len(pred) != n_samples or np.any(pred < 0):
            raise ValueError(
                f"y_pred must hold one label of {bags.classes.tolist()} per row "
                "of y_proba."
            )
    soft, hard = bag_estimates_of(bags, y_proba, pred)
    soft_l1 = float(np.abs(bags.props - soft).sum(axis=1).mean())
    hard_l1 = float(np.abs(bags.props - hard).sum(axis=1).mean())
    sizes = bags.sizes
    area = np.maximum(_MAX_MARKER_AREA * sizes / sizes.max(), _MIN_MARKER_AREA)

    if ax is None:
        _, ax = plt.subplots()
    one_class = len(columns) == 1
    if len(columns) <= 10:
        colours = plt.get_cmap("tab10")(np.arange(len(columns)))
    else:
        colours = plt.get_cmap("viridis")(np.linspace(0, 1, len(columns)))
    ax.plot([0, 1], [0, 1], color="0.5", linestyle="--", linewidth=1, zorder=0)
    for k, column in enumerate(columns):
        colour = "tab:blue" if one_class else colours[k]
        label = "mean probability" if one_class else str(bags.classes[column])
        ax.scatter(
            bags.props[:, column],
            soft[:, column],
            s=area,
            color=colour,
            alpha=0.6,
            edgecolors="white" if one_class else "none",
            linewidths=0.5,
            label=label,
        )
    if show_hard:
        for k, column in enumerate(columns):
            colour = "tab:orange" if one_class else colours[k]
            ax.scatter(
                bags.props[:, column],
                hard[:, column],
                s=area,
                facecolors="none",
                edgecolors=colour,
                linewidths=1.0,
                label="fraction predicted" if one_class else None,
            )
    if one_class:
        what = f"class {bags.classes[columns[0]]!s}"
        ax.set_xlabel(f"Given proportion of {what} in the bag")
        ax.set_ylabel(f"Predicted proportion of {what}")
    else:
        ax.set_xlabel("Given proportion of the class in the bag")
        ax.set_ylabel("Predicted proportion (mean probability)")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    if show_hard or not one_class:
        ax.legend(
            title=None if one_class else "class",
            fontsize="small",
            loc="upper left",
            markerscale=0.5,
        )
    ax.text(
        0.98,
        0.02,
        f"marker area ~ bag size ({sizes.min()} to {sizes.max()} rows)",
        transform=ax.transAxes,
        ha="right",
        va="bottom",
        fontsize="small",
        color="0.3",
    )
    n_bags = bags.n_bags
    ax.set_title(
        f"{n_bags} bag{'s' if n_bags != 1 else ''}: soft L1 {soft_l1:.3f}, "
        f"hard L1 {hard_l1:.3f}"
    )
    return ax
