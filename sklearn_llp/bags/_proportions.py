"""Per-bag label proportion tables and their sample-aligned expansion."""

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..core import attach_table, bag_means, check_bags


def id_bags(bags, n_samples=None):
    """Disjoint bags, ``-1`` for a row in no bag, read by ``check_bags``."""
    given = dict(min_bags=0, allow_unbagged=True, disjoint=True)
    return check_bags(bags, n_samples=n_samples, **given)


def label_proportions(bags, y, classes=None, sample_weight=None):
    """Class proportions of every bag, as a per-bag table.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every row, ``-1`` for a row in no bag.
    y : array-like of shape (n_samples,)
    classes : array-like of shape (n_classes,), default=None
        The columns, in order; default the sorted labels of ``y``.
    sample_weight : array-like of shape (n_samples,), default=None

    Returns
    -------
    table : DataFrame of shape (n_bags, n_classes)
        Indexed by sorted bag id: a per-bag ``props``.

    Examples
    --------
    >>> from sklearn_llp.bags import label_proportions
    >>> bags = [0, 0, 0, 0, 1, 1, -1]
    >>> y = ["cat", "dog", "dog", "dog", "cat", "cat", "dog"]
    >>> label_proportions(bags, y)  # doctest: +NORMALIZE_WHITESPACE
    class   cat   dog
    bag
    0      0.25  0.75
    1      1.00  0.00
    """
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per row; got {y.shape}.")
    validated = id_bags(bags)
    if validated.n_samples != len(y):
        raise ValueError(
            f"bags has {validated.n_samples} entries but y has {len(y)} labels; "
            "give one bag id per row."
        )
    if pd.isna(y).any():
        raise ValueError("y contains missing labels (None/NaN).")
    weighted = validated.with_weights(sample_weight)
    if validated.n_bags == 0:
        raise ValueError("Every row has bag id -1 (no bag); no proportion to compute.")
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if classes.ndim != 1 or len(classes) == 0:
        raise ValueError("classes must be a non-empty 1-D list of labels.")
    class_index = pd.Index(classes)
    if class_index.has_duplicates:
        raise ValueError(f"classes repeats a label: {classes.tolist()}.")
    unknown = class_index.get_indexer(y[validated.members]) < 0
    if unknown.any():
        shown = pd.unique(y[validated.members][unknown])[:5].tolist()
        raise ValueError(
            f"y holds labels that are not in classes {classes.tolist()}, e.g. {shown}."
        )
    if weighted.n_bags < validated.n_bags:
        raise ValueError("sample_weight gives a bag a total weight of 0.")
    one_hot = np.eye(len(classes))[class_index.get_indexer(y)]
    index = pd.Index(weighted.ids, name="bag", tupleize_cols=False)
    columns = pd.Index(classes, name="class")
    return pd.DataFrame(bag_means(weighted, one_hot), index=index, columns=columns)


def expand_proportions(table, bags):
    """Give every row the proportions of its bag.

    Parameters
    ----------
    table : DataFrame, Series or dict
        Per-bag proportions by bag id (a Series: positive-class fractions).
    bags : array-like of shape (n_samples,)
        Bag id of every row; a row of id ``-1`` gets NaN.

    Returns
    -------
    props : ndarray of shape (n_samples, n_classes)

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_llp.bags import expand_proportions
    >>> table = pd.DataFrame({"no": [0.9, 0.5], "yes": [0.1, 0.5]}, index=[3, 7])
    >>> expand_proportions(table, [7, 3, -1]).tolist()
    [[0.5, 0.5], [0.9, 0.1], [nan, nan]]
    """
    if not isinstance(table, (pd.DataFrame, pd.Series, Mapping)):
        raise TypeError(
            "table must be a per-bag DataFrame (as returned by label_proportions), "
            f"a Series or a dict; got {type(table).__name__}."
        )
    validated = id_bags(bags)
    if validated.n_bags == 0:
        raise ValueError("Every entry of bags is -1 (no bag).")
    validated = attach_table(validated, table, "classification", name="table")
    no_bag = np.full((1, validated.n_classes), np.nan)  # the row of code -1
    return np.vstack([validated.props, no_bag])[validated.codes]
