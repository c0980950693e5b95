"""The one reader of bags and their per-bag values (:func:`check_bags`).

One path for every form, so the same data reads to the same
:class:`~sklearn_llp.core.Bags` and the same error everywhere; the two tasks
differ only in the small ``_Proportions`` and ``_Means`` readers.
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

from ._bags import CLASSIFICATION, REGRESSION, Bags, _is_default_index, release_of

#: Rows of ``props`` may sum to 1 within this absolute tolerance (rounded
#: published percentages); they are then renormalised exactly.
PROPS_SUM_TOL = 1e-2
#: Sample-aligned ``props`` of one bag must agree within this tolerance.
PROPS_BAG_TOL = 1e-6
#: Proportions down to ``-PROPS_NEG_TOL`` are rounding and become 0.
PROPS_NEG_TOL = 1e-9
#: Sample-aligned ``targets`` of one bag must agree within this relative
#: tolerance (absolute below 1).
TARGETS_BAG_RTOL = 1e-6
#: The bag id the bag generators give a row that belongs to no bag.
UNBAGGED = -1


def num_rows(X):
    """The number of rows of ``X``; a TypeError naming ``X`` if it has none."""
    try:
        return _num_samples(X)
    except TypeError as exc:
        raise TypeError(f"X: {exc}") from None


def as_float_matrix(values, name):
    """``values`` as float64, with a TypeError naming ``name`` otherwise."""
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must hold numbers; {exc}") from exc


def binary_from_fraction(fraction, name="props"):
    """A 1-D fraction of the positive class becomes two columns."""
    outside = (fraction < -PROPS_NEG_TOL) | (fraction > 1 + PROPS_NEG_TOL)
    if np.any(outside):
        raise ValueError(
            f"{name} is 1-D: the fraction of the second class in every bag, which "
            f"must lie in [0, 1]; got {float(fraction[np.argmax(outside)])!r}."
        )
    return np.column_stack([1.0 - fraction, fraction])


# --- bag forms ---
def _is_key(value):
    """A usable id: int, str, bool, timestamp, interval (a pandas cut)..."""
    keys = (str, bytes, numbers.Integral, np.bool_, pd.Timestamp, np.datetime64)
    return isinstance(value, (*keys, pd.Interval, pd.Period))


def _is_index_list(bags):
    """A list or tuple of row-index sequences (one per bag), not of bag ids."""
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
    """A list of one-element lists, as ``df[["bag"]].values.tolist()`` gives."""
    return (
        isinstance(bags, (list, tuple))
        and len(bags) > 0
        and all(isinstance(b, list) and len(b) == 1 for b in bags)
    )


def _object_array(values):
    keys = np.empty(len(values), dtype=object)
    keys[:] = list(values)
    return keys


def _id_array(bags, name="bags"):
    """One id per row, 1-D; DataFrame rows and tuples become composite keys."""
    if isinstance(bags, pd.DataFrame):
        if bags.shape[1] != 1:
            return _object_array(list(bags.itertuples(index=False, name=None)))
        bags = bags.iloc[:, 0]
    if isinstance(bags, (pd.Series, pd.Index)):
        return bags.to_numpy()
    if isinstance(bags, (list, tuple)):
        if _is_id_column(bags):
            bags = [b[0] for b in bags]
        if any(isinstance(b, tuple) for b in bags):
            return _object_array(bags)
        # np.asarray would make [0, "0"] two equal strings and 2**63 a float
        if all(np.ndim(b) == 0 for b in bags):
            inferred = pd.api.types.infer_dtype(bags, skipna=True)
            if inferred.startswith("mixed"):
                raise TypeError(
                    f"{name} mixes id types ({inferred}), e.g. 0 and '0', which "
                    "would be merged or compared ambiguously; use one type for "
                    "all bag ids."
                )
            if (
                inferred == "integer"
                and None not in bags
                and not all(-(2**63) <= int(b) < 2**63 for b in bags)
            ):
                return _object_array([int(b) for b in bags])
            if inferred in ("string", "bytes") and any(
                b[-1:] in ("\x00", b"\x00") for b in bags
            ):  # NumPy's fixed-width strings drop trailing NULs
                return _object_array(bags)
        return np.asarray(bags)
    ids = np.asarray(bags)
    return ids[:, 0] if ids.ndim == 2 and ids.shape[1] == 1 else ids


def bags_form(bags, n_samples=None, name="bags"):
    """``(form, value)``: the one place that decides which form ``bags`` has.

    ``"bags"``, ``"membership"`` (sparse), ``"index_lists"`` or ``"ids"`` (one
    id per row, 1-D). A list of one-element lists is a column of ids when it
    has ``n_samples`` items, else bags of one row; refused if both differ.
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
                f"ids, but has {len(bags)} entries for {n_samples} rows; "
                "give one bag id per row."
            )
    if _is_index_list(bags):
        return "index_lists", bags
    return "ids", _id_array(bags, name)


