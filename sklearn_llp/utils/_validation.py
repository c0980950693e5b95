"""The one validator of the bag data model: bags, proportions, classes.

Every public entry point that takes bags (the classifier, metrics, scorers,
splitters, bag tools) goes through :func:`check_bags`, so a malformed input
gets the same clear error wherever it is passed, and every reading of the
same data gives the same :class:`~sklearn_llp.utils.Bags`.
"""

import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils import column_or_1d
from sklearn.utils.multiclass import check_classification_targets

from ._bags import Bags

#: Rows of ``props`` may sum to 1 within this absolute tolerance (rounded
#: published percentages); they are then renormalised exactly.
PROPS_SUM_TOL = 1e-2

#: Rows of sample-aligned ``props`` that belong to one bag must agree within
#: this absolute tolerance.
PROPS_BAG_TOL = 1e-6

#: Proportions down to ``-PROPS_NEG_TOL`` are float rounding (``1 - 0.3 -
#: 0.3 - 0.4`` is ``-5.6e-17``) and are set to 0; below, they are an error.
PROPS_NEG_TOL = 1e-9

#: The bag id the bag generators give a row that belongs to no bag.
UNBAGGED = -1


# ----------------------------------------------------------------------
# bag ids
# ----------------------------------------------------------------------
def _is_key_scalar(value):
    return isinstance(value, (str, bytes, numbers.Integral, np.bool_, bool))


def _is_key(value):
    """Ints, strings, bools and timestamps, or tuples of them (composite)."""
    if isinstance(value, tuple):
        return len(value) > 0 and all(
            _is_key_scalar(v) or isinstance(v, (pd.Timestamp, np.datetime64))
            for v in value
        )
    return _is_key_scalar(value) or isinstance(value, (pd.Timestamp, np.datetime64))


def _is_index_list(bags):
    """A list or tuple of row-index sequences (membership), not of bag ids.

    Bag ids are hashable (ints, strings, tuples of them); lists and arrays are
    not, so a list whose items are lists or arrays lists every bag's rows.
    """
    if not isinstance(bags, (list, tuple)) or not bags:
        return False
    sequences = [isinstance(b, (list, np.ndarray, pd.Series, range)) for b in bags]
    if any(sequences) and not all(sequences):
        raise TypeError(
            "bags mixes row-index lists with scalar ids: give one bag id per row "
            "of X (ints, strings or tuples of them), or overlapping bags as a "
            "list of row-index arrays, one per bag."
        )
    return all(sequences)


def _id_array(bags, name="bags"):
    """One hashable id per row, as a 1-D array; tuples and DataFrame rows
    become composite keys."""
    if isinstance(bags, pd.DataFrame):
        if bags.shape[1] == 1:
            return bags.iloc[:, 0].to_numpy()
        keys = np.empty(len(bags), dtype=object)
        keys[:] = list(bags.itertuples(index=False, name=None))
        return keys
    if isinstance(bags, (pd.Series, pd.Index)):
        return bags.to_numpy()
    if isinstance(bags, (list, tuple)):
        if any(isinstance(b, tuple) for b in bags):
            keys = np.empty(len(bags), dtype=object)
            keys[:] = list(bags)
            return keys
        # np.asarray would turn [0, '0'] into two equal strings: check first
        scalars = all(np.ndim(b) == 0 for b in bags)
        inferred = pd.api.types.infer_dtype(bags, skipna=True) if scalars else ""
        if inferred.startswith("mixed"):
            raise TypeError(
                f"{name} mixes id types ({inferred}), e.g. 0 and '0', which would "
                "be merged or compared ambiguously; use one type for all bag ids."
            )
    return np.asarray(bags)


