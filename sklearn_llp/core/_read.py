"""The one validator of the bag data model: bags, proportions, classes.

Every public entry point that takes bags (the classifier, metrics, scorers,
splitters, bag tools) goes through :func:`check_bags`, so a malformed input
gets the same clear error wherever it is passed, and every reading of the
same data gives the same :class:`~sklearn_llp.core.Bags`.
"""

import numbers
from collections.abc import Mapping
from dataclasses import replace

import numpy as np
import pandas as pd
import scipy.sparse as sp
from sklearn.utils import column_or_1d
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import _num_samples

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


def _is_id_column(bags):
    """A list of one-element lists, as ``df[["bag"]].values.tolist()`` gives
    (Python lists only: row-index arrays of one row stay row indices)."""
    return (
        isinstance(bags, (list, tuple))
        and len(bags) > 0
        and all(isinstance(b, list) and len(b) == 1 for b in bags)
    )


def _object_array(values):
    values = list(values)
    keys = np.empty(len(values), dtype=object)
    keys[:] = values
    return keys


def _integer_ids(values):
    """Python ints of any size kept exact: int64, else uint64, else objects.

    ``np.asarray`` makes ``[2**63 + 5, 2**63 + 6, 5]`` float64, merging ids.
    """
    ints = [int(v) for v in values]
    for dtype in (np.int64, np.uint64):
        try:
            return np.array(ints, dtype=dtype)
        except OverflowError:
            continue
    return _object_array(ints)


def num_rows(X):
    """The number of rows of ``X``; a TypeError naming ``X`` if it has none
    (None, a scalar)."""
    try:
        return _num_samples(X)
    except TypeError as exc:
        raise TypeError(f"X: {exc}") from None


def _id_array(bags, name="bags"):
    """One hashable id per row, as a 1-D array; tuples and DataFrame rows
    become composite keys, and a one-column form becomes its column."""
    if bags is None:
        raise TypeError(f"{name} is None: pass one bag id per row.")
    if isinstance(bags, pd.DataFrame):
        if bags.shape[1] != 1:
            return _object_array(bags.itertuples(index=False, name=None))
        bags = bags.iloc[:, 0]
    if isinstance(bags, (pd.Series, pd.Index)):
        return bags.to_numpy()
    if isinstance(bags, (list, tuple)):
        if _is_id_column(bags):
            bags = [b[0] for b in bags]
        if any(isinstance(b, tuple) for b in bags):
            return _object_array(bags)
        # np.asarray would turn [0, '0'] into two equal strings: check first
        scalars = all(np.ndim(b) == 0 for b in bags)
        inferred = pd.api.types.infer_dtype(bags, skipna=True) if scalars else ""
        if inferred.startswith("mixed"):
            raise TypeError(
                f"{name} mixes id types ({inferred}), e.g. 0 and '0', which would "
                "be merged or compared ambiguously; use one type for all bag ids."
            )
        ids = np.asarray(bags)
        if ids.dtype.kind in "fO" and all(
            isinstance(b, numbers.Integral) for b in bags
        ):
            return _integer_ids(bags)
        if ids.dtype.kind in "US" and any(
            isinstance(b, (str, bytes)) and b[-1:] in ("\x00", b"\x00") for b in bags
        ):
            # NumPy's fixed-width strings drop trailing NULs ("a" == "a\0")
            return _object_array(bags)
        return ids
    ids = np.asarray(bags)
    if ids.ndim == 2 and ids.shape[1] == 1:
        return ids[:, 0]  # a column of ids, e.g. df[["bag"]].to_numpy()
    return ids