#: What ``pandas.api.types.infer_dtype`` calls a column of usable ids.
_KEY_DTYPES = set(
    "string bytes integer boolean datetime datetime64 date interval period".split()
)


def _check_ids(ids, name, allow_unbagged):
    """Refuse ids that are missing, of mixed types or not usable as keys."""
    kind = ids.dtype.kind
    if kind == "f":
        if not np.all(np.isfinite(ids)):
            raise ValueError(f"{name} contains NaN or infinite ids.")
        if not np.all(ids == np.round(ids)):
            raise ValueError(f"{name} holds non-integer floats; bag ids are labels.")
    elif kind in "Mm":  # timestamps are keys; NaT is none
        if np.isnat(ids).any():
            raise ValueError(f"{name} contains missing ids (NaT).")
    elif kind == "O":
        lengths = {len(v) if isinstance(v, tuple) else -1 for v in ids}
        tuples = lengths != {-1}
        if tuples and len(lengths) != 1:
            raise TypeError(
                f"{name} mixes composite keys (tuples) of different lengths or "
                "with single ids; give every row a tuple of the same length."
            )
        for column in [list(c) for c in zip(*ids)] if tuples else [ids]:
            column = np.asarray(column, dtype=object)
            missing = np.asarray(pd.isna(column), dtype=bool)
            if missing.any():
                row = int(np.argmax(missing))
                raise ValueError(
                    f"{name} contains missing ids (None/NaN), e.g. row {row}: "
                    f"{ids[row]!r}. A bag id must be a value: fill the missing "
                    "key values (e.g. df[keys].fillna('missing')) or drop those "
                    "rows."
                )
            inferred = pd.api.types.infer_dtype(column)
            if inferred in _KEY_DTYPES:
                continue
            bad = next((v for v in column if not _is_key(v)), None)  # error path
            if bad is not None:
                raise TypeError(
                    f"{name} holds ids of type {type(bad).__name__} ({bad!r}); bag "
                    "ids must be ints, strings, bools, timestamps or intervals, "
                    "or tuples of them (composite keys)."
                )
            raise TypeError(
                f"{name} mixes id types ({inferred}), e.g. 0 and '0', which would "
                "be merged or compared ambiguously; use one type for all bag ids "
                "(and for each part of a composite key)."
            )
    elif kind not in "iubUS":
        raise TypeError(f"{name} must hold bag ids; got dtype {ids.dtype}.")
    if not allow_unbagged and kind in "iufO":
        if np.any(np.asarray(ids == UNBAGGED, dtype=bool)):
            raise ValueError(
                f"{name} holds the id {UNBAGGED}, which marks rows in no bag (the "
                f"bag generators give it to left-over rows); drop those rows, e.g. "
                f"X[{name} >= 0], or number the bags from 0."
            )


def _encode_ids(ids, n_samples, name, allow_unbagged, rows="X"):
    """The bag of every row (-1: in no bag) and the sorted distinct ids."""
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
            f"{name} has {ids.shape[0]} entries but {rows} has {n_samples} rows; "
            "give exactly one bag id per row."
        )
    _check_ids(ids, name, allow_unbagged)
    bagged = np.ones(len(ids), dtype=bool)
    if allow_unbagged and ids.dtype.kind in "iufO":
        bagged = ~np.asarray(ids == UNBAGGED, dtype=bool)
    kept = ids[bagged]
    try:
        if kept.dtype.kind == "O" and kept.size and isinstance(kept[0], tuple):
            inverse, keys = pd.MultiIndex.from_tuples(list(kept)).factorize(sort=True)
            bag_ids = _object_array(list(keys))
        else:  # hashing, then sorting the distinct ids only
            inverse, bag_ids = pd.factorize(kept, sort=True)
            bag_ids = np.asarray(bag_ids)
    except TypeError as exc:
        raise TypeError(
            f"{name} mixes id types that cannot be compared (e.g. ints and "
            "strings); use one type for all bag ids."
        ) from exc
    codes = np.full(len(ids), -1, dtype=np.int64)
    codes[bagged] = np.asarray(inverse).ravel()
    return codes, bag_ids