def _check_ids(ids, name):
    """Reject ids that are missing, of mixed types, or not usable as keys."""
    kind = ids.dtype.kind
    if kind == "f":
        if not np.all(np.isfinite(ids)):
            raise ValueError(f"{name} contains NaN or infinite ids.")
        if not np.all(ids == np.round(ids)):
            raise ValueError(f"{name} holds non-integer floats; bag ids are labels.")
    elif kind in "Mm":
        if np.isnat(ids).any():
            raise ValueError(f"{name} contains missing ids (NaT).")
    elif kind == "O":
        missing = pd.isna(ids) if ids.size else np.zeros(0, dtype=bool)
        if np.any(missing):
            raise ValueError(f"{name} contains missing ids (None/NaN).")
        bad = [v for v in ids[:1000] if not _is_key(v)]
        bad = bad or [v for v in ids if not _is_key(v)]
        if bad:
            raise TypeError(
                f"{name} holds ids of type {type(bad[0]).__name__} "
                f"({bad[0]!r}); bag ids must be ints, strings, bools, timestamps "
                "or tuples of them (composite keys)."
            )
        tuples = np.array([isinstance(v, tuple) for v in ids])
        if tuples.any():
            lengths = {len(v) for v in ids if isinstance(v, tuple)}
            if not tuples.all() or len(lengths) != 1:
                raise TypeError(
                    f"{name} mixes composite keys (tuples) of different lengths "
                    "or with single ids; give every row a tuple of the same length."
                )
            parts = list(zip(*ids))
        else:
            parts = [ids]
        for part in parts:
            inferred = pd.api.types.infer_dtype(np.asarray(part, dtype=object))
            if inferred.startswith("mixed"):
                raise TypeError(
                    f"{name} mixes id types ({inferred}), e.g. 0 and '0', which "
                    "would be merged or compared ambiguously; use one type for all "
                    "bag ids (and for each part of a composite key)."
                )
    elif kind not in "iubUS":
        raise TypeError(f"{name} must hold bag ids; got dtype {ids.dtype}.")
    if kind in "iuf" and np.any(ids == UNBAGGED):
        raise ValueError(
            f"{name} holds the id {UNBAGGED}, which marks rows in no bag (the bag "
            f"generators give it to left-over rows); drop those rows, e.g. "
            f"X[{name} >= 0], or number the bags from 0."
        )


def _encode_ids(bags, n_samples, name):
    """Integer codes (bag of every row) and the sorted distinct ids."""
    ids = _id_array(bags, name)
    if ids.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D with one bag id per row of X; got shape "
            f"{ids.shape}. For composite keys pass a DataFrame of the key columns "
            "or a list of tuples."
        )
    if ids.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {ids.shape[0]} entries but X has {n_samples} rows; "
            "give exactly one bag id per row."
        )
    _check_ids(ids, name)
    try:
        bag_ids, codes = np.unique(ids, return_inverse=True)
    except TypeError as exc:
        raise TypeError(
            f"{name} mixes id types that cannot be compared (e.g. ints and "
            "strings); use one type for all bag ids."
        ) from exc
    return codes.astype(np.int64).ravel(), bag_ids


def _membership(bags, n_samples, name):
    """Overlapping bags as a validated CSC ``(n_samples, n_bags)`` matrix."""
    if sp.issparse(bags):
        if bags.ndim != 2 or bags.shape[0] != n_samples:
            raise ValueError(
                f"{name} (a membership matrix) has {bags.shape[0]} rows but X has "
                f"{n_samples}; it must be (n_samples, n_bags)."
            )
        membership = sp.csc_matrix(sp.csc_matrix(bags) != 0)
    else:
        columns = []
        for j, rows in enumerate(bags):  # a list given by the user: one per bag
            rows = np.asarray(rows)
            if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
                raise TypeError(
                    f"{name}[{j}] must be a 1-D array of integer row indices of X."
                )
            columns.append(rows.astype(np.int64))
        sizes = np.array([len(c) for c in columns], dtype=np.int64)
        rows = np.concatenate(columns) if columns else np.zeros(0, np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= n_samples):
            raise ValueError(
                f"{name} holds row indices outside [0, {n_samples}) for X of "
                f"{n_samples} rows."
            )
        membership = sp.csc_matrix(
            (np.ones(len(rows), dtype=bool), rows, np.r_[0, np.cumsum(sizes)]),
            shape=(n_samples, len(columns)),
        )
    membership.sum_duplicates()
    membership.sort_indices()
    sizes = np.diff(membership.indptr)
    if np.any(sizes == 0):
        raise ValueError(
            f"{name} has {int((sizes == 0).sum())} empty bag(s), e.g. bag "
            f"{int(np.flatnonzero(sizes == 0)[0])}; every bag needs a member."
        )
    return membership