def _bags_form(bags, n_samples=None, name="bags"):
    """Which form ``bags`` takes: the one place that decides it.

    Returns ``(form, value)``:

    - ``("bags", bags)`` for a validated :class:`Bags`;
    - ``("membership", matrix)`` for a sparse ``(n_samples, n_bags)`` matrix;
    - ``("index_lists", bags)`` for a list of row-index sequences, one per
      bag;
    - ``("ids", ids)`` for one bag id per row: ``ids`` is 1-D, a one-column
      form (a ``(n, 1)`` array, a one-column DataFrame, a list of
      one-element lists) read as its column and rows of several key columns
      (a DataFrame, a list of tuples) as composite keys.

    A list whose items are all one-element Python lists is a column of ids
    when it has ``n_samples`` items (or ``n_samples`` is None), else a list of
    bags of one row each; one that reads both ways with different bags (the
    ids a shuffled ``0..n-1``) is refused.
    """
    if bags is None:
        raise TypeError(
            f"{name} is None: pass one bag id per row of X (the second argument "
            "of fit), or class labels as y with props=None for supervised data."
        )
    if isinstance(bags, Bags):
        return "bags", bags
    if sp.issparse(bags):
        return "membership", bags
    if _is_id_column(bags):
        if n_samples is None or len(bags) == n_samples:
            ids = _id_array(bags, name)
            rows = np.arange(len(ids))
            # 0..n-1 shuffled: row i in bag ids[i], or bag j holding row ids[j]
            shuffled = ids.dtype.kind in "iu" and not np.array_equal(ids, rows)
            if shuffled and np.array_equal(np.sort(ids), rows):
                raise ValueError(
                    f"{name} (one-element lists) reads both as a column of bag "
                    "ids and as bags of one row each, with different bags; "
                    f"pass np.ravel({name}) for bag ids, or arrays of row "
                    "indices for bags."
                )
            return "ids", ids
        if not all(isinstance(b[0], numbers.Integral) for b in bags):
            raise ValueError(
                f"{name} is a list of one-element lists, read as a column of bag "
                f"ids, but has {len(bags)} entries for X of {n_samples} rows; "
                "give one bag id per row."
            )
    if _is_index_list(bags):
        return "index_lists", bags
    return "ids", _id_array(bags, name)


def _check_ids(ids, name, allow_unbagged=False):
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
    if (
        not allow_unbagged
        and kind in "iufO"
        and np.any(np.asarray(ids == UNBAGGED, dtype=bool))
    ):
        raise ValueError(
            f"{name} holds the id {UNBAGGED}, which marks rows in no bag (the bag "
            f"generators give it to left-over rows); drop those rows, e.g. "
            f"X[{name} >= 0], or number the bags from 0."
        )


def _encode_ids(ids, n_samples, name, allow_unbagged=False):
    """Integer codes (bag of every row, -1 for a row of id ``UNBAGGED`` when
    ``allow_unbagged``) and the sorted distinct ids."""
    if ids.ndim != 1:
        raise ValueError(
            f"{name} must be 1-D with one bag id per row of X; got shape "
            f"{ids.shape}. For composite keys pass a DataFrame of the key columns "
            "or a list of tuples; for overlapping bags a sparse membership matrix "
            "(scipy.sparse.csr_matrix of the 0/1 array) or a list of row-index "
            "arrays."
        )
    if ids.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {ids.shape[0]} entries but X has {n_samples} rows; "
            "give exactly one bag id per row."
        )
    _check_ids(ids, name, allow_unbagged)
    bagged = np.ones(len(ids), dtype=bool)
    if allow_unbagged and ids.dtype.kind in "iufO":
        bagged = ~np.asarray(ids == UNBAGGED, dtype=bool)
    try:
        bag_ids, inverse = np.unique(ids[bagged], return_inverse=True)
    except TypeError as exc:
        raise TypeError(
            f"{name} mixes id types that cannot be compared (e.g. ints and "
            "strings); use one type for all bag ids."
        ) from exc
    codes = np.full(len(ids), -1, dtype=np.int64)
    codes[bagged] = inverse.ravel()
    return codes, bag_ids


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
            f"{int(np.flatnonzero(sizes == 0)[0])}; every bag needs a member. "
            "Taking rows of a membership matrix (as GridSearchCV and "
            "cross_validate slice y) keeps the columns of bags whose rows are "
            "gone: split overlapping bags with "
            "sklearn_llp.model_selection.subset_membership (or use "
            "sklearn_llp.model_selection.cross_val_predict), or drop the empty "
            "columns, membership[:, membership.getnnz(axis=0) > 0], with their "
            "rows of props."
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


def _class_names(columns):
    """A DataFrame's columns as class names; None for the default
    ``RangeIndex`` of a frame built from an array (column numbers)."""
    return None if _is_default_index(columns) else columns


def _unique_classes(classes):
    """``classes`` as an array; a label given twice is a ValueError."""
    classes = np.asarray(classes)
    if len(set(classes.tolist())) < len(classes):
        raise ValueError(f"classes has duplicate labels: {classes.tolist()}.")
    return classes