def membership_matrix(bags, n_samples, name="bags", rows="X"):
    """Overlapping bags (sparse matrix or row-index lists) as a CSC matrix."""
    if sp.issparse(bags):
        if bags.ndim != 2 or bags.shape[0] != n_samples:
            raise ValueError(
                f"{name} (a membership matrix) has {bags.shape[0]} rows but {rows} has "
                f"{n_samples}; it must be (n_samples, n_bags)."
            )
        membership = sp.csc_matrix(sp.csc_matrix(bags) != 0)
    else:
        columns = []
        for j, rows in enumerate(bags):
            rows = np.asarray(rows)
            if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
                raise TypeError(
                    f"{name}[{j}] must be a 1-D array of integer row indices of X."
                )
            columns.append(rows.astype(np.int64))
        rows = np.concatenate(columns) if columns else np.zeros(0, np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= n_samples):
            raise ValueError(
                f"{name} holds row indices outside [0, {n_samples}) for {rows} of "
                f"{n_samples} rows."
            )
        indptr = np.r_[0, np.cumsum([len(c) for c in columns])]
        membership = sp.csc_matrix(
            (np.ones(len(rows), dtype=bool), rows, indptr),
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


def _read_bags(form, value, n_samples, name, allow_unbagged, rows):
    """Bags without values, and the bag of every row for the ids form."""
    if form == "ids":
        n_samples = len(value) if n_samples is None and value.ndim else n_samples
        codes, bag_ids = _encode_ids(value, n_samples, name, allow_unbagged, rows)
        order = np.argsort(codes, kind="stable")
        members = order[codes[order] >= 0]
        counts = np.bincount(codes[codes >= 0], minlength=len(bag_ids))
        indptr = np.r_[0, np.cumsum(counts)]
        return Bags(indptr, members, bag_ids, n_samples), codes
    if n_samples is None:
        if form == "index_lists":
            raise TypeError(
                f"{name} is a list of row-index arrays (one per bag), which does "
                "not say how many rows there are: pass one bag id per row "
                "(1-D) or a sparse membership matrix (or n_samples, where the "
                "function takes it)."
            )
        n_samples = value.shape[0]
    membership = membership_matrix(value, n_samples, name, rows)
    ids = np.arange(membership.shape[1])
    return Bags(membership.indptr, membership.indices, ids, n_samples), None


# --- per-bag values ---
def is_table(values, ids, bag_ids, n_samples, name):
    """Whether ``values`` is a per-bag table keyed by bag id, not by row."""
    if isinstance(values, Mapping):
        return True
    if not isinstance(values, (pd.DataFrame, pd.Series)):
        return False
    if _is_default_index(values.index):
        return False
    if ids is None or len(values) != n_samples:
        return True
    index = values.index
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
    rows = index.get_indexer(pd.Index(bag_ids, tupleize_cols=False))
    missing = rows < 0
    if missing.any():
        shown = bag_ids[missing][:5].tolist()
        raise ValueError(
            f"{name} (a per-bag table) has no row for {int(missing.sum())} bag "
            f"id(s) that occur in bags, e.g. {shown}."
        )
    return rows


def _collapse(matrix, codes, bag_ids, n_samples, task, name, rows):
    """Sample-aligned rows collapsed to one row per bag, which must agree."""
    if matrix.shape[0] != n_samples:
        raise ValueError(
            f"{name} has {matrix.shape[0]} {task.unit} but {rows} has {n_samples} "
            f"rows; pass one {task.unit[:-1]} per row (sample-aligned) or a per-bag "
            "table indexed by bag id (a pandas object with the default 0..n-1 "
            "index is read by row)."
        )
    matrix, codes = matrix[codes >= 0], codes[codes >= 0]
    matrix = task.check(matrix, name)
    per_bag = np.zeros((len(bag_ids), matrix.shape[1]))
    per_bag[codes] = matrix
    excess = np.abs(matrix - per_bag[codes]).max(axis=1, initial=0.0)
    excess = excess - task.bag_tolerance(per_bag[codes])
    if np.any(excess > 0):
        row = int(np.argmax(excess))
        bag = bag_ids[codes[row]]
        bag = bag.item() if hasattr(bag, "item") else bag
        raise ValueError(
            f"{name} differ between rows of the same bag (bag {bag!r}: "
            f"{per_bag[codes[row]].tolist()} and {matrix[row].tolist()}); every "
            f"row of a bag must carry that bag's {task.noun}. If {name} is a "
            "pandas object aligned with X, check that its index is in the order "
            "of X's rows (a sample-aligned object is read by position)."
        )
    return per_bag


def _read_values(values, bags, codes, form, task, classes, name, rows):
    """``bags`` carrying ``values`` read for ``task`` (see :func:`check_bags`)."""
    bag_ids = bags.ids
    ids = None if form != "ids" else _ids_of(bags, codes)
    if is_table(values, ids, bag_ids, bags.n_samples, name):
        matrix, columns = _table_matrix(task, values, bag_ids, name)
    else:
        matrix, columns = task.matrix(values, name)
        if form == "ids":
            matrix = _collapse(matrix, codes, bag_ids, bags.n_samples, task, name, rows)
        elif matrix.shape[0] != len(bag_ids):
            raise ValueError(
                f"{name} must be (n_bags, {task.columns}) = ({len(bag_ids)}, "
                f"{task.columns}) with overlapping bags, one row per bag; got "
                f"shape {matrix.shape}."
            )
        else:
            matrix = task.check(matrix, name)
    return task.attach(bags, matrix, columns, classes, name)


def _table_matrix(task, table, bag_ids, name):
    """The rows of a per-bag ``table`` for ``bag_ids``, checked, and its columns."""
    frame, columns = task.table(table, name)
    matrix = as_float_matrix(frame.to_numpy(), name)
    return task.check(matrix[_table_rows(frame.index, bag_ids, name)], name), columns


def _ids_of(bags, codes):
    """The id of every row (the ids form), for the table-or-rows decision."""
    ids = np.empty(len(codes), dtype=bags.ids.dtype)
    ids[codes >= 0] = bags.ids[codes[codes >= 0]]
    return ids


def _unique_classes(classes):
    classes = np.asarray(classes)
    if len(set(classes.tolist())) < len(classes):
        raise ValueError(f"classes has duplicate labels: {classes.tolist()}.")
    return classes


def match_classes(columns, n_classes, classes, name="props"):
    """``classes_`` and the column order that matches it."""
    if classes is not None:
        classes = _unique_classes(classes)
        if len(classes) != n_classes:
            raise ValueError(
                f"{name} has {n_classes} classes (columns) but {len(classes)} are "
                f"expected ({classes.tolist()}: the classes parameter, or a fitted "
                "model's classes_)."
            )
    if columns is None:
        order = np.arange(n_classes)
        return (order if classes is None else classes), order
    columns = np.asarray(list(columns))
    if len(set(columns.tolist())) < len(columns):
        raise ValueError(
            f"{name} has duplicate class columns: {columns.tolist()}; name "
            "every class once."
        )
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


class _Proportions:
    """Classification: class proportions, one column per class."""

    task, noun, argument, unit = CLASSIFICATION, "proportions", "props", "rows"
    columns = "n_classes"

    def table(self, values, name):
        """A per-bag table as a DataFrame indexed by bag id, and its class names."""
        if isinstance(values, pd.DataFrame):
            named = not _is_default_index(values.columns)
            return values, (values.columns if named else None)
        if isinstance(values, pd.Series):
            fraction = as_float_matrix(values.to_numpy(), name)
            return pd.DataFrame(
                binary_from_fraction(fraction, name), index=values.index
            ), None
        if any(isinstance(v, Mapping) for v in values.values()):
            frame = pd.DataFrame.from_dict(dict(values), orient="index").fillna(0.0)
            return frame, list(frame.columns)
        rows = {k: np.atleast_1d(as_float_matrix(v, name)) for k, v in values.items()}
        shapes = {r.shape for r in rows.values()}
        if len(shapes) != 1 or len(next(iter(shapes))) != 1:  # one 1-D length
            raise ValueError(
                f"{name} dict must map every bag id to a fraction (binary) or to a "
                "1-D vector of proportions of the same length."
            )
        index = pd.Index(list(rows), tupleize_cols=False)
        matrix = np.stack(list(rows.values()))
        if matrix.shape[1] == 1:
            matrix = binary_from_fraction(matrix[:, 0], name)
        return pd.DataFrame(matrix, index=index), None

    def matrix(self, values, name):
        columns = None
        if isinstance(values, pd.DataFrame):
            columns = None if _is_default_index(values.columns) else values.columns
        if isinstance(values, (pd.DataFrame, pd.Series)):
            values = values.to_numpy()
        matrix = as_float_matrix(values, name)
        if matrix.ndim == 1:
            matrix = binary_from_fraction(matrix, name)
        if matrix.ndim != 2:
            raise ValueError(
                f"{name} must be 1-D or 2-D (n_samples, n_classes); got shape "
                f"{matrix.shape}."
            )
        return matrix, columns

    def check(self, matrix, name):
        """Finite, non-negative rows summing to 1 (renormalised)."""
        if not np.all(np.isfinite(matrix)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        if np.any(matrix < -PROPS_NEG_TOL):
            raise ValueError(f"{name} contains negative proportions.")
        matrix = np.maximum(matrix, 0.0)
        sums = matrix.sum(axis=1)
        bad = np.abs(sums - 1.0) > PROPS_SUM_TOL
        if np.any(bad):
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{name} rows must sum to 1 (tolerance {PROPS_SUM_TOL}); "
                f"{int(bad.sum())} rows do not, e.g. row {row} sums to "
                f"{sums[row]:.6g}."
            )
        return matrix / sums[:, None]

    def bag_tolerance(self, bag_values):
        return PROPS_BAG_TOL

    def attach(self, bags, matrix, columns, classes, name):
        if matrix.shape[1] < 2:
            raise ValueError(
                f"{name} has {matrix.shape[1]} class column; at least 2 are needed."
            )
        matched, order = match_classes(columns, matrix.shape[1], classes, name)
        positional = columns is None and classes is None
        return bags.with_values(
            matrix[:, order], CLASSIFICATION, matched, positional=positional
        )


class _Means:
    """Regression: the mean target of every bag, one column."""

    task, noun, argument, unit = REGRESSION, "mean", "targets", "values"
    columns = "1"

    def table(self, values, name):
        if isinstance(values, pd.DataFrame):
            return self._one_column(values, name).to_frame(), None
        if isinstance(values, pd.Series):
            return values.to_frame(), None
        for key, value in values.items():
            if np.ndim(value) != 0:
                raise ValueError(
                    f"{name} dict must map every bag id to one number, its mean; "
                    f"bag {key!r} has {np.ndim(value)}-D value {value!r}."
                )
        index = pd.Index(list(values), tupleize_cols=False)
        return pd.DataFrame({"mean": list(values.values())}, index=index), None

    def _one_column(self, frame, name):
        """The means of a DataFrame: its one column, ``mean``, or ``sum/size``."""
        columns = set(frame.columns) - ({"std"} if "mean" in frame.columns else set())
        if not columns & {"sum", "mean"}:
            if frame.shape[1] != 1:
                raise ValueError(
                    f"{name} is a DataFrame of {frame.shape[1]} columns; give one "
                    "column of bag means, or the columns 'mean' or 'sum' and "
                    "'size' (multi-output regression is not supported)."
                )
            return frame.iloc[:, 0]
        if columns not in ({"mean"}, {"mean", "size"}, {"sum", "size"}):
            raise ValueError(
                f"{name} has columns {sorted(map(str, columns))}; a per-bag "
                "table of targets has the columns 'mean' (and optionally 'size') "
                "or 'sum' and 'size' (each bag's total and its number of rows)."
            )
        if "size" in columns:
            size = f"{name}['size']"
            sizes = self.check(self.matrix(frame["size"], size)[0], size)
            if np.any(sizes <= 0):
                raise ValueError(f"{name}['size'] must be positive for every bag.")
        if "mean" in columns:
            return frame["mean"]
        total = f"{name}['sum']"
        sums = self.check(self.matrix(frame["sum"], total)[0], total)
        return pd.Series(sums[:, 0] / sizes[:, 0], index=frame.index)

    def matrix(self, values, name):
        if isinstance(values, pd.DataFrame):
            values = self._one_column(values, name)
        if isinstance(values, pd.Series):
            values = values.to_numpy()
        matrix = as_float_matrix(values, name)
        if matrix.ndim == 1:
            matrix = matrix[:, None]
        if matrix.ndim != 2 or matrix.shape[1] != 1:
            hint = ""
            if matrix.ndim == 2 and np.allclose(matrix.sum(axis=1), 1.0):
                hint = (
                    " Its rows sum to 1: these look like label proportions; for "
                    "bag means use the generator's make_bag_means(X, y)."
                )
            raise ValueError(
                f"{name} must be 1-D, one mean per row or per bag; got shape "
                f"{matrix.shape} (multi-output regression is not supported).{hint}"
            )
        return matrix, None

    def check(self, matrix, name):
        if not np.all(np.isfinite(matrix)):
            raise ValueError(f"{name} contains NaN or infinite values.")
        return matrix

    def bag_tolerance(self, bag_values):
        return TARGETS_BAG_RTOL * np.maximum(1.0, np.abs(bag_values[:, 0]))

    def attach(self, bags, matrix, columns, classes, name):
        return bags.with_values(matrix, REGRESSION)


_TASKS = {CLASSIFICATION: _Proportions(), REGRESSION: _Means()}


# --- the reader ---
def check_bags(
    bags,
    props=None,
    *,
    targets=None,
    n_samples=None,
    classes=None,
    sample_weight=None,
    task=None,
    require_props=False,
    min_bags=1,
    allow_unbagged=False,
    disjoint=False,
    name="bags",
    rows_of="X",
):
    """Validate bags and their per-bag values into a :class:`Bags`.

    The one reader of every form (:ref:`data_model`): ``bags`` as one id per
    row, a DataFrame of key columns, a sparse membership matrix, row-index
    lists or a :class:`Bags`; ``props`` (rows summing to 1 within
    :data:`PROPS_SUM_TOL`) or ``targets``, sample-aligned or per bag.

    Parameters
    ----------
    bags, props, targets
        As above; ``props`` and ``targets`` are exclusive.
    n_samples : int, default=None
        Rows of the data; default: the length of ``bags``.
    classes : array-like, default=None
        Class labels: named columns are matched to them, unnamed ones read in
        their order.
    sample_weight : array-like of shape (n_samples,), default=None
        Non-negative row weights; a row of weight 0 leaves its bags.
    task, require_props : default=None, False
        Require values of this task (``require_props``: classification).
    min_bags : int, default=1
        Fewest bags accepted, after zero weights.
    allow_unbagged, disjoint : bool, default=False
        Accept the id ``-1`` (:data:`UNBAGGED`) as "in no bag"; refuse bags
        that share a row.
    name, rows_of : str, default="bags", "X"
        The argument's name, and what the rows are counted from, in messages.

    Returns
    -------
    bags : Bags
        Numbered in the order of their sorted ids.

    Examples
    --------
    >>> from sklearn_llp.core import check_bags
    >>> bags = check_bags([0, 0, 1, 1], [0.5, 0.5, 1.0, 1.0])
    >>> bags.props.tolist(), bags.classes.tolist()
    ([[0.5, 0.5], [0.0, 1.0]], [0, 1])
    >>> check_bags(["a", "a", "b"], targets={"a": 2.5, "b": -1.0}).means.tolist()
    [2.5, -1.0]
    """
    if require_props:
        task = CLASSIFICATION
    if props is not None and targets is not None:
        raise TypeError(
            "pass props (class proportions) or targets (bag means), not both."
        )
    values, value_task = (
        (props, CLASSIFICATION) if targets is None else (targets, REGRESSION)
    )
    if task is not None and values is not None and value_task != task:
        raise TypeError(_wrong_task(task, value_task, "the values given"))
    form, value = bags_form(bags, n_samples, name)
    if form == "bags":
        validated = _given_bags(value, values, n_samples, classes, name, rows_of)
    else:
        rows = rows_of if n_samples is not None else name
        validated, codes = _read_bags(
            form, value, n_samples, name, allow_unbagged, rows
        )
        if values is not None:
            reader = _TASKS[value_task]
            validated = _read_values(
                values, validated, codes, form, reader, classes, reader.argument, rows
            )
    if task is not None and validated.task != task:
        if validated.task is None:
            raise TypeError(
                f"{_TASKS[task].argument} is None: pass the "
                f"{'label proportions' if task == CLASSIFICATION else 'mean target'}"
                " of the bags."
            )
        raise ValueError(_wrong_task(task, validated.task, f"{name}"))
    if disjoint and validated.overlapping:
        raise ValueError(
            f"{name} overlap (a row is in several bags); pass disjoint bags: one "
            "bag id per row (-1 for none), or a membership matrix of at most one "
            "nonzero per row."
        )
    release = release_of(values) if isinstance(values, pd.DataFrame) else None
    if release is not None:  # a privacy release: its noise and raw counts
        validated = replace(validated, release=release)
    return _weighted_enough(validated, sample_weight, min_bags, name)


def _wrong_task(wanted, got, what):
    nouns = {CLASSIFICATION: "label proportions", REGRESSION: "bag means"}
    fit = {CLASSIFICATION: "LLPClassifier", REGRESSION: "LLPRegressor"}
    read = "props" if wanted == CLASSIFICATION else "targets=..."
    return (
        f"{what} carries {nouns[got]} ({got} values), but {nouns[wanted]} are "
        f"needed here: fit {nouns[got]} with {fit[got]}, or read the bags with "
        f"check_bags(bags, {read})."
    )


def _given_bags(bags, values, n_samples, classes, name, rows_of):
    """A validated :class:`Bags`, checked against ``X`` and ``classes``."""
    if n_samples is not None and bags.n_samples != n_samples:
        raise ValueError(
            f"{name} covers {bags.n_samples} rows but {rows_of} has {n_samples}."
        )
    if values is not None:
        raise ValueError(
            f"{name} is a validated Bags object, which carries its proportions "
            "or targets; pass props=None and targets=None."
        )
    if classes is None or bags.task != CLASSIFICATION:
        return bags
    reader = _TASKS[CLASSIFICATION]
    if bags.positional_classes:  # unnamed columns: classes label them in order
        return reader.attach(bags, bags.values, None, classes, name)
    classes = _unique_classes(classes)
    if set(classes.tolist()) != set(bags.classes.tolist()):
        raise ValueError(
            f"classes {classes.tolist()} are not the classes of {name} "
            f"{bags.classes.tolist()}: the proportions of a Bags object are "
            "labelled; validate the bags afresh from their ids."
        )
    return reader.attach(bags, bags.values, bags.classes, classes, name)


def _weighted_enough(bags, sample_weight, min_bags, name):
    """``bags`` with ``sample_weight``, refused below ``min_bags`` bags."""
    n_given = bags.n_bags
    bags = bags.with_weights(sample_weight)
    if bags.n_bags < min_bags:
        dropped = ""
        if bags.n_bags < n_given:
            dropped = (
                f" ({n_given - bags.n_bags} dropped: all their rows have "
                "sample_weight 0)"
            )
        why = "."
        if min_bags > 1:
            noun = "mean says" if bags.task == REGRESSION else "proportions say"
            why = f": the {noun} of a single bag nothing about which instance is which."
        raise ValueError(
            f"{name} holds {bags.n_bags} bag(s){dropped}; LLP needs at least "
            f"{min_bags}{why}"
        )
    return bags


def values_argument(task):
    """``"props"`` or ``"targets"``: the argument that carries ``task``'s values."""
    return _TASKS[task].argument


def attach_table(bags, table, task, classes=None, name="props_table"):
    """``bags`` (without values) carrying their rows of a per-bag ``table``."""
    matrix, columns = _table_matrix(_TASKS[task], table, bags.ids, name)
    bags = _TASKS[task].attach(bags, matrix, columns, classes, name)
    release = release_of(table) if isinstance(table, pd.DataFrame) else None
    return bags if release is None else replace(bags, release=release)


# --- the inputs of fit ---
def check_fit_inputs(
    y,
    values=None,
    *,
    task=CLASSIFICATION,
    n_samples,
    sample_weight=None,
    classes=None,
    min_bags=2,
):
    """What ``fit(X, y, values)`` receives: bags and values, or instance targets.

    With ``values`` (or ``y`` a :class:`Bags`), ``y`` holds the bags; without,
    every row is its own bag with its label or target.

    Returns
    -------
    bags : Bags
    on_labels : bool
        Whether ``y`` held instance labels or targets.

    Examples
    --------
    >>> from sklearn_llp.core import check_fit_inputs
    >>> bags, on_labels = check_fit_inputs(["a", "b", "b"], n_samples=3)
    >>> on_labels, bags.classes.tolist(), bags.props.tolist()
    (True, ['a', 'b'], [[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    """
    key = values_argument(task)
    if y is None and values is None:
        raise ValueError(
            "This estimator requires y to be passed, but the target y is None: "
            f"pass bag ids as y with {key}, or instance "
            f"{'labels' if task == CLASSIFICATION else 'targets'} as y."
        )
    if values is not None or isinstance(y, Bags):
        bags = check_bags(
            y,
            **{key: values},
            n_samples=n_samples,
            classes=classes,
            sample_weight=sample_weight,
            task=task,
            min_bags=min_bags,
        )
        return bags, False
    if task == CLASSIFICATION:
        return _label_bags(y, n_samples, classes, sample_weight), True
    return _target_bags(y, n_samples, sample_weight), True


def _singletons(n_samples, values, task, classes, sample_weight):
    rows = np.arange(n_samples)
    bags = Bags(np.arange(n_samples + 1), rows, rows, n_samples)
    return bags.with_values(values, task, classes).with_weights(sample_weight)


def _label_bags(y, n_samples, classes, sample_weight):
    """Labels: every row its own bag, with a one-hot proportion."""
    labels = column_or_1d(y, warn=True)
    check_classification_targets(labels)
    if labels.shape[0] != n_samples:
        raise ValueError(
            "y must hold one class label per row of X when props is None; got "
            f"{labels.shape[0]} labels for {n_samples} rows."
        )
    present, codes = np.unique(labels, return_inverse=True)
    codes = codes.ravel()
    if classes is not None:
        classes = _unique_classes(classes)
        position = {c: i for i, c in enumerate(classes.tolist())}
        unknown = [c for c in present.tolist() if c not in position]
        if unknown:
            raise ValueError(
                f"y holds labels that are not in classes {classes.tolist()}, e.g. "
                f"{unknown[:5]}."
            )
        codes = np.array([position[c] for c in present.tolist()])[codes]
        present = classes
    if len(present) < 2:
        raise ValueError(
            f"y holds a single class ({present.tolist()}): one class is not "
            "enough, at least 2 are needed (or pass them all as classes)."
        )
    eye = np.eye(len(present))[codes]
    bags = _singletons(n_samples, eye, CLASSIFICATION, present, sample_weight)
    if bags.weights is None:
        return bags
    if np.count_nonzero(bags.props.sum(axis=0)) < 2:
        raise ValueError(
            "sample_weight leaves rows of a single class with a positive "
            "weight; at least 2 classes are needed."
        )
    return replace(bags, bag_weights=bags.weights[bags.ids])


def _target_bags(y, n_samples, sample_weight):
    """Instance targets: every row its own bag, whose mean is its target."""
    if isinstance(y, pd.DataFrame) or (isinstance(y, np.ndarray) and y.ndim == 2):
        y = column_or_1d(y, warn=True)
    reader = _TASKS[REGRESSION]
    values = reader.check(reader.matrix(y, "y")[0], "y")
    if values.shape[0] != n_samples:
        raise ValueError(
            "y must hold one target per row of X when targets is None; got "
            f"{values.shape[0]} values for {n_samples} rows."
        )
    bags = _singletons(n_samples, values, REGRESSION, None, sample_weight)
    if bags.n_bags < 2:
        raise ValueError("y: at least 2 rows of positive sample_weight are needed.")
    return bags
