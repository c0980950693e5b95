"""Validation of the bag data model: bag ids and label proportions.

Every public entry point that takes ``bags`` and ``props`` goes through
:func:`check_bag_data`, so a malformed input gets the same clear error
wherever it is passed.
"""

from collections.abc import Mapping

import numpy as np
import pandas as pd
import scipy.sparse as sp

#: Rows of ``props`` may sum to 1 within this absolute tolerance (rounded
#: published percentages); they are then renormalised exactly.
PROPS_SUM_TOL = 1e-2

#: Rows of sample-aligned ``props`` that belong to one bag must agree within
#: this absolute tolerance.
PROPS_BAG_TOL = 1e-6


def check_bags(bags, n_samples):
    """Encode one bag id per sample as integer codes.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every sample: integers or strings.
    n_samples : int
        Number of rows of ``X``.

    Returns
    -------
    codes : ndarray of shape (n_samples,), dtype int64
        Index of every sample's bag in ``bag_ids``.
    bag_ids : ndarray of shape (n_bags,)
        The sorted distinct bag ids.
    """
    if bags is None:
        raise TypeError(
            "bags is None: pass one bag id per row of X (the second argument of "
            "fit), or pass class labels as y with props=None for supervised data."
        )
    if not isinstance(bags, np.ndarray):
        kind = pd.api.types.infer_dtype(bags, skipna=True)
        if kind.startswith("mixed"):
            raise TypeError(
                f"bags mixes id types ({kind}), e.g. 0 and '0', which would be "
                "merged or compared ambiguously; use one type for all bag ids."
            )
    bags = np.asarray(bags)
    if bags.ndim != 1:
        raise ValueError(
            f"bags must be 1-D with one bag id per row of X; got shape {bags.shape}."
        )
    if bags.shape[0] != n_samples:
        raise ValueError(
            f"bags has {bags.shape[0]} entries but X has {n_samples} rows; "
            "give exactly one bag id per row."
        )
    if bags.dtype.kind == "f":
        if not np.all(np.isfinite(bags)):
            raise ValueError("bags contains NaN or infinite ids.")
        if not np.all(bags == np.round(bags)):
            raise ValueError("bags holds non-integer floats; bag ids are labels.")
    elif bags.dtype.kind == "O" and pd.isna(bags).any():
        raise ValueError("bags contains missing ids (None/NaN).")
    try:
        bag_ids, codes = np.unique(bags, return_inverse=True)
    except TypeError as exc:
        raise TypeError(
            "bags mixes id types that cannot be compared (e.g. ints and "
            "strings); use one type for all bag ids."
        ) from exc
    return codes.astype(np.int64).ravel(), bag_ids


def _as_float_matrix(values, name):
    try:
        values = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must hold numbers; {exc}") from exc
    return values


def _check_prop_values(values, name):
    """Finite, non-negative, rows summing to 1 (renormalised)."""
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    if np.any(values < 0):
        raise ValueError(f"{name} contains negative proportions.")
    sums = values.sum(axis=1)
    bad = np.abs(sums - 1.0) > PROPS_SUM_TOL
    if np.any(bad):
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} rows must sum to 1 (tolerance {PROPS_SUM_TOL}); "
            f"{int(bad.sum())} rows do not, e.g. row {row} sums to {sums[row]:.6g}."
        )
    return values / sums[:, None]


def _binary_from_fraction(fraction):
    """A 1-D fraction of the positive class becomes two columns."""
    return np.column_stack([1.0 - fraction, fraction])


def _resolve_classes(n_classes, columns, classes):
    """Pick ``classes_`` and the column order that matches it."""
    if classes is not None and len(set(np.asarray(classes).tolist())) < len(classes):
        raise ValueError(f"classes has duplicate labels: {list(classes)}.")
    if columns is not None:
        columns = np.asarray(columns)
        if classes is None:
            return columns, np.arange(n_classes)
        classes = np.asarray(classes)
        if len(classes) != len(columns) or set(classes.tolist()) != set(
            columns.tolist()
        ):
            raise ValueError(
                f"props columns {columns.tolist()} do not match "
                f"classes {classes.tolist()}."
            )
        position = {c: i for i, c in enumerate(columns.tolist())}
        return classes, np.array([position[c] for c in classes.tolist()])
    if classes is None:
        return np.arange(n_classes), np.arange(n_classes)
    classes = np.asarray(classes)
    if len(classes) != n_classes:
        raise ValueError(
            f"props has {n_classes} classes (columns) but classes has "
            f"{len(classes)} entries."
        )
    return classes, np.arange(n_classes)