# ----------------------------------------------------------------------
# proportions
# ----------------------------------------------------------------------
def as_float_matrix(values, name):
    """``values`` as float64, with a TypeError naming ``name`` otherwise."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must hold numbers; {exc}") from exc


def binary_from_fraction(fraction):
    """A 1-D fraction of the positive class becomes two columns."""
    return np.column_stack([1.0 - fraction, fraction])


def check_prop_values(values, name):
    """Finite, non-negative, rows summing to 1 (renormalised)."""
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    if np.any(values < -PROPS_NEG_TOL):
        raise ValueError(f"{name} contains negative proportions.")
    values = np.maximum(values, 0.0)
    sums = values.sum(axis=1)
    bad = np.abs(sums - 1.0) > PROPS_SUM_TOL
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} rows must sum to 1 (tolerance {PROPS_SUM_TOL}); "
            f"{int(bad.sum())} rows do not, e.g. row {row} sums to {sums[row]:.6g}."
        )
    return values / sums[:, None]


def _is_default_index(index):
    """An unnamed ``RangeIndex`` from 0: row numbers, not bag ids."""
    return (
        isinstance(index, pd.RangeIndex)
        and index.name is None
        and index.start == 0
        and index.step == 1
    )


def _default_columns(columns, n_classes):
    return columns is None or list(columns) == list(range(n_classes))


def _unique_classes(classes):
    """``classes`` as an array; a label given twice is a ValueError."""
    classes = np.asarray(classes)
    if len(set(classes.tolist())) < len(classes):
        raise ValueError(f"classes has duplicate labels: {classes.tolist()}.")
    return classes


def match_classes(columns, n_classes, classes, name="props"):
    """``classes_`` and the column order of the proportions that matches it.

    Named columns are matched to ``classes`` by name; unnamed columns (or the
    default ``0..n_classes-1``) are read in the order of ``classes``.
    """
    if classes is not None:
        classes = _unique_classes(classes)
        if len(classes) != n_classes:
            raise ValueError(
                f"{name} has {n_classes} classes (columns) but classes has "
                f"{len(classes)} entries ({classes.tolist()})."
            )
    if columns is not None:
        columns = np.asarray(list(columns))
        if len(set(columns.tolist())) < len(columns):
            raise ValueError(
                f"{name} has duplicate class columns: {columns.tolist()}; name "
                "every class once."
            )
    if _default_columns(columns, n_classes):
        order = np.arange(n_classes)
        return (order if classes is None else classes), order
    if classes is None:
        return columns, np.arange(n_classes)
    if set(classes.tolist()) != set(columns.tolist()):
        raise ValueError(
            f"{name} columns {columns.tolist()} do not match classes "
            f"{classes.tolist()}; name the columns after the classes, or leave "
            f"them 0..{n_classes - 1} to be read in the order of classes."
        )
    position = {c: i for i, c in enumerate(columns.tolist())}
    return classes, np.array([position[c] for c in classes.tolist()])


def check_labels(y, n_samples, classes=None):
    """Instance labels (``fit(X, y)`` without ``props``) as class codes.

    Returns ``classes`` (those given, else the sorted labels present) and
    each row's index into it; a label outside the given ``classes``, a
    duplicated class or a length other than ``n_samples`` is a ValueError.
    """
    labels = column_or_1d(y, warn=True)
    check_classification_targets(labels)
    if labels.shape[0] != n_samples:
        raise ValueError(
            "y must hold one class label per row of X when props is None; got "
            f"{labels.shape[0]} labels for {n_samples} rows."
        )
    present, codes = np.unique(labels, return_inverse=True)
    codes = codes.ravel()
    if classes is None:
        return present, codes
    classes = _unique_classes(classes)
    position = {c: i for i, c in enumerate(classes.tolist())}
    unknown = [c for c in present.tolist() if c not in position]
    if unknown:
        raise ValueError(
            f"y holds labels that are not in classes {classes.tolist()}, e.g. "
            f"{unknown[:5]}."
        )
    return classes, np.array([position[c] for c in present.tolist()])[codes]


def _table_to_frame(props, name):
    """A per-bag table (DataFrame, Series or dict) as a DataFrame."""
    if isinstance(props, pd.DataFrame):
        return props
    if isinstance(props, pd.Series):
        values = as_float_matrix(props.to_numpy(), name)
        return pd.DataFrame(binary_from_fraction(values), index=props.index)
    if any(isinstance(val, Mapping) for val in props.values()):
        # {bag_id: {class: proportion}}: the inner keys are the classes
        return pd.DataFrame.from_dict(dict(props), orient="index").fillna(0.0)
    rows = {
        key: np.atleast_1d(as_float_matrix(val, name)) for key, val in props.items()
    }
    widths = {row.shape for row in rows.values()}
    if len(widths) != 1 or len(next(iter(widths))) != 1:
        raise ValueError(
            f"{name} dict must map every bag id to a fraction (binary) or to a "
            "1-D vector of proportions of the same length."
        )
    index = pd.Index(list(rows), tupleize_cols=False)
    frame = pd.DataFrame(np.stack(list(rows.values())), index=index)
    if frame.shape[1] == 1:
        frame = pd.DataFrame(binary_from_fraction(frame[0].to_numpy()), index=index)
    return frame


def _has_class_names(props):
    """A DataFrame's columns or a dict of dicts' inner keys name the classes."""
    if isinstance(props, pd.DataFrame):
        return True
    return isinstance(props, Mapping) and any(
        isinstance(val, Mapping) for val in props.values()
    )


def _is_per_bag_table(props, ids, bag_ids, n_samples, name):
    """Mappings are per-bag tables; pandas objects by their index.

    A pandas object with the default index (unnamed ``0..n-1``) holds row
    numbers, so it is read by position (sample-aligned); with another index
    of other length than ``X`` it is a per-bag table keyed by bag id. With one
    row per sample it is sample-aligned, unless its index holds every bag id
    without being the bag id of every row: then it reads both ways, an error.
    """
    if isinstance(props, Mapping):
        return True
    if not isinstance(props, (pd.DataFrame, pd.Series)):
        return False
    if _is_default_index(props.index):
        return False
    if len(props) != n_samples:
        return True
    index = props.index
    if pd.Index(bag_ids, tupleize_cols=False).isin(index).all():
        if not np.array_equal(index.to_numpy(), ids):
            raise ValueError(
                f"{name} has one row per sample and its index holds every bag "
                "id, so it reads both as sample-aligned (by row) and as a "
                f"per-bag table (by bag id); pass {name}.to_numpy() for rows, "
                f"or {name}.to_dict('index') for a per-bag table."
            )
    return False


def _lookup_table(props, bag_ids, name):
    """The rows of a per-bag table for ``bag_ids``, and its class columns."""
    frame = _table_to_frame(props, name)
    if frame.index.has_duplicates:
        raise ValueError(f"{name} (a per-bag table) repeats a bag id in its index.")
    # get_indexer matches labels (a loc with a boolean array would be a mask)
    rows = frame.index.get_indexer(pd.Index(bag_ids, tupleize_cols=False))
    missing = rows < 0
    if missing.any():
        shown = bag_ids[missing][:5].tolist()
        raise ValueError(
            f"{name} (a per-bag table) has no row for {int(missing.sum())} bag "
            f"id(s) that occur in bags, e.g. {shown}."
        )
    values = as_float_matrix(frame.to_numpy(), name)[rows]
    return values, (frame.columns if _has_class_names(props) else None)


def _positional(props, name):
    """An array-like of proportions as a float matrix and its class columns."""
    columns = props.columns if isinstance(props, pd.DataFrame) else None
    if isinstance(props, pd.DataFrame | pd.Series):
        props = props.to_numpy()
    values = as_float_matrix(props, name)
    if values.ndim == 1:
        values = binary_from_fraction(values)
    if values.ndim != 2:
        raise ValueError(
            f"{name} must be 1-D or 2-D (n_samples, n_classes); got shape "
            f"{values.shape}."
        )
    return values, columns


def _bag_props_from_rows(values, codes, bag_ids, n_samples, name):
    """Sample-aligned proportions collapsed to one row per bag."""
    if values.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {values.shape[0]} rows but X has {n_samples}; pass one "
            "row per sample (sample-aligned) or a per-bag table indexed by bag "
            "id (a DataFrame with the default 0..n-1 index is read by row)."
        )
    values = check_prop_values(values, name)
    bag_props = np.zeros((len(bag_ids), values.shape[1]))
    bag_props[codes] = values
    spread = np.abs(values - bag_props[codes]).max(axis=1)
    if np.any(spread > PROPS_BAG_TOL):
        bag = bag_ids[codes[np.argmax(spread)]]
        raise ValueError(
            f"{name} differ between rows of the same bag (bag {bag!r}); every "
            "row of a bag must carry that bag's proportions."
        )
    return bag_props


def _check_weights(sample_weight, n_samples):
    if sample_weight is None:
        return None
    weights = as_float_matrix(sample_weight, "sample_weight")
    if weights.ndim == 0:
        weights = np.full(n_samples, float(weights))
    if weights.shape != (n_samples,):
        raise ValueError(
            f"sample_weight has shape {weights.shape} but X has {n_samples} rows; "
            "give one weight per row."
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise ValueError("sample_weight must be finite and non-negative.")
    if not weights.sum() > 0:
        raise ValueError(
            "sample_weight is zero for every row: nothing to learn from; give "
            "some rows a positive weight."
        )
    if np.all(weights == weights[0]):
        return None  # equal weights weigh nothing: exactly as unweighted
    return weights


def _without_weightless_bags(bags):
    """Drop bags of zero total weight: a weight of 0 removes a row."""
    if bags.weights is None:
        return bags
    positive = bags.total_weights() > 0
    return bags if positive.all() else bags.select(positive)


# ----------------------------------------------------------------------
# the validator
# ----------------------------------------------------------------------
def check_bags(
    bags,
    props=None,
    *,
    n_samples=None,
    classes=None,
    sample_weight=None,
    require_props=False,
    min_bags=1,
    name="bags",
):
    """Validate bags (and their proportions) into a :class:`Bags`.

    Parameters
    ----------
    bags : array-like, DataFrame, sparse matrix, list of arrays or Bags
        Which rows form a bag, in one of these forms:

        - one bag id per row: ints, strings, bools, timestamps, or composite
          keys as tuples (a list of tuples, or a DataFrame of key columns);
          the id ``-1`` is refused (the generators' mark of rows in no bag);
        - bags that may overlap: a sparse ``(n_samples, n_bags)`` membership
          matrix (nonzero entries mark membership) or a list of ``n_bags``
          arrays (or lists) of row indices;
        - a :class:`Bags`, returned as it is (checked against ``n_samples``).
    props : array-like, DataFrame, Series or dict, default=None
        Label proportions. With bag ids: sample-aligned ``(n_samples,
        n_classes)`` (each row its bag's proportions), a 1-D positive-class
        fraction for two classes, or a per-bag table indexed by bag id (a
        DataFrame with one column per class, a Series of positive-class
        fractions, a dict ``{bag_id: proportions or fraction}``); a pandas
        object with the default index ``0..n-1`` is read by position. With
        membership forms: one row per bag ``(n_bags, n_classes)``, or a table
        keyed by ``0..n_bags-1``. Rows must sum to 1 within
        :data:`PROPS_SUM_TOL` (then renormalised).
    n_samples : int, default=None
        Number of rows of ``X``; default: the length of ``bags`` (the rows of
        a membership matrix; required for lists of row indices).
    classes : array-like of shape (n_classes,), default=None
        Class labels in column order. Named columns (a DataFrame's) are
        matched to them by name. Default: the named columns, else
        ``0..n_classes-1``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of every row; bags whose rows all weigh 0 are
        dropped (a weight of 0 removes a row).
    require_props : bool, default=False
        Raise if ``props`` is None.
    min_bags : int, default=1
        Fewest bags accepted (training needs 2).
    name : str, default="bags"
        The argument's name in error messages.

    Returns
    -------
    bags : Bags
        The validated bags, numbered in the order of their sorted ids.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.utils import check_bags
    >>> bags = check_bags([0, 0, 1, 1], [0.5, 0.5, 1.0, 1.0])
    >>> bags.props.tolist(), bags.classes.tolist()
    ([[0.5, 0.5], [0.0, 1.0]], [0, 1])
    >>> check_bags([np.array([0, 1]), np.array([1, 2])], n_samples=3).overlapping
    True
    """
    if isinstance(bags, Bags):
        if n_samples is not None and bags.n_samples != n_samples:
            raise ValueError(
                f"{name} covers {bags.n_samples} rows but X has {n_samples}."
            )
        if props is not None:
            raise ValueError(
                f"{name} is a validated Bags object, which carries its "
                "proportions; pass props=None."
            )
        if require_props and bags.props is None:
            raise TypeError(f"{name} is a Bags object without proportions.")
        return bags
    if bags is None:
        raise TypeError(
            f"{name} is None: pass one bag id per row of X (the second argument "
            "of fit), or class labels as y with props=None for supervised data."
        )
    overlapping = sp.issparse(bags) or _is_index_list(bags)
    if n_samples is None:
        if sp.issparse(bags):
            n_samples = bags.shape[0]
        elif overlapping:
            raise TypeError("n_samples is required with bags as row-index lists.")
        else:
            n_samples = len(_id_array(bags))
    if overlapping:
        membership = _membership(bags, n_samples, name)
        indptr = membership.indptr.astype(np.int64)
        members = membership.indices.astype(np.int64)
        bag_ids = np.arange(membership.shape[1])
        codes = None
    else:
        codes, bag_ids = _encode_ids(bags, n_samples, name)
        members = np.argsort(codes, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(codes))])
    if len(bag_ids) < min_bags:
        raise ValueError(
            f"{name} holds {len(bag_ids)} bag(s); LLP needs at least {min_bags}: "
            "the proportions of a single bag say nothing about which instance "
            "is which."
        )
    weights = _check_weights(sample_weight, n_samples)
    if props is None:
        if require_props:
            raise TypeError("props is None: pass the label proportions of the bags.")
        return _without_weightless_bags(
            Bags(indptr, members, bag_ids, n_samples, weights=weights)
        )

    if overlapping:
        if isinstance(props, Mapping) or (
            isinstance(props, (pd.DataFrame, pd.Series))
            and not _is_default_index(props.index)
        ):
            values, columns = _lookup_table(props, bag_ids, "props")
        else:
            values, columns = _positional(props, "props")
            if values.shape[0] != len(bag_ids):
                raise ValueError(
                    f"props must be (n_bags, n_classes) = ({len(bag_ids)}, "
                    "n_classes) with overlapping bags, one row per bag; got "
                    f"shape {values.shape}."
                )
        bag_props = check_prop_values(values, "props")
    elif _is_per_bag_table(props, _id_array(bags), bag_ids, n_samples, "props"):
        values, columns = _lookup_table(props, bag_ids, "props")
        bag_props = check_prop_values(values, "props")
    else:
        values, columns = _positional(props, "props")
        bag_props = _bag_props_from_rows(values, codes, bag_ids, n_samples, "props")
    bags = _with_props(
        Bags(indptr, members, bag_ids, n_samples, weights=weights),
        bag_props,
        columns,
        classes,
        "props",
    )
    return _without_weightless_bags(bags)


def _with_props(bags, bag_props, columns, classes, name):
    """``bags`` carrying ``bag_props``, columns in the order of ``classes``."""
    if bag_props.shape[1] < 2:
        raise ValueError(
            f"{name} has {bag_props.shape[1]} class column; at least 2 are needed."
        )
    classes, order = match_classes(columns, bag_props.shape[1], classes, name)
    bags.props = bag_props[:, order]
    bags.classes = np.asarray(classes)
    return bags


def attach_props_table(bags, table, classes=None, name="props_table"):
    """Look the proportions of ``bags`` up in a per-bag table by bag id.

    Parameters
    ----------
    bags : Bags
        Validated bags, without proportions.
    table : DataFrame, Series or dict
        Per-bag table indexed by bag id (any index, the default one too).
    classes : array-like, default=None
        Class labels the columns are matched to.
    name : str, default="props_table"
        The argument's name in error messages.

    Returns
    -------
    bags : Bags
        ``bags`` with ``props`` and ``classes`` set.
    """
    values, columns = _lookup_table(table, bags.ids, name)
    return _with_props(bags, check_prop_values(values, name), columns, classes, name)