def match_classes(columns, n_classes, classes, name="props"):
    """``classes_`` and the column order of the proportions that matches it.

    Named columns (``columns`` not None: a DataFrame's, integers included)
    are matched to ``classes`` by name; unnamed ones (``columns=None``) are
    read in the order of ``classes``.
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
    if columns is None:
        order = np.arange(n_classes)
        return (order if classes is None else classes), order
    if classes is None:
        return columns, np.arange(n_classes)
    if set(classes.tolist()) != set(columns.tolist()):
        raise ValueError(
            f"{name} columns {columns.tolist()} do not match classes "
            f"{classes.tolist()}; name the columns after the classes, or pass "
            "unnamed proportions (an array) to be read in the order of classes."
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


def _table_rows(index, bag_ids, name):
    """Row of a per-bag table's ``index`` for every one of ``bag_ids``."""
    if index.has_duplicates:
        raise ValueError(f"{name} (a per-bag table) repeats a bag id in its index.")
    # get_indexer matches labels (a loc with a boolean array would be a mask)
    rows = index.get_indexer(pd.Index(bag_ids, tupleize_cols=False))
    missing = rows < 0
    if missing.any():
        shown = bag_ids[missing][:5].tolist()
        raise ValueError(
            f"{name} (a per-bag table) has no row for {int(missing.sum())} bag "
            f"id(s) that occur in bags, e.g. {shown}."
        )
    return rows


def _lookup_table(props, bag_ids, name):
    """The rows of a per-bag table for ``bag_ids``, and its class columns."""
    frame = _table_to_frame(props, name)
    rows = _table_rows(frame.index, bag_ids, name)
    values = as_float_matrix(frame.to_numpy(), name)[rows]
    if not _has_class_names(props):
        return values, None
    if isinstance(props, pd.DataFrame):
        return values, _class_names(props.columns)
    return values, list(frame.columns)  # a dict of dicts: keys are names