def _table_to_frame(props):
    """A per-bag table (DataFrame, Series or dict) as a DataFrame."""
    if isinstance(props, pd.DataFrame):
        return props
    if isinstance(props, pd.Series):
        return pd.DataFrame(
            _binary_from_fraction(props.to_numpy(dtype=np.float64)),
            index=props.index,
        )
    if any(isinstance(val, Mapping) for val in props.values()):
        # {bag_id: {class: proportion}}: the inner keys are the classes
        return pd.DataFrame.from_dict(dict(props), orient="index").fillna(0.0)
    rows = {
        key: np.atleast_1d(np.asarray(val, dtype=np.float64))
        for key, val in props.items()
    }
    widths = {row.shape for row in rows.values()}
    if len(widths) != 1 or len(next(iter(widths))) != 1:
        raise ValueError(
            "props dict must map every bag id to a fraction (binary) or to a "
            "1-D vector of proportions of the same length."
        )
    frame = pd.DataFrame.from_dict(rows, orient="index")
    if frame.shape[1] == 1:
        frame = pd.DataFrame(
            _binary_from_fraction(frame[0].to_numpy()), index=frame.index
        )
    return frame


def _has_class_names(props):
    """A DataFrame's columns or a dict of dicts' inner keys name the classes."""
    if isinstance(props, pd.DataFrame):
        return True
    return isinstance(props, Mapping) and any(
        isinstance(val, Mapping) for val in props.values()
    )


def _is_per_bag_table(props, bags, bag_ids, n_samples):
    """Mappings are per-bag tables; pandas objects are read by their length."""
    if isinstance(props, Mapping):
        return True
    if not isinstance(props, (pd.DataFrame, pd.Series)):
        return False
    if len(props) != n_samples:
        return True
    # One row per sample. Read it as a per-bag table too only where both
    # readings agree (the index is the bag id of every row).
    if len(bag_ids) == n_samples and pd.Index(bag_ids).isin(props.index).all():
        if not np.array_equal(props.index.to_numpy(), bags):
            raise ValueError(
                "props has one row per sample and is indexed by bag ids in "
                "another order, so it reads both as sample-aligned and as a "
                "per-bag table; pass props.to_numpy() (sample-aligned) or a "
                "dict {bag_id: proportions}."
            )
    return False


def check_bag_data(bags, props, n_samples, classes=None, min_bags=2):
    """Validate bags and proportions and collapse them to one row per bag.

    Parameters
    ----------
    bags : array-like of shape (n_samples,)
        Bag id of every sample.
    props : array-like or DataFrame or Series or dict
        Label proportions, in one of these forms:

        - sample-aligned array of shape ``(n_samples, n_classes)``, each row
          its bag's proportions (the canonical form);
        - for two classes, a 1-D array of shape ``(n_samples,)`` with the
          fraction of the positive class;
        - a per-bag table: a DataFrame indexed by bag id with one column per
          class, a Series of positive-class fractions indexed by bag id, or a
          dict ``{bag_id: proportions or fraction}``.

        A DataFrame or Series with one row per sample is sample-aligned
        (its index is ignored); any other length is a per-bag table.
    n_samples : int
        Number of rows of ``X``.
    classes : array-like of shape (n_classes,), default=None
        Class labels, in column order. Defaults to the table's columns, else
        ``0..n_classes-1``.
    min_bags : int, default=2
        Fewest bags accepted: training needs 2, scoring one held-out bag is
        well defined.

    Returns
    -------
    codes : ndarray of shape (n_samples,)
        Index of every sample's bag.
    bag_ids : ndarray of shape (n_bags,)
        Distinct bag ids.
    bag_props : ndarray of shape (n_bags, n_classes)
        Proportions of every bag, rows summing to exactly 1.
    classes : ndarray of shape (n_classes,)
        Class labels in column order.
    """
    codes, bag_ids = check_bags(bags, n_samples)
    if props is None:
        raise TypeError("props is None: pass the label proportions of the bags.")
    if len(bag_ids) < min_bags:
        raise ValueError(
            "bags holds a single bag: its proportions say nothing about which "
            "instance is which; LLP needs at least 2 bags."
        )

    if _is_per_bag_table(props, np.asarray(bags), bag_ids, n_samples):
        frame = _table_to_frame(props)
        missing = ~pd.Index(bag_ids).isin(frame.index)
        if missing.any():
            shown = bag_ids[missing][:5].tolist()
            raise ValueError(
                f"props (a per-bag table) has no row for {int(missing.sum())} bag "
                f"id(s) that occur in bags, e.g. {shown}."
            )
        if frame.index.has_duplicates:
            raise ValueError("props (a per-bag table) repeats a bag id in its index.")
        columns = frame.columns if _has_class_names(props) else None
        values = _as_float_matrix(frame.loc[bag_ids].to_numpy(), "props")
        bag_props = _check_prop_values(values, "props")
    else:
        columns = props.columns if isinstance(props, pd.DataFrame) else None
        values = _as_float_matrix(props, "props")
        if values.ndim == 1:
            values = _binary_from_fraction(values)
        if values.ndim != 2:
            raise ValueError(
                "props must be 1-D or 2-D (n_samples, n_classes); "
                f"got shape {values.shape}."
            )
        if values.shape[0] != n_samples:
            raise ValueError(
                f"props has {values.shape[0]} rows but X has {n_samples}; pass one "
                "row per sample (sample-aligned) or a per-bag table indexed by bag id."
            )
        values = _check_prop_values(values, "props")
        bag_props = np.zeros((len(bag_ids), values.shape[1]))
        bag_props[codes] = values
        spread = np.abs(values - bag_props[codes]).max(axis=1)
        if np.any(spread > PROPS_BAG_TOL):
            bag = bag_ids[codes[np.argmax(spread)]]
            raise ValueError(
                f"props differ between rows of the same bag (bag {bag!r}); "
                "every row of a bag must carry that bag's proportions."
            )
    if bag_props.shape[1] < 2:
        raise ValueError(
            f"props has {bag_props.shape[1]} class column; at least 2 are needed."
        )
    classes, order = _resolve_classes(bag_props.shape[1], columns, classes)
    return codes, bag_ids, bag_props[:, order], classes


