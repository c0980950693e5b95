"""Per-bag label proportion tables and their sample-aligned expansion."""

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ..core import UNBAGGED, attach_table, check_bags
from ..core import bags_form as _bags_form
from ..core._bags import _check_weights


def _unbagged_mask(bags):
    """True where a bag id is the reserved integer ``-1``."""
    if bags.dtype.kind in "iufO":  # objects: Python ints beyond 64 bits
        return np.asarray(bags == UNBAGGED, dtype=bool)
    return np.zeros(bags.shape, dtype=bool)


def _bag_ids(bags, n_samples=None):
    """One bag id per row (any form of ids ``check_bags`` reads), 1-D."""
    form, ids = _bags_form(bags, n_samples)
    if form != "ids":
        shown = {"bags": "a Bags object", "membership": "a membership matrix"}
        raise ValueError(
            "bags must be 1-D with one bag id per row (these tables are of "
            f"disjoint bags); got {shown.get(form, 'a list of row-index arrays')}."
        )
    if ids.ndim != 1:
        raise ValueError(f"bags must be 1-D with one bag id per row; got {ids.shape}.")
    return ids


def label_proportions(bags, y, classes=None, sample_weight=None):
    """Class proportions of every bag, as a per-bag table.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every row (integers or strings). Rows with the integer id
        ``-1`` belong to no bag and are left out of the table.
    y : array-like of shape (n_samples,)
        Class label of every row.
    classes : array-like of shape (n_classes,), default=None
        The table's columns, in this order. Defaults to the sorted distinct
        labels of ``y`` (all rows, including those of bag ``-1``). Every
        label of a bagged row must be in ``classes``; a class absent from a
        bag gets proportion 0.
    sample_weight : array-like of shape (n_samples,), default=None
        Weight of every row (e.g. survey weights): the proportions are then
        the weighted class shares of each bag, as a weighted census table
        publishes them.

    Returns
    -------
    table : DataFrame of shape (n_bags, n_classes)
        Indexed by the sorted distinct bag ids (index name ``"bag"``), one
        column per class (columns name ``"class"``); every row sums to 1.
        It is a per-bag ``props`` table accepted wherever ``props`` is, and
        :func:`expand_proportions` turns it back into one row per sample.

    Raises
    ------
    ValueError
        If ``bags`` and ``y`` differ in length, every row has bag ``-1``,
        ``y`` has missing labels, or a label is not in ``classes``.

    See Also
    --------
    expand_proportions : Sample-aligned proportions from such a table.
    UniformBagGenerator.make_bags : Bags and sample-aligned proportions in
        one call.

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
    ids = _bag_ids(bags, len(y))
    if ids.shape != y.shape:
        raise ValueError(
            f"bags has {len(ids)} entries but y has {len(y)} labels; give one bag "
            "id per row."
        )
    if pd.isna(y).any():
        raise ValueError("y contains missing labels (None/NaN).")
    weights = _check_weights(sample_weight, len(y))
    kept = ~_unbagged_mask(ids)
    if not kept.any():
        raise ValueError("Every row has bag id -1 (no bag); no proportion to compute.")
    validated = check_bags(ids[kept])
    classes = np.unique(y) if classes is None else np.asarray(classes)
    if classes.ndim != 1 or len(classes) == 0:
        raise ValueError("classes must be a non-empty 1-D list of labels.")
    class_index = pd.Index(classes)
    if class_index.has_duplicates:
        raise ValueError(f"classes repeats a label: {classes.tolist()}.")
    class_codes = class_index.get_indexer(y[kept])
    unknown = class_codes < 0
    if unknown.any():
        shown = pd.unique(y[kept][unknown])[:5].tolist()
        raise ValueError(
            f"y holds labels that are not in classes {classes.tolist()}, e.g. {shown}."
        )
    counts = np.zeros((validated.n_bags, len(classes)))
    row_weights = np.ones(kept.sum()) if weights is None else weights[kept]
    np.add.at(counts, (validated.codes, class_codes), row_weights)
    if np.any(counts.sum(axis=1) == 0):
        raise ValueError("sample_weight gives a bag a total weight of 0.")
    index = pd.Index(validated.ids, name="bag", tupleize_cols=False)
    return pd.DataFrame(
        counts / counts.sum(axis=1, keepdims=True),
        index=index,
        columns=pd.Index(classes, name="class"),
    )


def expand_proportions(table, bags):
    """Give every sample the proportions of its bag.

    Parameters
    ----------
    table : DataFrame, Series or dict
        Per-bag proportions as returned by :func:`label_proportions`: a
        DataFrame indexed by bag id with one column per class, a Series of
        positive-class fractions indexed by bag id (two classes), or a dict
        ``{bag_id: proportions or fraction}``. Validated like ``props`` of an
        LLP classifier (non-negative, rows summing to 1).
    bags : array-like of shape (n_samples,)
        Bag id of every sample. Samples with the integer id ``-1`` belong to
        no bag and get a row of NaN.

    Returns
    -------
    props : ndarray of shape (n_samples, n_classes)
        Row ``i`` holds the proportions of the bag of sample ``i``, columns
        in the order of the table's columns (``[1 - p, p]`` for a Series or
        scalar fractions).

    Raises
    ------
    ValueError
        If a bag id of ``bags`` has no row in ``table`` (the message names
        them), every sample has bag ``-1``, or the proportions are invalid.
    TypeError
        If ``table`` is not a DataFrame, Series or dict.

    See Also
    --------
    label_proportions : The per-bag table of labelled data.
    sklearn_llp.core.check_bags : The validation applied to the table.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_llp.bags import expand_proportions
    >>> table = pd.DataFrame({"no": [0.9, 0.5], "yes": [0.1, 0.5]}, index=[3, 7])
    >>> expand_proportions(table, [7, 3, 3, -1])
    array([[0.5, 0.5],
           [0.9, 0.1],
           [0.9, 0.1],
           [nan, nan]])
    """
    if not isinstance(table, (pd.DataFrame, pd.Series, Mapping)):
        raise TypeError(
            "table must be a per-bag DataFrame (as returned by label_proportions), "
            f"a Series or a dict; got {type(table).__name__}."
        )
    ids = _bag_ids(bags)
    unbagged = _unbagged_mask(ids)
    if unbagged.all():
        raise ValueError("Every entry of bags is -1 (no bag).")
    validated = attach_table(
        check_bags(ids[~unbagged]), table, "classification", name="table"
    )
    props = np.full((len(ids), validated.n_classes), np.nan)
    props[~unbagged] = validated.props[validated.codes]
    return props