def _positional(props, name):
    """An array-like of proportions as a float matrix and its class columns."""
    columns = _class_names(props.columns) if isinstance(props, pd.DataFrame) else None
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
    values, codes = values[codes >= 0], codes[codes >= 0]
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
    allow_unbagged=False,
    name="bags",
):
    """Validate bags (and their proportions) into a :class:`Bags`.

    Parameters
    ----------
    bags : array-like, DataFrame, sparse matrix, list of arrays or Bags
        Which rows form a bag. Its form is decided in one place, in this
        order:

        - a :class:`Bags` (already validated): checked against
          ``n_samples``, merged with ``sample_weight`` and ``classes`` (see
          below);
        - a sparse ``(n_samples, n_bags)`` membership matrix (nonzero entries
          mark membership): bags that may overlap;
        - a list of ``n_bags`` arrays (or lists) of row indices: bags that
          may overlap. But a list whose items are all one-element Python
          lists (``df[["bag"]].values.tolist()``) is a column of bag ids when
          it has ``n_samples`` items (or ``n_samples`` is None); it is
          refused if those ids are ``0..n-1`` shuffled, which read as bags of
          one row each too, with other bags. With another number of items it
          is a list of bags of one row each;
        - anything else holds one bag id per row: ints (of any size),
          strings, bools, timestamps. A one-column form -- a ``(n, 1)``
          array, a one-column DataFrame -- is read as its column; several
          key columns (a DataFrame, or a list of tuples) are composite keys.
          The id ``-1`` is refused (the generators' mark of rows in no bag).
    props : array-like, DataFrame, Series or dict, default=None
        Label proportions. With bag ids: sample-aligned ``(n_samples,
        n_classes)`` (each row its bag's proportions), a 1-D positive-class
        fraction for two classes, or a per-bag table indexed by bag id (a
        DataFrame with one column per class, a Series of positive-class
        fractions, a dict ``{bag_id: proportions or fraction}``); a pandas
        object with the default index ``0..n-1`` is read by position. With
        membership forms: one row per bag ``(n_bags, n_classes)``, or a table
        keyed by ``0..n_bags-1``. Rows must sum to 1 within
        :data:`PROPS_SUM_TOL` (then renormalised). Must be None with a
        :class:`Bags`, which carries its proportions.
    n_samples : int, default=None
        Number of rows of ``X``; default: the length of ``bags`` (the rows of
        a membership matrix; required for lists of row indices).
    classes : array-like of shape (n_classes,), default=None
        Class labels. Named columns -- a DataFrame's columns (integers
        included, unless they are the default ``RangeIndex`` of a frame
        built from an array), the inner keys of a dict of dicts, the classes
        of a :class:`Bags` -- are matched to them by name, and must be the
        same set; unnamed columns (arrays, lists, a dict of vectors, a
        Series of fractions) are read in the order of ``classes``. Default:
        the named columns, else ``0..n_classes-1``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of every row. A row of weight 0 is removed from
        its bags and bags left empty are dropped. A :class:`Bags` that
        already carries other weights is refused.
    require_props : bool, default=False
        Raise if there are no proportions.
    min_bags : int, default=1
        Fewest bags accepted (training needs 2), counted after bags of zero
        weight are dropped.
    allow_unbagged : bool, default=False
        Accept the id ``-1`` (:data:`UNBAGGED`, the generators' mark of a row
        in no bag) and leave those rows out of every bag; else it is refused.
    name : str, default="bags"
        The argument's name in error messages.

    Returns
    -------
    bags : Bags
        The validated bags, numbered in the order of their sorted ids.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_llp.core import check_bags
    >>> bags = check_bags([0, 0, 1, 1], [0.5, 0.5, 1.0, 1.0])
    >>> bags.props.tolist(), bags.classes.tolist()
    ([[0.5, 0.5], [0.0, 1.0]], [0, 1])
    >>> check_bags([np.array([0, 1]), np.array([1, 2])], n_samples=3).overlapping
    True

    A column of ids, and a validated ``Bags`` merged with weights:

    >>> check_bags([[0], [0], [1], [1]]).sizes.tolist()
    [2, 2]
    >>> check_bags(bags, sample_weight=[1, 0, 0, 0]).ids.tolist()
    [0]
    """
    form, value = _bags_form(bags, n_samples, name)
    if form == "bags":
        validated = _merge_classes(value, props, n_samples, classes, name)
        if require_props and validated.props is None:
            raise TypeError(f"{name} is a Bags object without proportions.")
    else:
        validated = _new_bags(
            form, value, props, n_samples, classes, name, allow_unbagged
        )
        if require_props and validated.props is None:
            raise TypeError("props is None: pass the label proportions of the bags.")
    return _weighted_enough(
        validated,
        sample_weight,
        min_bags,
        f"{name} holds {{n}} bag(s){{dropped}}; LLP needs at least {min_bags}"
        + (
            ": the proportions of a single bag say nothing about which "
            "instance is which."
            if min_bags > 1
            else "."
        ),
    )


def _weighted_enough(validated, sample_weight, min_bags, message):
    """``validated`` with ``sample_weight``, refused when fewer than
    ``min_bags`` bags keep a row of positive weight (``message`` formatted
    with the number left and what the weights dropped)."""
    n_given = validated.n_bags
    validated = validated.with_weights(sample_weight)
    if validated.n_bags < min_bags:
        dropped = (
            f" ({n_given - validated.n_bags} dropped: all their rows have "
            "sample_weight 0)"
            if validated.n_bags < n_given
            else ""
        )
        raise ValueError(message.format(n=validated.n_bags, dropped=dropped))
    return validated


def _new_bags(form, value, props, n_samples, classes, name, allow_unbagged=False):
    """A :class:`Bags` from ids or a membership form, with its proportions."""
    if form == "ids":
        n_samples = len(value) if n_samples is None and value.ndim else n_samples
        codes, bag_ids = _encode_ids(value, n_samples, name, allow_unbagged)
        order = np.argsort(codes, kind="stable")
        members = order[codes[order] >= 0]
        counts = np.bincount(codes[codes >= 0], minlength=len(bag_ids))
        indptr = np.concatenate([[0], np.cumsum(counts)])
    else:
        if n_samples is None:
            if form == "index_lists":
                raise TypeError("n_samples is required with bags as row-index lists.")
            n_samples = value.shape[0]
        membership = _membership(value, n_samples, name)
        indptr, members = membership.indptr, membership.indices
        bag_ids = np.arange(membership.shape[1])
    bags = Bags(indptr, members, bag_ids, n_samples)
    if props is None:
        return bags
    if form != "ids":
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
    elif _is_per_bag_table(props, value, bag_ids, n_samples, "props"):
        values, columns = _lookup_table(props, bag_ids, "props")
        bag_props = check_prop_values(values, "props")
    else:
        values, columns = _positional(props, "props")
        bag_props = _bag_props_from_rows(values, codes, bag_ids, n_samples, "props")
    return _with_props(bags, bag_props, columns, classes, "props")