def check_membership(bags, n_samples, name="bags"):
    """Overlapping bags as a validated CSC ``(n_samples, n_bags)`` matrix.

    Parameters
    ----------
    bags : sparse matrix of shape (n_samples, n_bags) or list of arrays
        Nonzero entries mark membership; or one array of row indices per bag.
    n_samples : int
        Number of rows of ``X``.
    name : str, default="bags"
        The argument's name in error messages.

    Returns
    -------
    membership : csc_matrix of shape (n_samples, n_bags)
        Column ``j`` holds the sorted, distinct rows of bag ``j``.
    """
    if sp.issparse(bags):
        if bags.ndim != 2 or bags.shape[0] != n_samples:
            raise ValueError(
                f"{name} (a membership matrix) has {bags.shape[0]} rows but X has "
                f"{n_samples}; it must be (n_samples, n_bags)."
            )
        membership = sp.csc_matrix(sp.csc_matrix(bags) != 0)
    else:
        columns = []
        for j, rows in enumerate(bags):  # the input is a list: one array per bag
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
        indptr = np.concatenate([[0], np.cumsum(sizes)])
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
            f"{int(np.flatnonzero(sizes == 0)[0])}; every bag needs a member."
        )
    return membership


def check_bag_membership(bags, props, n_samples, classes=None, min_bags=2):
    """Validate bags that may overlap, as instance lists per bag.

    Parameters
    ----------
    bags : array-like of shape (n_samples,), sparse matrix or list of arrays
        One bag id per sample (disjoint bags, any form of ``props`` that
        :func:`check_bag_data` accepts), or bag membership that may overlap:
        a sparse ``(n_samples, n_bags)`` matrix whose nonzero entries mark
        membership, or a list of ``n_bags`` arrays of row indices. Then
        ``props`` is per bag: an ``(n_bags, n_classes)`` array in column
        (list) order, or a DataFrame / dict keyed by ``0..n_bags-1``.
    props : array-like, DataFrame, Series or dict
    n_samples : int
    classes : array-like, default=None
    min_bags : int, default=2

    Returns
    -------
    indptr : ndarray of shape (n_bags + 1,)
        Bag ``j`` holds rows ``members[indptr[j]:indptr[j + 1]]``.
    members : ndarray of shape (n_pairs,)
        Row indices of the members of every bag, bag after bag.
    bag_ids : ndarray of shape (n_bags,)
    bag_props : ndarray of shape (n_bags, n_classes)
    classes : ndarray of shape (n_classes,)
    """
    if bags is None or not (sp.issparse(bags) or _is_index_list(bags)):
        codes, bag_ids, bag_props, classes = check_bag_data(
            bags, props, n_samples, classes=classes, min_bags=min_bags
        )
        members = np.argsort(codes, kind="stable")
        indptr = np.concatenate([[0], np.cumsum(np.bincount(codes))])
        return indptr, members, bag_ids, bag_props, classes

    membership = check_membership(bags, n_samples)
    n_bags = membership.shape[1]
    if n_bags < min_bags:
        raise ValueError(
            f"bags holds {n_bags} bag(s); LLP needs at least {min_bags} bags."
        )
    # One pseudo-sample per bag lets check_bag_data validate the table.
    bag_ids = np.arange(n_bags)
    if isinstance(props, (Mapping, pd.DataFrame, pd.Series)):
        _, _, bag_props, classes = check_bag_data(
            bag_ids, props, n_bags, classes=classes, min_bags=min_bags
        )
    else:
        values = _as_float_matrix(props, "props")
        if values.ndim != 2 or values.shape[0] != n_bags:
            raise ValueError(
                f"props must be (n_bags, n_classes) = ({n_bags}, n_classes) with "
                f"overlapping bags, one row per bag; got shape {values.shape}."
            )
        _, _, bag_props, classes = check_bag_data(
            bag_ids, values, n_bags, classes=classes, min_bags=min_bags
        )
    return (
        membership.indptr.astype(np.int64),
        membership.indices.astype(np.int64),
        bag_ids,
        bag_props,
        classes,
    )


def _is_index_list(bags):
    """A list/tuple of arrays (bag membership), not a flat list of ids."""
    return (
        isinstance(bags, (list, tuple))
        and len(bags) > 0
        and any(np.ndim(b) >= 1 for b in bags)
    )