def _merge_classes(bags, props, n_samples, classes, name):
    """A validated :class:`Bags` checked against ``X``, its columns in the
    order of ``classes``."""
    if n_samples is not None and bags.n_samples != n_samples:
        raise ValueError(f"{name} covers {bags.n_samples} rows but X has {n_samples}.")
    if props is not None:
        raise ValueError(
            f"{name} is a validated Bags object, which carries its "
            "proportions; pass props=None."
        )
    if classes is None or bags.props is None:
        return bags
    if bags.positional_classes:  # unnamed columns: classes label them in order
        return _with_props(bags, bags.props, None, classes, name)
    classes = _unique_classes(classes)
    if set(classes.tolist()) != set(bags.classes.tolist()):
        raise ValueError(
            f"classes {classes.tolist()} are not the classes of {name} "
            f"{bags.classes.tolist()}: the proportions of a Bags object are "
            "named by its classes, which classes may only reorder. Validate the "
            "bags with these classes in the first place."
        )
    return _with_props(bags, bags.props, bags.classes, classes, name)


def _with_props(bags, bag_props, columns, classes, name):
    """``bags`` carrying ``bag_props``, columns in the order of ``classes``."""
    if bag_props.shape[1] < 2:
        raise ValueError(
            f"{name} has {bag_props.shape[1]} class column; at least 2 are needed."
        )
    matched, order = match_classes(columns, bag_props.shape[1], classes, name)
    positional = columns is None and classes is None
    return bags.with_props(bag_props[:, order], matched, positional=positional)


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
        A new ``bags`` with ``props`` and ``classes`` set.
    """
    values, columns = _lookup_table(table, bags.ids, name)
    return _with_props(bags, check_prop_values(values, name), columns, classes, name)


# ----------------------------------------------------------------------
# the inputs of fit
# ----------------------------------------------------------------------
def check_fit_inputs(
    y,
    props=None,
    *,
    n_samples,
    sample_weight=None,
    classes=None,
    min_bags=2,
    require_props=False,
):
    """Validate what ``fit`` receives: bags and proportions, or labels.

    The one reading of ``fit(X, y, props, sample_weight)`` shared by every
    estimator: with ``props`` (or ``y`` a :class:`Bags`), ``y`` holds the
    bags and goes to :func:`check_bags`; without, ``y`` holds the class
    label of every row (supervised data), which become bags of one row
    with one-hot proportions, so that training code sees one kind of input.

    Parameters
    ----------
    y : array-like, DataFrame, sparse matrix, list of arrays or Bags
        The bags in any form :func:`check_bags` accepts, or, with
        ``props=None`` and no :class:`Bags`, the class label of every row.
    props : array-like, DataFrame, Series or dict, default=None
        Label proportions of the bags, in any form :func:`check_bags`
        accepts.
    n_samples : int
        Number of rows of ``X``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of every row; a row of weight 0 is removed.
        With labels, a row's weight also weighs its own bag (its
        cross-entropy), as in scikit-learn.
    classes : array-like of shape (n_classes,), default=None
        Class labels: the column order of ``props`` (see
        :func:`check_bags`), or with labels every class, present or not.
    min_bags : int, default=2
        Fewest bags accepted (with ``props``).
    require_props : bool, default=False
        Refuse labels: ``props=None`` is then an error.

    Returns
    -------
    bags : Bags
        Immutable validated bags with proportions and classes (at least 2).
    on_labels : bool
        Whether ``y`` held labels (every row its own bag).

    Examples
    --------
    >>> from sklearn_llp.core import check_fit_inputs
    >>> bags, on_labels = check_fit_inputs(["a", "b", "b"], n_samples=3)
    >>> on_labels, bags.classes.tolist(), bags.props.tolist()
    (True, ['a', 'b'], [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    >>> bags, on_labels = check_fit_inputs([0, 0, 1, 1], [0.5, 0.5, 1, 1], n_samples=4)
    >>> on_labels, bags.n_bags, bags.props.tolist()
    (False, 2, [[0.5, 0.5], [0.0, 1.0]])
    """
    if y is None and props is None:
        raise ValueError(
            "This estimator requires y to be passed, but the target y is None: "
            "pass bag ids as y with props, or class labels as y."
        )
    if props is not None or isinstance(y, Bags) or require_props:
        bags = check_bags(
            y,
            props,
            n_samples=n_samples,
            classes=classes,
            sample_weight=sample_weight,
            require_props=True,
            min_bags=min_bags,
        )
        return bags, False
    return _label_bags(y, n_samples, classes, sample_weight), True


def _label_bags(y, n_samples, classes, sample_weight):
    """Supervised data: every row its own bag, with a one-hot proportion."""
    classes, codes = check_labels(y, n_samples, classes)
    if len(classes) < 2:
        raise ValueError(
            f"y holds a single class ({classes.tolist()}): one class is not "
            "enough, at least 2 are needed (or pass them all as classes)."
        )
    rows = np.arange(n_samples)
    bags = Bags(
        np.arange(n_samples + 1),
        rows,
        rows,
        n_samples,
        props=np.eye(len(classes))[codes],
        classes=classes,
    )
    bags = bags.with_weights(sample_weight)  # rows of weight 0 are dropped
    if bags.weights is None:
        return bags
    if np.count_nonzero(bags.props.sum(axis=0)) < 2:
        raise ValueError(
            "sample_weight leaves rows of a single class with a positive "
            "weight; at least 2 classes are needed."
        )
    # each row is its own bag: its weight weighs its cross-entropy
    return replace(bags, bag_weights=bags.weights[bags.ids])


# ----------------------------------------------------------------------
# regression: bag means
# ----------------------------------------------------------------------
#: The column label of the targets a :class:`Bags` carries for regression:
#: its ``props`` are then one column of bag means, ``classes == ["mean"]``.
TARGET_COLUMN = "mean"

#: Rows of sample-aligned ``targets`` that belong to one bag must agree
#: within this tolerance, relative to the bag's mean (absolute below 1).
TARGETS_BAG_RTOL = 1e-6


def is_target_bags(bags):
    """Whether a :class:`Bags` carries regression targets (bag means)."""
    return (
        bags.props is not None
        and bags.props.shape[1] == 1
        and bags.classes is not None
        and bags.classes.tolist() == [TARGET_COLUMN]
    )


def _target_values(values, name):
    """``values`` as a finite float vector: 1-D, or one column."""
    if isinstance(values, pd.DataFrame) and {"sum", "mean"} & set(values.columns):
        values = _named_target_columns(values, name)
    if isinstance(values, pd.DataFrame):
        if values.shape[1] != 1:
            raise ValueError(
                f"{name} is a DataFrame of {values.shape[1]} columns; give one "
                "column of bag means (multi-output regression is not supported)."
            )
        values = values.iloc[:, 0]
    if isinstance(values, pd.Series):
        values = values.to_numpy()
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must hold numbers (bag means); {exc}") from exc
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1:
        hint = ""
        if (
            values.ndim == 2
            and values.size
            and np.all(np.isfinite(values))
            and np.all(values >= 0)
            and np.allclose(values.sum(axis=1), 1.0)
        ):
            # every row sums to 1: label proportions, e.g. make_bags of a
            # target whose values are all integral (read as class labels)
            hint = (
                " Its rows sum to 1: these look like label proportions, which "
                "make_bags gives for a target of integral values (read as "
                "class labels); for bag means of such a target use the "
                "generator's make_bag_means(X, y)."
            )
        raise ValueError(
            f"{name} must be 1-D, one mean per row or per bag; got shape "
            f"{values.shape} (multi-output regression is not supported).{hint}"
        )
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return values


def _targets_frame(targets, name):
    """A per-bag table of targets (Series, one-column DataFrame, dict) as a
    Series indexed by bag id."""
    if isinstance(targets, pd.DataFrame):
        if {"sum", "mean"} & set(targets.columns):
            return _named_target_columns(targets, name)
        if targets.shape[1] != 1:
            raise ValueError(
                f"{name} is a DataFrame of {targets.shape[1]} columns; a per-bag "
                "table of targets has one column of bag means, or columns "
                "'mean' or 'sum' with 'size', indexed by bag id."
            )
        return targets.iloc[:, 0]
    if isinstance(targets, pd.Series):
        return targets
    values = []
    for key, value in targets.items():
        if np.ndim(value) != 0:
            raise ValueError(
                f"{name} dict must map every bag id to one number, its mean; "
                f"bag {key!r} has {np.ndim(value)}-D value {value!r}."
            )
        values.append(value)
    return pd.Series(values, index=pd.Index(list(targets), tupleize_cols=False))


def _named_target_columns(targets, name):
    """The bag means of a per-bag table with named columns: ``mean`` (and
    optionally ``size``), or ``sum`` and ``size`` (means = sums / sizes)."""
    columns = set(targets.columns)
    if columns not in ({"mean"}, {"mean", "size"}, {"sum", "size"}):
        raise ValueError(
            f"{name} has columns {sorted(map(str, targets.columns))}; a per-bag "
            "table of targets has the columns 'mean' (and optionally 'size') "
            "or 'sum' and 'size' (each bag's total and its number of rows)."
        )
    if "size" in columns:
        sizes = _target_values(targets["size"].to_numpy(), f"{name}['size']")
        if np.any(sizes <= 0):
            raise ValueError(f"{name}['size'] must be positive for every bag.")
    if "mean" in columns:
        return targets["mean"]
    sums = _target_values(targets["sum"].to_numpy(), f"{name}['sum']")
    return pd.Series(sums / sizes, index=targets.index)


def _lookup_targets(targets, bag_ids, name):
    """The means of a per-bag table for ``bag_ids``."""
    series = _targets_frame(targets, name)
    rows = _table_rows(series.index, bag_ids, name)
    return _target_values(series.to_numpy(), name)[rows]


def _targets_from_rows(values, codes, bag_ids, n_samples, name):
    """Sample-aligned targets collapsed to one mean per bag."""
    if values.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {values.shape[0]} values but X has {n_samples} rows; "
            "pass one value per row (its bag's mean) or a per-bag table indexed "
            "by bag id (a Series or dict)."
        )
    values, codes = values[codes >= 0], codes[codes >= 0]
    means = np.zeros(len(bag_ids))
    means[codes] = values
    spread = np.abs(values - means[codes])
    tolerance = TARGETS_BAG_RTOL * np.maximum(1.0, np.abs(means[codes]))
    if np.any(spread > tolerance):
        bag = bag_ids[codes[np.argmax(spread - tolerance)]]
        raise ValueError(
            f"{name} differ between rows of the same bag (bag {bag!r}); every "
            "row of a bag must carry that bag's mean."
        )
    return means


def check_bag_targets(
    bags,
    targets=None,
    *,
    n_samples=None,
    sample_weight=None,
    min_bags=1,
    name="bags",
):
    """Validate bags and their mean targets (regression) into a :class:`Bags`.

    The regression counterpart of :func:`check_bags`: the bags are read in
    every form :func:`check_bags` accepts, and ``targets`` holds the mean of
    a continuous response over every bag (conversion value per campaign,
    average hours per district...). The returned :class:`Bags` carries the
    means as one column of ``props`` labelled ``classes == ["mean"]``.

    Parameters
    ----------
    bags : array-like, DataFrame, sparse matrix, list of arrays or Bags
        Which rows form a bag, in any form of :func:`check_bags`. A
        :class:`Bags` must already carry targets (from this function) and
        ``targets`` must then be None.
    targets : array-like, Series, DataFrame or dict, default=None
        The mean of every bag. With bag ids: sample-aligned, one value per
        row (every row its bag's mean; the rows of a bag must agree within a
        relative ``1e-6``), or a per-bag table keyed by bag id (a Series, a
        one-column DataFrame or a dict ``{bag_id: mean}``; a pandas object
        with the default index ``0..n-1`` is read by row). A DataFrame with
        the columns ``sum`` and ``size`` gives each bag's total and its number
        of rows (the mean is ``sum / size``: daily totals of hourly demand);
        with ``mean`` and ``size``, the sizes are checked and not used. With membership
        forms (overlapping bags): one value per bag, or a table keyed by
        ``0..n_bags-1``. Values must be finite.
    n_samples : int, default=None
        Number of rows of ``X``; default: the length of ``bags``.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative weight of every row; a row of weight 0 leaves its bags.
        The targets are taken as the bags' (weighted) means as given.
    min_bags : int, default=1
        Fewest bags accepted (training needs 2).
    name : str, default="bags"
        The argument's name in error messages.

    Returns
    -------
    bags : Bags
        Validated bags whose ``props[:, 0]`` holds the means.

    Examples
    --------
    >>> from sklearn_llp.core import check_bag_targets
    >>> bags = check_bag_targets(["a", "a", "b"], [2.5, 2.5, -1.0])
    >>> bags.ids.tolist(), bags.props[:, 0].tolist()
    (['a', 'b'], [2.5, -1.0])
    >>> check_bag_targets(["a", "a", "b"], {"a": 2.5, "b": -1.0}).props[:, 0].tolist()
    [2.5, -1.0]
    """
    form, value = _bags_form(bags, n_samples, name)
    if form == "bags":
        if n_samples is not None and value.n_samples != n_samples:
            raise ValueError(
                f"{name} covers {value.n_samples} rows but X has {n_samples}."
            )
        if targets is not None:
            raise ValueError(
                f"{name} is a validated Bags object, which carries its targets; "
                "pass targets=None."
            )
        if value.props is None:
            raise TypeError(
                f"{name} is a Bags object without targets; build it with "
                "sklearn_llp.core.check_bag_targets(bags, targets)."
            )
        if not is_target_bags(value):
            raise ValueError(
                f"{name} is a Bags object carrying label proportions of "
                f"{value.n_classes} classes, not bag means; build it with "
                "sklearn_llp.core.check_bag_targets(bags, targets)."
            )
        validated = value
    else:
        if targets is None:
            raise TypeError("targets is None: pass the mean target of every bag.")
        validated = _new_bags(form, value, None, n_samples, None, name)
        bag_ids = validated.ids
        if form != "ids":
            if isinstance(targets, Mapping) or (
                isinstance(targets, (pd.DataFrame, pd.Series))
                and not _is_default_index(targets.index)
            ):
                means = _lookup_targets(targets, bag_ids, "targets")
            else:
                means = _target_values(targets, "targets")
                if means.shape[0] != len(bag_ids):
                    raise ValueError(
                        f"targets must hold one mean per bag ({len(bag_ids)}) "
                        f"with overlapping bags; got {means.shape[0]}."
                    )
        elif _is_per_bag_table(targets, value, bag_ids, validated.n_samples, "targets"):
            means = _lookup_targets(targets, bag_ids, "targets")
        else:
            means = _targets_from_rows(
                _target_values(targets, "targets"),
                validated.codes,
                bag_ids,
                validated.n_samples,
                "targets",
            )
        validated = validated.with_props(means[:, None], np.array([TARGET_COLUMN]))
    return _weighted_enough(
        validated,
        sample_weight,
        min_bags,
        f"{name} holds {{n}} bag(s){{dropped}}; learning from bag means needs at "
        f"least {min_bags}: the mean of a single bag says nothing about which "
        "instance is which.",
    )


def check_instance_targets(y, n_samples, sample_weight=None):
    """Instance targets (``fit(X, y)`` of a regressor): every row its own bag.

    Returns a :class:`Bags` of one row per bag whose mean is the row's
    target (rows of weight 0 dropped), as :func:`check_bag_targets` does.
    """
    if y is None:
        raise ValueError(
            "This estimator requires y to be passed, but the target y is None: "
            "pass bag ids as y with targets, or instance targets as y."
        )
    values = np.asarray(y) if not isinstance(y, (pd.Series, pd.DataFrame)) else y
    if isinstance(values, pd.DataFrame) or (
        isinstance(values, np.ndarray) and values.ndim == 2
    ):
        values = column_or_1d(values, warn=True)
    values = _target_values(values, "y")
    if values.shape[0] != n_samples:
        raise ValueError(
            "y must hold one target per row of X when targets is None; got "
            f"{values.shape[0]} values for {n_samples} rows."
        )
    rows = np.arange(n_samples)
    bags = Bags(
        np.arange(n_samples + 1),
        rows,
        rows,
        n_samples,
        props=values[:, None],
        classes=np.array([TARGET_COLUMN]),
    )
    return bags.with_weights(sample_weight)
